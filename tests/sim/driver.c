/* Simulated libcuda.so.1: a CUDA driver as an interposer sees one.
 *
 * It keeps the bookkeeping of a real driver (devices with a capacity,
 * contexts, allocations, VMM handles, pools, arrays, IPC) but never touches
 * a GPU: device addresses come from a PROT_NONE reservation per device, so
 * they are unique in the process and fault if dereferenced, while pinned
 * host and managed memory are real anonymous mappings the program can use.
 *
 * Environment: SIMCUDA_DEVICES (default 1, 0..16), SIMCUDA_CAPACITY bytes
 * per device (default 16G; K, M, G, T suffixes, binary), SIMCUDA_CTX_BYTES
 * what a context costs (default 300M): charged when a primary context is
 * first retained or a context created, given back at the last release, the
 * reset or the destroy. Only the simulated NVML sees it (simcuda_usage): the
 * capacity allocations draw on is the whole SIMCUDA_CAPACITY, so a program
 * runs out of memory at the same point with or without contexts. Other
 * processes' memory (SIMCUDA_NVML_OTHER_BYTES, which the simulated NVML
 * lists under a pid of their own) is not free: cuMemGetInfo and the
 * allocations see the capacity less those bytes.
 * Modules (cuModuleLoadData of an image "SIMMODULE <bytes>") cost their
 * bytes the same way, NVML only: at the first cuLaunchKernel of one of their
 * functions, or at the load under CUDA_MODULE_LOADING=EAGER (lazy loading,
 * the default since CUDA 12.2).
 * SIMCUDA_BOOKS=0 turns the books off for cuMemAlloc_v2 and cuMemFree_v2
 * (below: for the throughput bench only).
 *
 * Linked with -Bsymbolic: the tracer preloaded in front of us exports the
 * same names, and the addresses cuGetProcAddress hands out (taken of our own
 * functions below) must be ours, exactly what dlsym on our handle returns.
 *
 * One mutex guards everything; exported functions take it, helpers whose
 * names end in _locked expect it held. driver.h says which file holds
 * what. */
#include "driver.h"

/* ---- address arenas: first-fit over a sorted list of free extents ---- */

static int arena_init(struct arena *a, size_t len, int low32)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	void *hint = NULL;
	if (low32) {
#if defined(__x86_64__) && defined(MAP_32BIT)
		flags |= MAP_32BIT;
#else
		hint = (void *)(uintptr_t)0x40000000u;
#endif
	}
	/* Over-reserve by a granule so the usable range starts 2 MiB aligned. */
	void *p = mmap(hint, len + GRANULE, PROT_NONE, flags, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	uintptr_t base = round_up((uintptr_t)p, GRANULE);
	if (low32 && base + len > 0xffffffffu) {
		munmap(p, len + GRANULE);
		return -1;
	}
	a->base = base;
	a->len = len;
	a->cap = 16;
	a->free = malloc(a->cap * sizeof *a->free);
	if (!a->free)
		return -1;
	a->free[0] = (struct extent){base, len};
	a->nfree = 1;
	return 0;
}

static int arena_insert_at(struct arena *a, size_t i, struct extent e)
{
	if (a->nfree == a->cap) {
		struct extent *n = realloc(a->free, 2 * a->cap * sizeof *n);
		if (!n)
			return -1;
		a->free = n;
		a->cap *= 2;
	}
	memmove(&a->free[i + 1], &a->free[i], (a->nfree - i) * sizeof *a->free);
	a->free[i] = e;
	a->nfree++;
	return 0;
}

static void arena_remove_at(struct arena *a, size_t i)
{
	memmove(&a->free[i], &a->free[i + 1], (a->nfree - i - 1) * sizeof *a->free);
	a->nfree--;
}

/* Returns an address aligned to `align` with len bytes free, or 0. */
uintptr_t arena_take(struct arena *a, size_t len, size_t align)
{
	for (size_t i = 0; i < a->nfree; i++) {
		struct extent e = a->free[i];
		uintptr_t p = round_up(e.start, align);
		if (p < e.start || p - e.start > e.len || e.len - (p - e.start) < len)
			continue;
		uintptr_t end = e.start + e.len;
		arena_remove_at(a, i);
		size_t at = i;
		if (p > e.start && arena_insert_at(a, at++, (struct extent){e.start, p - e.start}))
			return 0;
		if (p + len < end &&
		    arena_insert_at(a, at, (struct extent){p + len, end - p - len}))
			return 0;
		return p;
	}
	return 0;
}

/* Gives a range back, merging it with free neighbours. */
void arena_give(struct arena *a, uintptr_t start, size_t len)
{
	size_t i = 0;
	while (i < a->nfree && a->free[i].start < start)
		i++;
	if (arena_insert_at(a, i, (struct extent){start, len}))
		return; /* out of host memory: leak the range, stay consistent */
	if (i + 1 < a->nfree && a->free[i].start + a->free[i].len == a->free[i + 1].start) {
		a->free[i].len += a->free[i + 1].len;
		arena_remove_at(a, i + 1);
	}
	if (i > 0 && a->free[i - 1].start + a->free[i - 1].len == a->free[i].start) {
		a->free[i - 1].len += a->free[i].len;
		arena_remove_at(a, i);
	}
}

/* ---- objects the driver tracks, in hash tables keyed by address/handle ---- */

static size_t slot_of(const struct table *t, uint64_t key)
{
	return (size_t)((key >> 9 ^ key) * 0x9e3779b97f4a7c15ull >> 20) & (t->n - 1);
}

static void tab_grow(struct table *t)
{
	size_t n = t->n ? t->n * 2 : 1024;
	struct obj **b = calloc(n, sizeof *b);
	if (!b)
		return;
	struct table nt = {b, n, t->count};
	for (size_t i = 0; i < t->n; i++)
		for (struct obj *o = t->b[i], *next; o; o = next) {
			next = o->next;
			size_t s = slot_of(&nt, o->key);
			o->next = b[s];
			b[s] = o;
		}
	free(t->b);
	*t = nt;
}

void tab_put(struct table *t, struct obj *o)
{
	if (t->count >= t->n)
		tab_grow(t);
	size_t s = slot_of(t, o->key);
	o->next = t->b[s];
	t->b[s] = o;
	t->count++;
}

struct obj *tab_get(const struct table *t, uint64_t key)
{
	if (!t->n)
		return NULL;
	for (struct obj *o = t->b[slot_of(t, key)]; o; o = o->next)
		if (o->key == key)
			return o;
	return NULL;
}

void tab_del(struct table *t, struct obj *victim)
{
	for (struct obj **p = &t->b[slot_of(t, victim->key)]; *p; p = &(*p)->next)
		if (*p == victim) {
			*p = victim->next;
			t->count--;
			return;
		}
}

/* Calls fn on every object until it returns nonzero; returns that object. */
struct obj *tab_find(const struct table *t, int (*fn)(const struct obj *, const void *),
		     const void *arg)
{
	for (size_t i = 0; i < t->n; i++)
		for (struct obj *o = t->b[i]; o; o = o->next)
			if (fn(o, arg))
				return o;
	return NULL;
}

struct obj *obj_new(uint64_t key, enum obj_kind kind, int dev, size_t size)
{
	struct obj *o = calloc(1, sizeof *o);
	if (o) {
		o->key = key;
		o->kind = kind;
		o->dev = dev;
		o->size = size;
	}
	return o;
}

/* ---- global state ---- */

/* Adaptive (spins a little before sleeping): with a plain mutex, 8 threads
 * on 2 CPUs spent 0.4-0.7 s of 0.6-0.9 s in futex calls for 4M calls
 * (tests/progs/threads 8 250000), so the throughput bench timed the sim's
 * lock, not the tracer. */
pthread_mutex_t lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
int initialized; /* read without the lock: __atomic */
static int ndevs;
struct device devs[MAX_DEVICES];
struct arena legacy;
int legacy_ok;
struct table t_mem, t_reg, t_pool, t_array, t_phys, t_handle, t_reserve, t_map, t_ipc;
uint64_t next_handle = 0x5100;
uint64_t next_phys = 1;
__thread CUcontext tl_ctx; /* the calling thread's current context */

/* SIMCUDA_DEINIT_AT_EXIT=1: like the real runtime's teardown, an exit
 * handler registered at cuInit (so it runs before the tracer's own) leaves
 * every later call failing with CUDA_ERROR_DEINITIALIZED. */
int deinitialized;
static void deinit_at_exit(void)
{
	__atomic_store_n(&deinitialized, 1, __ATOMIC_RELEASE);
}

static size_t env_size(const char *name, size_t dflt)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return dflt;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return dflt;
	switch (*end) {
	case 'k':
	case 'K':
		v *= KiB;
		end++;
		break;
	case 'm':
	case 'M':
		v *= MiB;
		end++;
		break;
	case 'g':
	case 'G':
		v *= GiB;
		end++;
		break;
	case 't':
	case 'T':
		v *= 1024 * GiB;
		end++;
		break;
	default:
		break;
	}
	return *end && strcmp(end, "iB") && strcmp(end, "B") ? dflt : (size_t)v;
}

/* SIMCUDA_BOOKS=0: cuMemAlloc_v2 and cuMemFree_v2 keep no books, take no
 * lock and share no cache line between threads. Each thread carves 512-byte
 * aligned addresses from its own slice of one reservation (never reused, no
 * capacity charged), and cuMemFree_v2 of any address in it succeeds, twice
 * too. No other call knows these addresses. With the books, 8 threads on 2
 * CPUs spend most of their time passing this driver's lock between the
 * CPUs: the throughput bench uses this mode to measure the tracer instead
 * (docs/performance.md). A setting it cannot honour aborts, so that no
 * bench row is measured with the books under the mode's name. */
#define NOBOOKS_SLICE  (16 * GiB)
#define NOBOOKS_SLICES 256
static struct {
	uintptr_t base; /* 0: the books are kept */
	unsigned next_slice;
} nobooks;
static __thread uintptr_t nobooks_next, nobooks_end;

static void nobooks_init(void)
{
	const char *v = getenv("SIMCUDA_BOOKS");
	if (!v || !*v || !strcmp(v, "1"))
		return;
	if (strcmp(v, "0")) {
		fprintf(stderr, "simcuda: SIMCUDA_BOOKS=%s: 0 or 1\n", v);
		abort();
	}
	void *p = mmap(NULL, NOBOOKS_SLICES * NOBOOKS_SLICE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		perror("simcuda: SIMCUDA_BOOKS=0: reserving the address space");
		abort();
	}
	nobooks.base = (uintptr_t)p;
}

int nobooks_on(void)
{
	return nobooks.base != 0;
}

int nobooks_owns(uint64_t p)
{
	return nobooks.base && p - nobooks.base < (uint64_t)NOBOOKS_SLICES * NOBOOKS_SLICE;
}

CUresult nobooks_alloc(CUdeviceptr *dptr, size_t size)
{
	if (!dptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	size_t len = round_up(size, SMALL_ALIGN);
	if (len < size || len > NOBOOKS_SLICE)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (nobooks_end - nobooks_next < len) {
		unsigned slice = __atomic_fetch_add(&nobooks.next_slice, 1, __ATOMIC_RELAXED);
		if (slice >= NOBOOKS_SLICES)
			return CUDA_ERROR_OUT_OF_MEMORY;
		nobooks_next = nobooks.base + slice * NOBOOKS_SLICE;
		nobooks_end = nobooks_next + NOBOOKS_SLICE;
	}
	*dptr = nobooks_next;
	nobooks_next += len;
	return CUDA_SUCCESS;
}

/* ---- initialisation and devices ---- */
CUresult cuInit(unsigned int Flags)
{
	if (Flags)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	if (!initialized) {
		const char *deinit = getenv("SIMCUDA_DEINIT_AT_EXIT");
		if (deinit && strcmp(deinit, "1") == 0)
			atexit(deinit_at_exit);
		size_t n = env_size("SIMCUDA_DEVICES", 1);
		size_t cap = env_size("SIMCUDA_CAPACITY", 16 * GiB);
		if (n > MAX_DEVICES)
			n = MAX_DEVICES;
		if (n == 0) {
			r = CUDA_ERROR_NO_DEVICE;
			goto out;
		}
		for (size_t d = 0; d < n; d++) {
			struct device *dv = &devs[d];
			dv->capacity = cap;
			dv->others = env_size("SIMCUDA_NVML_OTHER_BYTES", 0);
			if (dv->others > cap)
				dv->others = cap;
			/* Twice the capacity of address space leaves room for
			 * alignment holes, so capacity, not addresses, runs out. */
			if (arena_init(&dv->arena, 2 * round_up(cap, GRANULE) + 64 * MiB, 0)) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
				goto out;
			}
			dv->primary = (struct CUctx_st){CTX_MAGIC, (int)d, 1};
			dv->default_pool =
			    (struct CUmemPoolHandle_st){.dev = (int)d, .is_default = 1};
		}
		legacy_ok = arena_init(&legacy, LEGACY_ARENA, 1) == 0;
		nobooks_init();
		for (size_t d = 0; d < n; d++) {
			struct obj *o =
			    obj_new((uintptr_t)&devs[d].default_pool, OBJ_POOL, (int)d, 0);
			if (o)
				tab_put(&t_pool, o);
		}
		ndevs = (int)n;
		__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	}
out:
	UNLOCK();
	return r;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = SIM_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	NEED_INIT();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = ndevs;
	return CUDA_SUCCESS;
}

int valid_dev(CUdevice dev)
{
	return dev >= 0 && dev < ndevs;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	NEED_INIT();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(ordinal))
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	NEED_INIT();
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "Simulated GPU %d", dev);
	return CUDA_SUCCESS;
}

/* SIMCUDA_UUID_FAILS=N: the first N calls fail as if the driver were still
 * initializing (the tracer's DEVICE record must not settle for zeros). */
static int uuid_fails_left(void)
{
	static int left = -1;
	if (__atomic_load_n(&left, __ATOMIC_ACQUIRE) < 0) {
		const char *v = getenv("SIMCUDA_UUID_FAILS");
		__atomic_store_n(&left, v ? atoi(v) : 0, __ATOMIC_RELEASE);
	}
	int n = __atomic_load_n(&left, __ATOMIC_ACQUIRE);
	while (n > 0 && !__atomic_compare_exchange_n(&left, &n, n - 1, 0, __ATOMIC_ACQ_REL,
						     __ATOMIC_ACQUIRE))
		;
	return n > 0;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	NEED_INIT();
	if (uuid_fails_left())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	sim_uuid_bytes(dev, uuid->bytes);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid_v2(uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	NEED_INIT();
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = devs[dev].capacity;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	NEED_INIT();
	if (!pi || (int)attrib <= 0 || (int)attrib > 200)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		*pi = 9;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		*pi = 0;
		break;
	default:
		*pi = 0;
		break; /* every other attribute reads as 0 */
	}
	return CUDA_SUCCESS;
}

/* ---- contexts ---- */
static int valid_ctx(CUcontext c)
{
	return c && c->magic == CTX_MAGIC;
}

static size_t ctx_cost(void)
{
	return env_size("SIMCUDA_CTX_BYTES", 300 * MiB);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	NEED_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	if (devs[dev].primary_refs++ == 0)
		devs[dev].ctx_bytes += ctx_cost();
	UNLOCK();
	*pctx = &devs[dev].primary;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	NEED_INIT();
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	CUresult r = CUDA_SUCCESS;
	LOCK();
	if (devs[dev].primary_refs > 0) {
		if (--devs[dev].primary_refs == 0)
			devs[dev].ctx_bytes -= ctx_cost();
	} else {
		r = CUDA_ERROR_INVALID_CONTEXT;
	}
	UNLOCK();
	return r;
}

/* Destroys the primary context at once, whatever its count. */
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	NEED_INIT();
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	LOCK();
	if (devs[dev].primary_refs > 0)
		devs[dev].ctx_bytes -= ctx_cost();
	devs[dev].primary_refs = 0;
	UNLOCK();
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	NEED_INIT();
	if (ctx && !valid_ctx(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	tl_ctx = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	NEED_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = tl_ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	NEED_CTX();
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = tl_ctx->dev;
	return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	NEED_INIT();
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	struct CUctx_st *c = malloc(sizeof *c);
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*c = (struct CUctx_st){CTX_MAGIC, dev, 0};
	LOCK();
	devs[dev].ctx_bytes += ctx_cost();
	UNLOCK();
	tl_ctx = c; /* a new context becomes current, like the real driver */
	*pctx = c;
	return CUDA_SUCCESS;
}

/* CUDA 11.4's form: execution affinity is not simulated. */
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
			unsigned int flags, CUdevice dev)
{
	return cuCtxCreate_v2(pctx, flags, dev);
}

/* CUDA 12.5's form (cuda.h 13's cuCtxCreate). */
CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
			CUdevice dev)
{
	return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	NEED_INIT();
	if (!valid_ctx(ctx) || ctx->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (tl_ctx == ctx)
		tl_ctx = NULL;
	LOCK();
	devs[ctx->dev].ctx_bytes -= ctx_cost();
	UNLOCK();
	ctx->magic = 0;
	free(ctx);
	return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	NEED_CTX();
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct device *dv = &devs[tl_ctx->dev];
	*free_bytes = avail_locked(dv);
	*total = dv->capacity;
	UNLOCK();
	return CUDA_SUCCESS;
}

/* ---- errors ---- */
CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	static const struct {
		CUresult code;
		const char *text;
	} names[] = {
	    {CUDA_SUCCESS, "no error"},
	    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
	    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
	    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
	    {CUDA_ERROR_DEINITIALIZED, "driver shutting down"},
	    {CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"},
	    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
	    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
	    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
	    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
	    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
	    {SIM_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
	     "part or all of the requested memory range is already mapped"},
	    {SIM_ERROR_HOST_MEMORY_NOT_REGISTERED,
	     "pointer does not correspond to a registered memory region"},
	    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
	    {CUDA_ERROR_UNKNOWN, "unknown error"},
	};
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].code == error) {
			*pStr = names[i].text;
			return CUDA_SUCCESS;
		}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- cuGetProcAddress ----
 * The one table of what a (base name, CUDA version, per-thread flag) query
 * answers. A base name may have several rows: the row with the highest
 * `since` not above the asked version wins, and among equals the _ptsz row
 * when the caller asked for per-thread default-stream semantics (flags 2).
 * Addresses are of our own functions (-Bsymbolic), never the tracer's. */
struct proc_entry {
	const char *base;
	int since; /* first CUDA version (1000 * major + 10 * minor) with this row */
	int ptsz;  /* 1: the per-thread default-stream variant */
	const char *name;
	void *fn;
};

#define ROW(base, since, ptsz, fn)                                                                 \
	{                                                                                          \
#base, since, ptsz, #fn, (void *)&fn                                               \
	}
static const struct proc_entry proc_table[] = {
    ROW(cuInit, 2000, 0, cuInit),
    ROW(cuDriverGetVersion, 2020, 0, cuDriverGetVersion),
    ROW(cuDeviceGet, 2000, 0, cuDeviceGet),
    ROW(cuDeviceGetCount, 2000, 0, cuDeviceGetCount),
    ROW(cuDeviceGetName, 2000, 0, cuDeviceGetName),
    ROW(cuDeviceGetUuid, 9020, 0, cuDeviceGetUuid),
    ROW(cuDeviceGetUuid, 11040, 0, cuDeviceGetUuid_v2),
    /* The 32-bit cuDeviceTotalMem of CUDA 2.0 is not simulated. */
    ROW(cuDeviceTotalMem, 3020, 0, cuDeviceTotalMem_v2),
    ROW(cuDeviceGetAttribute, 2000, 0, cuDeviceGetAttribute),
    ROW(cuDevicePrimaryCtxRetain, 7000, 0, cuDevicePrimaryCtxRetain),
    ROW(cuDevicePrimaryCtxRelease, 11000, 0, cuDevicePrimaryCtxRelease_v2),
    ROW(cuDevicePrimaryCtxReset, 11000, 0, cuDevicePrimaryCtxReset_v2),
    ROW(cuCtxCreate, 3020, 0, cuCtxCreate_v2),
    ROW(cuCtxCreate, 11040, 0, cuCtxCreate_v3),
    ROW(cuCtxCreate, 12050, 0, cuCtxCreate_v4),
    ROW(cuCtxDestroy, 4000, 0, cuCtxDestroy_v2),
    ROW(cuCtxSetCurrent, 4000, 0, cuCtxSetCurrent),
    ROW(cuCtxGetCurrent, 4000, 0, cuCtxGetCurrent),
    ROW(cuCtxGetDevice, 2000, 0, cuCtxGetDevice),
    ROW(cuMemGetInfo, 3020, 0, cuMemGetInfo_v2),
    /* Below 3.2 these names meant the 32-bit ABI, still exported today. */
    ROW(cuMemAlloc, 2000, 0, cuMemAlloc),
    ROW(cuMemAlloc, 3020, 0, cuMemAlloc_v2),
    ROW(cuMemAllocPitch, 2000, 0, cuMemAllocPitch),
    ROW(cuMemAllocPitch, 3020, 0, cuMemAllocPitch_v2),
    ROW(cuMemFree, 2000, 0, cuMemFree),
    ROW(cuMemFree, 3020, 0, cuMemFree_v2),
    ROW(cuMemAllocHost, 2000, 0, cuMemAllocHost),
    ROW(cuMemAllocHost, 3020, 0, cuMemAllocHost_v2),
    ROW(cuMemHostAlloc, 2020, 0, cuMemHostAlloc),
    ROW(cuMemFreeHost, 2000, 0, cuMemFreeHost),
    ROW(cuMemHostRegister, 4000, 0, cuMemHostRegister),
    ROW(cuMemHostRegister, 6050, 0, cuMemHostRegister_v2),
    ROW(cuMemHostUnregister, 4000, 0, cuMemHostUnregister),
    ROW(cuMemAllocManaged, 6000, 0, cuMemAllocManaged),
    ROW(cuMemAllocAsync, 11020, 0, cuMemAllocAsync),
    ROW(cuMemAllocAsync, 11020, 1, cuMemAllocAsync_ptsz),
    ROW(cuMemAllocFromPoolAsync, 11020, 0, cuMemAllocFromPoolAsync),
    ROW(cuMemAllocFromPoolAsync, 11020, 1, cuMemAllocFromPoolAsync_ptsz),
    ROW(cuMemFreeAsync, 11020, 0, cuMemFreeAsync),
    ROW(cuMemFreeAsync, 11020, 1, cuMemFreeAsync_ptsz),
    ROW(cuMemPoolCreate, 11020, 0, cuMemPoolCreate),
    ROW(cuMemPoolDestroy, 11020, 0, cuMemPoolDestroy),
    ROW(cuMemPoolTrimTo, 11020, 0, cuMemPoolTrimTo),
    ROW(cuDeviceGetDefaultMemPool, 11020, 0, cuDeviceGetDefaultMemPool),
    ROW(cuMemPoolSetAttribute, 11020, 0, cuMemPoolSetAttribute),
    ROW(cuMemPoolGetAttribute, 11020, 0, cuMemPoolGetAttribute),
    ROW(cuModuleLoadData, 2000, 0, cuModuleLoadData),
    ROW(cuModuleUnload, 2000, 0, cuModuleUnload),
    ROW(cuModuleGetFunction, 2000, 0, cuModuleGetFunction),
    ROW(cuLaunchKernel, 4000, 0, cuLaunchKernel),
    ROW(cuMemGetAllocationGranularity, 10020, 0, cuMemGetAllocationGranularity),
    ROW(cuMemCreate, 10020, 0, cuMemCreate),
    ROW(cuMemRelease, 10020, 0, cuMemRelease),
    ROW(cuMemMap, 10020, 0, cuMemMap),
    ROW(cuMemUnmap, 10020, 0, cuMemUnmap),
    ROW(cuMemAddressReserve, 10020, 0, cuMemAddressReserve),
    ROW(cuMemAddressFree, 10020, 0, cuMemAddressFree),
    ROW(cuMemSetAccess, 10020, 0, cuMemSetAccess),
    ROW(cuMemRetainAllocationHandle, 11000, 0, cuMemRetainAllocationHandle),
    ROW(cuMemExportToShareableHandle, 10020, 0, cuMemExportToShareableHandle),
    ROW(cuMemImportFromShareableHandle, 10020, 0, cuMemImportFromShareableHandle),
    ROW(cuArrayCreate, 3020, 0, cuArrayCreate_v2),
    ROW(cuArray3DCreate, 3020, 0, cuArray3DCreate_v2),
    ROW(cuArrayDestroy, 2000, 0, cuArrayDestroy),
    ROW(cuIpcGetMemHandle, 4010, 0, cuIpcGetMemHandle),
    /* Only _v2 is simulated; it is what every version gets here. */
    ROW(cuIpcOpenMemHandle, 4010, 0, cuIpcOpenMemHandle_v2),
    ROW(cuIpcCloseMemHandle, 4010, 0, cuIpcCloseMemHandle),
    ROW(cuGetErrorString, 6000, 0, cuGetErrorString),
    ROW(cuGetProcAddress, 11030, 0, cuGetProcAddress),
    ROW(cuGetProcAddress, 12000, 0, cuGetProcAddress_v2),
};
#undef ROW

/* Not exported: a copy of cuMemFree_v2 only cuGetProcAddress hands out. */
CUresult hidden_cuMemFree(CUdeviceptr dptr);
__attribute__((visibility("hidden"))) CUresult hidden_cuMemFree(CUdeviceptr dptr)
{
	return cuMemFree_v2(dptr);
}

static CUresult proc_lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			    CUdriverProcAddressQueryResult *symbolStatus)
{
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	const cuuint64_t stream_flags =
	    CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	if ((flags & ~stream_flags) || flags == stream_flags)
		return CUDA_ERROR_INVALID_VALUE;
	int want_ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	const struct proc_entry *best = NULL;
	int known = 0;
	for (size_t i = 0; i < sizeof proc_table / sizeof proc_table[0]; i++) {
		const struct proc_entry *e = &proc_table[i];
		if (strcmp(e->base, symbol))
			continue;
		known = 1;
		if (e->since > cudaVersion || (e->ptsz && !want_ptsz))
			continue;
		if (!best || e->since > best->since || (e->since == best->since && e->ptsz))
			best = e;
	}
	CUdriverProcAddressQueryResult st = best    ? CU_GET_PROC_ADDRESS_SUCCESS
					    : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
						    : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (symbolStatus)
		*symbolStatus = st;
	*pfn = best ? best->fn : NULL;
	/* SIMCUDA_HIDDEN_ENTRY=cuMemFree: hand out an unexported copy, as a
	 * driver could, to test that the tracer reports what it cannot wrap. */
	const char *hidden = getenv("SIMCUDA_HIDDEN_ENTRY");
	if (best && hidden && !strcmp(hidden, symbol) && !strcmp(symbol, "cuMemFree"))
		*pfn = (void *)hidden_cuMemFree;
	return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	return proc_lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* CUDA 11.3-11.8's form, still exported by CUDA 12+ drivers. */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return proc_lookup(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- for the simulated NVML (tests/sim/nvml.c), in the same process ---- */
__attribute__((visibility("default"))) int simcuda_usage(int dev, struct simcuda_usage *out)
{
	if (!is_initialized() || !valid_dev(dev) || !out)
		return -1;
	LOCK();
	out->allocated = devs[dev].used;
	out->contexts = devs[dev].ctx_bytes;
	out->modules = devs[dev].mod_bytes;
	UNLOCK();
	return 0;
}
