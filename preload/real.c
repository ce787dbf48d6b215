/* The table of real functions and everything that finds them: libc's own
 * dlsym, libcuda's handle, the functions behind the wrappers and the driver
 * functions the tracer calls itself. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>

#include "common/log.h"
#include "preload/real.h"

/* Names only: the wrappers' addresses are the hooks' (gmt_real's argument). */
struct gmt_hook gmt_hooks[GMT_HOOK_COUNT] = {
#define GMT_ROW_DRIVER_(name, base, params)  [GMT_HOOK_##name] = {#name, #base, NULL, NULL, 0},
#define GMT_ROW_RUNTIME_(name, base, params) [GMT_HOOK_##name] = {#name, #base, NULL, NULL, 1},
    GMT_DRIVER_HOOKS(GMT_ROW_DRIVER_) GMT_DRIVER_HOOKS_LEGACY(GMT_ROW_DRIVER_)
	GMT_RUNTIME_HOOKS(GMT_ROW_RUNTIME_)};

static const char *const used_names[GMT_USED_COUNT] = {
#define GMT_USED_NAME_(name, base, params) [GMT_USED_##name] = #name,
    GMT_DRIVER_USED(GMT_USED_NAME_)
#undef GMT_USED_NAME_
};
void *gmt_used_fn[GMT_USED_COUNT];

/* libcuda's handle, learnt from the program's own dlsym and entry-point
 * lookups: the runtime opens it RTLD_LOCAL, out of RTLD_NEXT's reach. The
 * anchor is an address in the handle's own object (its dynamic section),
 * to tell whether the handle outlived it. */
static void *driver_handle, *driver_anchor;

/* ---- libc's dlvsym, found without any dlsym --------------------------- */

/* Our exported dlsym and dlvsym shadow libc's for every caller, this
 * library included. So we read libc's dynamic symbol table ourselves, find
 * its dlvsym, and ask that for the real dlsym by version. */
struct elf_find {
	const char *soname; /* basename of the object to search; NULL: any but ours */
	const char *symbol;
	void *found;
};

/* 1 if the object holds this library's own code. */
static int is_self(const struct dl_phdr_info *info)
{
	uintptr_t me = (uintptr_t)&gmt_real_resolve;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

/* Our own loops, not libc's: under ASan this runs inside ASan's start-up
 * (its dlsym reaches ours), when its strcmp interceptors have no target yet. */
static int str_eq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static int basename_is(const char *path, const char *want)
{
	const char *base = path;
	for (const char *p = path; *p; p++)
		if (*p == '/')
			base = p + 1;
	return str_eq(base, want);
}

static int elf_find_in(struct dl_phdr_info *info, size_t size, void *data)
{
	struct elf_find *f = data;
	if (f->soname ? !info->dlpi_name || !basename_is(info->dlpi_name, f->soname)
		      : is_self(info))
		return 0;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	int stop = f->soname != NULL; /* a named object is the only one searched */
	if (!dyn)
		return stop;
	uintptr_t base = info->dlpi_addr, symtab = 0, strtab = 0, gnuhash = 0, sysvhash = 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		/* Most ports relocate these in memory; some leave them as offsets. */
		uintptr_t v = dyn->d_un.d_ptr < base ? base + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			symtab = v;
			break;
		case DT_STRTAB:
			strtab = v;
			break;
		case DT_GNU_HASH:
			gnuhash = v;
			break;
		case DT_HASH:
			sysvhash = v;
			break;
		}
	}
	if (!symtab || !strtab)
		return stop;
	const ElfW(Sym) *syms = (const void *)symtab;
	const char *strs = (const char *)strtab;
#define GMT_SYM_MATCHES_(i)                                                                        \
	(syms[i].st_shndx != SHN_UNDEF && ELF64_ST_TYPE(syms[i].st_info) == STT_FUNC &&            \
	 str_eq(strs + syms[i].st_name, f->symbol))
	if (gnuhash) {
		const uint32_t *h = (const void *)gnuhash;
		uint32_t nbuckets = h[0], symoffset = h[1], bloom_words = h[2];
		const uint32_t *buckets = (const void *)((const ElfW(Addr) *)(h + 4) + bloom_words);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t hash = gnu_hash(f->symbol);
		uint32_t i = nbuckets ? buckets[hash % nbuckets] : 0;
		if (nbuckets && i >= symoffset) {
			for (;; i++) {
				uint32_t h2 = chain[i - symoffset];
				if ((h2 | 1) == (hash | 1) && GMT_SYM_MATCHES_(i)) {
					f->found = (void *)(base + syms[i].st_value);
					break;
				}
				if (h2 & 1)
					break;
			}
		}
	} else if (sysvhash) {
		uint32_t nchain = ((const uint32_t *)sysvhash)[1];
		for (uint32_t i = 0; i < nchain && !f->found; i++)
			if (GMT_SYM_MATCHES_(i))
				f->found = (void *)(base + syms[i].st_value);
	}
#undef GMT_SYM_MATCHES_
	return stop || f->found;
}

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);
static dlsym_fn real_dlsym_ptr;
static dlvsym_fn real_dlvsym_ptr;

static void resolve_dl(void)
{
	struct elf_find f = {"libc.so.6", "dlvsym", NULL};
	dl_iterate_phdr(elf_find_in, &f);
	if (!f.found) { /* glibc before 2.34 keeps it in libdl */
		f.soname = "libdl.so.2";
		dl_iterate_phdr(elf_find_in, &f);
	}
	dlvsym_fn libc_dlvsym = (dlvsym_fn)f.found;
	if (!libc_dlvsym) {
		gmt_log("cannot find libc's dlvsym; dlsym lookups are not traced");
		return;
	}
	/* RTLD_NEXT as seen from this library: the definitions after ours. */
	dlsym_fn ds = (dlsym_fn)libc_dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!ds)
		ds = (dlsym_fn)libc_dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	dlvsym_fn dvs = (dlvsym_fn)libc_dlvsym(RTLD_NEXT, "dlvsym", "GLIBC_2.34");
	if (!dvs)
		dvs = (dlvsym_fn)libc_dlvsym(RTLD_NEXT, "dlvsym", "GLIBC_2.2.5");
	/* Pair with the acquire loads in gmt_real_dlsym and gmt_real_dlvsym.
	 * Racing first callers compute and store the same values. */
	__atomic_store_n(&real_dlvsym_ptr, dvs ? dvs : libc_dlvsym, __ATOMIC_RELEASE);
	__atomic_store_n(&real_dlsym_ptr, ds, __ATOMIC_RELEASE);
}

dlsym_fn gmt_real_dlsym(void)
{
	dlsym_fn p = __atomic_load_n(&real_dlsym_ptr, __ATOMIC_ACQUIRE);
	if (!p) {
		resolve_dl();
		p = __atomic_load_n(&real_dlsym_ptr, __ATOMIC_ACQUIRE);
	}
	return p;
}

dlvsym_fn gmt_real_dlvsym(void)
{
	dlvsym_fn p = __atomic_load_n(&real_dlvsym_ptr, __ATOMIC_ACQUIRE);
	if (!p) {
		resolve_dl();
		p = __atomic_load_n(&real_dlvsym_ptr, __ATOMIC_ACQUIRE);
	}
	return p;
}

void *gmt_libc_next(const char *name)
{
	dlsym_fn ds = gmt_real_dlsym();
	return ds ? ds(RTLD_NEXT, name) : NULL;
}

void *gmt_libc_find(const char *name)
{
	struct elf_find f = {"libc.so.6", name, NULL};
	dl_iterate_phdr(elf_find_in, &f);
	return f.found;
}

void *gmt_libc_dlsym(void *handle, const char *name)
{
	dlsym_fn ds = gmt_real_dlsym();
	return ds ? ds(handle, name) : NULL;
}

void *gmt_libc_dlopen(const char *file, int mode)
{
	void *(*real_open)(const char *, int) =
	    (void *(*)(const char *, int))gmt_libc_next("dlopen");
	return real_open ? real_open(file, mode) : NULL;
}

int gmt_libc_dlclose(void *handle)
{
	int (*real_close)(void *) = (int (*)(void *))gmt_libc_next("dlclose");
	return real_close ? real_close(handle) : -1;
}

/* ---- real functions behind the wrappers -------------------------------- */

void gmt_note_driver_handle(void *handle)
{
	if (!handle || handle == RTLD_NEXT || handle == RTLD_DEFAULT)
		return;
	if (__atomic_load_n(&driver_handle, __ATOMIC_ACQUIRE))
		return;
	/* The program has just looked a function up in it: a live handle. */
	struct link_map *lm = NULL;
	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm)
		dlerror();
	void *expected = NULL;
	/* First handle wins. Pairs with the acquire load in get_driver_handle. */
	if (__atomic_compare_exchange_n(&driver_handle, &expected, handle, 0, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		__atomic_store_n(&driver_anchor, lm ? (void *)lm->l_ld : NULL, __ATOMIC_RELEASE);
}

/* ---- objects unloaded: what pointed into them is dropped --------------- */

static int read_unload_count(struct dl_phdr_info *info, size_t size, void *count)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
		*(unsigned long long *)count = info->dlpi_subs;
	return 1;
}

unsigned long long gmt_loader_unloads(void)
{
	unsigned long long subs = 0;
	dl_iterate_phdr(read_unload_count, &subs);
	return subs;
}

/* Clears *slot if what it points to is in no loaded object. Only a pointer
 * into an object unloaded since it was cached goes: the wrapper's next call
 * looks its function up again. A value set meanwhile by a lookup stays. */
static void forget_if_unloaded(void **slot)
{
	Dl_info info;
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (p && !dladdr(p, &info))
		__atomic_compare_exchange_n(slot, &p, NULL, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

void gmt_forget_unloaded(void)
{
	int saved_errno = errno;
	for (int i = 0; i < GMT_HOOK_COUNT; i++) {
		forget_if_unloaded(&gmt_hooks[i].real);
		forget_if_unloaded(&gmt_hooks[i].driver_addr);
	}
	for (int i = 0; i < GMT_USED_COUNT; i++)
		forget_if_unloaded(&gmt_used_fn[i]);
	/* A handle is a link map: still loaded if the object at its anchor is
	 * it. A stale handle must never reach dlsym. */
	void *h = __atomic_load_n(&driver_handle, __ATOMIC_ACQUIRE);
	void *anchor = __atomic_load_n(&driver_anchor, __ATOMIC_ACQUIRE);
	Dl_info info;
	struct link_map *lm = NULL;
	if (h &&
	    !(anchor && dladdr1(anchor, &info, (void **)&lm, RTLD_DL_LINKMAP) && (void *)lm == h))
		__atomic_compare_exchange_n(&driver_handle, &h, NULL, 0, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
	errno = saved_errno;
}

/* The loader's count of objects loaded so far, plus 1 (0: unknown). */
static int read_load_count(struct dl_phdr_info *info, size_t size, void *count)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
		*(unsigned long long *)count = info->dlpi_adds + 1;
	return 1;
}

/* The load count when libcuda was last looked for and not found (0: never
 * missed). dlopen(RTLD_NOLOAD) still searches the library path, opening each
 * candidate (~85 us): with no driver loaded, every event looked again. */
static unsigned long long driver_missed_at;

static void *get_driver_handle(void)
{
	void *h = __atomic_load_n(&driver_handle, __ATOMIC_ACQUIRE);
	if (h)
		return h;
	unsigned long long loads = 0;
	dl_iterate_phdr(read_load_count, &loads);
	if (loads && __atomic_load_n(&driver_missed_at, __ATOMIC_RELAXED) == loads)
		return NULL; /* nothing loaded since the last miss */
	/* Linked, or opened by someone: never loads it ourselves. */
	h = gmt_libc_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (h)
		gmt_note_driver_handle(h);
	else
		/* Counted before the search: a load during it makes the next
		 * call search again. */
		__atomic_store_n(&driver_missed_at, loads, __ATOMIC_RELAXED);
	return h;
}

void gmt_set_real(enum gmt_hook_id id, void *fn)
{
	void *expected = NULL;
	/* Pairs with the acquire load in gmt_real. */
	__atomic_compare_exchange_n(&gmt_hooks[id].real, &expected, fn, 0, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
}

void *gmt_real_resolve(enum gmt_hook_id id, void *wrapper)
{
	int saved_errno = errno;
	struct gmt_hook *h = &gmt_hooks[id];
	void *fn = gmt_libc_next(h->name);
	if (!fn && !h->is_runtime) {
		void *dh = get_driver_handle();
		dlsym_fn ds = gmt_real_dlsym();
		if (dh && ds)
			fn = ds(dh, h->name);
	}
	if (!fn) {
		/* Loaded RTLD_LOCAL, as every Python extension's libcudart is: out
		 * of RTLD_NEXT's reach, yet its users bind to our export. Find the
		 * definition in the loaded objects themselves. */
		struct elf_find f = {NULL, h->name, NULL};
		dl_iterate_phdr(elf_find_in, &f);
		fn = f.found;
	}
	if (fn && fn != wrapper)
		gmt_set_real(id, fn);
	else
		dlerror(); /* our failed lookup must not show in the program's dlerror() */
	errno = saved_errno;
	return __atomic_load_n(&h->real, __ATOMIC_ACQUIRE);
}

void *gmt_used_resolve(enum gmt_used_id id)
{
	int saved_errno = errno;
	void *p = NULL;
	void *dh = get_driver_handle();
	dlsym_fn ds = gmt_real_dlsym();
	if (dh && ds && (p = ds(dh, used_names[id])))
		__atomic_store_n(&gmt_used_fn[id], p, __ATOMIC_RELEASE); /* pairs with gmt_used */
	else
		dlerror();
	errno = saved_errno;
	return p;
}
