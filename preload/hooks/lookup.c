/* The routes by which programs find driver functions at run time: dlsym,
 * dlvsym, cuGetProcAddress and cudaGetDriverEntryPoint. Each calls the real
 * lookup, then swaps in our wrapper for exactly the variant it returned. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "common/log.h"
#include "preload/hooks/forward.h"

/* ---- which wrapper a lookup hands out -------------------------------------- */

/* Our wrappers by hook id. The core's table has the names and the real
 * functions; the wrappers' addresses are only ever needed here. */
static void *const wrappers[GMT_HOOK_COUNT] = {
#define GMT_WRAPPER_(name, base, params) [GMT_HOOK_##name] = (void *)&name,
    GMT_DRIVER_HOOKS(GMT_WRAPPER_) GMT_DRIVER_HOOKS_LEGACY(GMT_WRAPPER_)
	GMT_RUNTIME_HOOKS(GMT_WRAPPER_)
#undef GMT_WRAPPER_
};

static int find_hook(const char *name)
{
	for (int i = 0; i < GMT_HOOK_COUNT; i++)
		if (!strcmp(gmt_hooks[i].name, name))
			return i;
	return -1;
}

static void *wrap_dlsym(const char *name, void *handle, void *addr)
{
	int id;
	if (!addr || (id = find_hook(name)) < 0)
		return addr;
	struct gmt_hook *h = &gmt_hooks[id];
	if (addr == wrappers[id]) {
		/* Found our own export in the global scope. Without us the lookup
		 * finds the next definition, or nothing: so must it with us, and
		 * a genuine failed lookup of the name leaves dlerror() its error. */
		if (gmt_real((enum gmt_hook_id)id, wrappers[id]))
			return addr;
		gmt_libc_next(name);
		return NULL;
	}
	gmt_set_real((enum gmt_hook_id)id, addr);
	if (!h->is_runtime)
		gmt_note_driver_handle(handle);
	/* Wrap only the function our wrapper forwards to; another library's
	 * function of the same name passes through untouched. */
	return __atomic_load_n(&h->real, __ATOMIC_ACQUIRE) == addr ? wrappers[id] : addr;
}

/* The cache of module_handle_of. Held only to read or update the cache,
 * never across dlopen (which takes the loader lock: a constructor running
 * inside dlopen may look up entry points), and held across fork. The handle
 * is our own RTLD_NOLOAD reference, never closed: its module (and so each
 * driver_addr looked up in it) cannot be unloaded under the cache. */
static pthread_mutex_t lookup_lock = PTHREAD_MUTEX_INITIALIZER;
static void *cached_base, *cached_handle;

static void lookup_fork_prepare(void)
{
	pthread_mutex_lock(&lookup_lock);
}

static void lookup_fork_release(void)
{
	pthread_mutex_unlock(&lookup_lock);
}

__attribute__((constructor)) static void lookup_fork_safety(void)
{
	pthread_atfork(lookup_fork_prepare, lookup_fork_release, lookup_fork_release);
}

/* The handle of the module that contains `addr`. Entry-point lookups are
 * few (hundreds at start-up), so a lock here costs nothing. */
static void *module_handle_of(void *addr)
{
	Dl_info info;
	if (!dladdr(addr, &info) || !info.dli_fname)
		return NULL;
	pthread_mutex_lock(&lookup_lock);
	void *mh = info.dli_fbase == cached_base ? cached_handle : NULL;
	pthread_mutex_unlock(&lookup_lock);
	if (mh)
		return mh;
	mh = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!mh)
		return NULL;
	gmt_note_driver_handle(mh);
	pthread_mutex_lock(&lookup_lock);
	cached_base = info.dli_fbase;
	cached_handle = mh;
	pthread_mutex_unlock(&lookup_lock);
	return mh;
}

/* A lookup of a name we wrap gave an address that is none of the exported
 * variants: its calls would go untraced, so the trace must say so. The
 * legacy ABIs (cuMemAlloc below 3020) are the one expected case. */
static void note_unmatched(const char *base, void *addr, void *mh)
{
	void *(*ds)(void *, const char *) = gmt_real_dlsym();
	if (mh && ds && ds(mh, base) == addr)
		return; /* the unversioned legacy export: deliberately not wrapped */
	dlerror();
	char text[200];
	gmt_format(text, sizeof text,
		   "a lookup of %s returned %p, none of the variants gpumemtrace wraps; calls "
		   "through it are not traced",
		   base, addr);
	gmt_note(1, text);
}

static void *wrap_entry_point(const char *base, void *addr)
{
	if (!addr || !base)
		return addr;
	int saved_errno = errno;
	void *result = addr;
	void *mh = NULL;
	int candidates = 0, matched = 0;
	for (int i = 0; i < GMT_HOOK_COUNT; i++) {
		struct gmt_hook *h = &gmt_hooks[i];
		if (h->is_runtime || strcmp(h->base, base))
			continue;
		candidates++;
		if (addr == wrappers[i]) {
			matched = 1;
			break; /* already ours */
		}
		void *da = __atomic_load_n(&h->driver_addr, __ATOMIC_ACQUIRE);
		if (!da) {
			void *(*ds)(void *, const char *) = gmt_real_dlsym();
			if (!mh)
				mh = module_handle_of(addr);
			if (!mh || !ds)
				break;
			da = ds(mh, h->name);
			if (!da) {
				dlerror();
				continue;
			}
			/* Pairs with the acquire load above, on another lookup. */
			__atomic_store_n(&h->driver_addr, da, __ATOMIC_RELEASE);
		}
		if (da == addr) {
			/* The driver handed out exactly this export: wrap that variant. */
			gmt_set_real((enum gmt_hook_id)i, addr);
			if (__atomic_load_n(&h->real, __ATOMIC_ACQUIRE) == addr)
				result = wrappers[i];
			matched = 1;
			break;
		}
	}
	if (candidates && !matched)
		note_unmatched(base, addr, mh ? mh : module_handle_of(addr));
	errno = saved_errno;
	return result;
}

/* ---- the lookups ---------------------------------------------------------- */

/* cu[A-Z]... and cuda[A-Z]...: not cudnn*, cublas*, curl_*. */
static int is_cuda_name(const char *s)
{
	if (!s || s[0] != 'c' || s[1] != 'u')
		return 0;
	if (s[2] >= 'A' && s[2] <= 'Z')
		return 1;
	return s[2] == 'd' && s[3] == 'a' && s[4] >= 'A' && s[4] <= 'Z';
}

/* The program itself, if `ret` is in it: the head of the default namespace. */
static struct link_map *main_program_at(const void *ret)
{
	Dl_info info;
	struct link_map *m = NULL;
	if (!dladdr1(ret, &info, (void **)&m, RTLD_DL_LINKMAP) || !m || m->l_prev || m->l_name[0])
		return NULL;
	return m;
}

/* dlsym(RTLD_NEXT, name) from the program, for a name we export. We are
 * the next definition only because we are preloaded: without us the lookup
 * finds an earlier preload's own definition, else the next one after us,
 * else nothing. A program that defines cudaMalloc itself and looks for the
 * real one must get NULL when no runtime is loaded, not our wrapper. */
static void *next_from_program(struct link_map *prog, int id, const char *symbol)
{
	void *(*real)(void *, const char *) = gmt_real_dlsym();
	int saved_errno = errno;
	Dl_info info;
	struct link_map *us = NULL, *at = NULL;
	void *found = NULL;
	if (dladdr1((void *)&next_from_program, &info, (void **)&us, RTLD_DL_LINKMAP) && us) {
		for (struct link_map *m = prog->l_next; m && m != us && !found; m = m->l_next) {
			void *h = gmt_libc_dlopen(m->l_name, RTLD_LAZY | RTLD_NOLOAD);
			if (!h)
				continue;
			void *a = real(h, symbol);
			if (a && dladdr1(a, &info, (void **)&at, RTLD_DL_LINKMAP) && at == m)
				found = a;
			dlclose(h);
		}
		dlerror();
	}
	if (!found)
		/* Found after us, the program gets our wrapper, as it did. */
		found = gmt_libc_next(symbol) ? wrappers[id] : NULL;
	errno = saved_errno;
	return found;
}

GMT_EXPORT void *dlsym(void *handle, const char *symbol)
{
	void *(*real)(void *, const char *) = gmt_real_dlsym();
	if (!real)
		return NULL;
	/* RTLD_NEXT is relative to the caller, which libc finds from its return
	 * address: this must stay a tail call so that address is the caller's. */
	if (handle == RTLD_NEXT) {
		struct link_map *prog;
		int id;
		if (is_cuda_name(symbol) && (id = find_hook(symbol)) >= 0 &&
		    (prog = main_program_at(__builtin_return_address(0))))
			return next_from_program(prog, id, symbol);
		return real(handle, symbol);
	}
	if (!is_cuda_name(symbol) || !gmt_tracing())
		return real(handle, symbol);
	void *found = real(handle, symbol);
	if (found)
		return wrap_dlsym(symbol, handle, found);
	/* A miss: looked up again as the caller (a tail call), so that
	 * dlerror() names the caller's object, not ours, and a default lookup
	 * searches the caller's scope (an RTLD_LOCAL library's own
	 * dependencies), as untraced. */
	return real(handle, symbol);
}

GMT_EXPORT void *dlvsym(void *handle, const char *symbol, const char *version)
{
	void *(*real)(void *, const char *, const char *) = gmt_real_dlvsym();
	if (!real)
		return NULL;
	if (handle == RTLD_NEXT || !is_cuda_name(symbol))
		return real(handle, symbol, version);
	return gmt_tracing() ? wrap_dlsym(symbol, handle, real(handle, symbol, version))
			     : real(handle, symbol, version);
}

/* cuGetProcAddress is asked for base names ("cuMemAlloc" at 3020 ->
 * cuMemAlloc_v2): the address it returns says which variant it chose. The
 * runtime looks up "cuGetProcAddress" itself this way, gets our wrapper of
 * the right arity back, and so routes its ~440 later lookups through us. */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	pfn_cuGetProcAddress_v2 real = GMT_REAL(cuGetProcAddress_v2);
	if (!real)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
	if (r == CUDA_SUCCESS && pfn && gmt_tracing())
		*pfn = wrap_entry_point(symbol, *pfn);
	return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	pfn_cuGetProcAddress real = GMT_REAL(cuGetProcAddress);
	if (!real)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = real(symbol, pfn, cudaVersion, flags);
	if (r == CUDA_SUCCESS && pfn && gmt_tracing())
		*pfn = wrap_entry_point(symbol, *pfn);
	return r;
}

/* How PyTorch's expandable segments and NCCL reach cuMemCreate/cuMemMap. */
#define ENTRY_POINT(name)                                                                          \
	cudaError_t name(const char *symbol, void **funcPtr, unsigned long long flags,             \
			 enum cudaDriverEntryPointQueryResult *driverStatus)                       \
	{                                                                                          \
		pfn_##name real = GMT_REAL(name);                                                  \
		if (!real)                                                                         \
			return GMT_RUNTIME_MISSING;                                                \
		cudaError_t r = real(symbol, funcPtr, flags, driverStatus);                        \
		if (r == cudaSuccess && funcPtr && gmt_tracing())                                  \
			*funcPtr = wrap_entry_point(symbol, *funcPtr);                             \
		return r;                                                                          \
	}
ENTRY_POINT(cudaGetDriverEntryPoint)
ENTRY_POINT(cudaGetDriverEntryPoint_ptsz)

#define ENTRY_POINT_BY_VERSION(name)                                                               \
	cudaError_t name(const char *symbol, void **funcPtr, unsigned int cudaVersion,             \
			 unsigned long long flags,                                                 \
			 enum cudaDriverEntryPointQueryResult *driverStatus)                       \
	{                                                                                          \
		pfn_##name real = GMT_REAL(name);                                                  \
		if (!real)                                                                         \
			return GMT_RUNTIME_MISSING;                                                \
		cudaError_t r = real(symbol, funcPtr, cudaVersion, flags, driverStatus);           \
		if (r == cudaSuccess && funcPtr && gmt_tracing())                                  \
			*funcPtr = wrap_entry_point(symbol, *funcPtr);                             \
		return r;                                                                          \
	}
ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion)
ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion_ptsz)
