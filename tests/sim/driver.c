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
 * One mutex guards everything; exported functions take it, static helpers
 * whose names end in _locked expect it held. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim-cuda.h"
#include "sim-nvml.h"

#define KiB	     (1024ull)
#define MiB	     (1024ull * KiB)
#define GiB	     (1024ull * MiB)
#define GRANULE	     (2 * MiB) /* page size and VMM granularity */
#define SMALL_ALIGN  512u      /* alignment of allocations up to 1 MiB */
#define PITCH_ALIGN  512u      /* cuMemAllocPitch's pitch alignment */
#define MAX_DEVICES  16
#define LEGACY_ARENA (64 * MiB)	 /* 32-bit addresses for the old cuMemAlloc */
#define CTX_MAGIC    0x43545853u /* "SXTC" */
#define IPC_MAGIC    "SIMIPC1"
#define SHARE_MAGIC  0x53484152u /* "RAHS": header of an exported handle's fd */

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- address arenas: first-fit over a sorted list of free extents ---- */
struct extent {
	uintptr_t start;
	size_t len;
};

struct arena {
	uintptr_t base;
	size_t len;
	struct extent *free;
	size_t nfree, cap;
};

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
static uintptr_t arena_take(struct arena *a, size_t len, size_t align)
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
static void arena_give(struct arena *a, uintptr_t start, size_t len)
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
enum obj_kind {
	OBJ_DEVICE,	/* cuMemAlloc_v2, cuMemAllocPitch_v2 */
	OBJ_ASYNC,	/* stream-ordered */
	OBJ_LEGACY,	/* 32-bit cuMemAlloc, cuMemAllocPitch */
	OBJ_MANAGED,	/* real host memory */
	OBJ_PINNED,	/* real host memory */
	OBJ_REGISTERED, /* a range of the caller's memory */
	OBJ_POOL,
	OBJ_ARRAY,
	OBJ_PHYS,    /* physical memory behind one or more VMM handles */
	OBJ_HANDLE,  /* a CUmemGenericAllocationHandle */
	OBJ_RESERVE, /* cuMemAddressReserve */
	OBJ_MAPPING, /* cuMemMap */
	OBJ_IPC,     /* cuIpcOpenMemHandle */
};

struct obj {
	struct obj *next;
	uint64_t key;
	enum obj_kind kind;
	int dev;	  /* -1: host memory */
	size_t size;	  /* bytes the caller asked for */
	size_t charged;	  /* device capacity this object holds */
	uintptr_t va;	  /* arena range or mmap'd range ... */
	size_t va_len;	  /* ... and its length */
	int refs, maps;	  /* handles: references and mappings; phys: handles */
	struct obj *link; /* mapping -> handle -> phys */
	uint64_t aux;	  /* phys: handle types; ipc: exporter's base address; async: pool */
	uint32_t pid;	  /* ipc: exporter's pid */
};

struct table {
	struct obj **b;
	size_t n, count;
};

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

static void tab_put(struct table *t, struct obj *o)
{
	if (t->count >= t->n)
		tab_grow(t);
	size_t s = slot_of(t, o->key);
	o->next = t->b[s];
	t->b[s] = o;
	t->count++;
}

static struct obj *tab_get(const struct table *t, uint64_t key)
{
	if (!t->n)
		return NULL;
	for (struct obj *o = t->b[slot_of(t, key)]; o; o = o->next)
		if (o->key == key)
			return o;
	return NULL;
}

static void tab_del(struct table *t, struct obj *victim)
{
	for (struct obj **p = &t->b[slot_of(t, victim->key)]; *p; p = &(*p)->next)
		if (*p == victim) {
			*p = victim->next;
			t->count--;
			return;
		}
}

/* Calls fn on every object until it returns nonzero; returns that object. */
static struct obj *tab_find(const struct table *t, int (*fn)(const struct obj *, const void *),
			    const void *arg)
{
	for (size_t i = 0; i < t->n; i++)
		for (struct obj *o = t->b[i]; o; o = o->next)
			if (fn(o, arg))
				return o;
	return NULL;
}

static struct obj *obj_new(uint64_t key, enum obj_kind kind, int dev, size_t size)
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
struct CUctx_st {
	uint32_t magic;
	int dev;
	int primary;
};

/* A stream-ordered pool keeps what its allocations free, up to its release
 * threshold (default 0: nothing), as reserved device memory: nvidia-smi
 * counts it, cuMemGetInfo does not offer it, the pool's next allocations
 * reuse it. */
struct CUmemPoolHandle_st {
	int dev;
	int is_default;
	cuuint64_t threshold;
	size_t live, idle; /* held by live allocations; kept after their free */
	size_t reserved_high, used_high;
};

struct CUarray_st {
	int dev;
};

struct device {
	struct arena arena;
	size_t capacity, used;
	size_t others; /* held by other processes (SIMCUDA_NVML_OTHER_BYTES) */
	struct CUctx_st primary;
	int primary_refs;
	size_t ctx_bytes; /* contexts' cost, seen by the simulated NVML only */
	size_t mod_bytes; /* loaded modules' code, the same */
	struct CUmemPoolHandle_st default_pool;
};

/* What an allocation may still take on the device. */
static size_t avail_locked(const struct device *dv)
{
	return dv->capacity - dv->others - dv->used;
}

/* Adaptive (spins a little before sleeping): with a plain mutex, 8 threads
 * on 2 CPUs spent 0.4-0.7 s of 0.6-0.9 s in futex calls for 4M calls
 * (tests/progs/threads 8 250000), so the throughput bench timed the sim's
 * lock, not the tracer. */
static pthread_mutex_t lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static int initialized; /* read without the lock: __atomic */
static int ndevs;
static struct device devs[MAX_DEVICES];
static struct arena legacy;
static int legacy_ok;
static struct table t_mem, t_reg, t_pool, t_array, t_phys, t_handle, t_reserve, t_map, t_ipc;
static uint64_t next_handle = 0x5100;
static uint64_t next_phys = 1;
static __thread CUcontext tl_ctx; /* the calling thread's current context */

#define LOCK()	 pthread_mutex_lock(&lock)
#define UNLOCK() pthread_mutex_unlock(&lock)

static int is_initialized(void)
{
	return __atomic_load_n(&initialized, __ATOMIC_ACQUIRE);
}

/* Every call but the version and lookup ones needs cuInit; memory calls
 * need a current context, like the real driver. */
/* SIMCUDA_DEINIT_AT_EXIT=1: like the real runtime's teardown, an exit
 * handler registered at cuInit (so it runs before the tracer's own) leaves
 * every later call failing with CUDA_ERROR_DEINITIALIZED. */
static int deinitialized;
static void deinit_at_exit(void)
{
	__atomic_store_n(&deinitialized, 1, __ATOMIC_RELEASE);
}

#define NEED_INIT()                                                                                \
	do {                                                                                       \
		if (!is_initialized())                                                             \
			return CUDA_ERROR_NOT_INITIALIZED;                                         \
		if (__atomic_load_n(&deinitialized, __ATOMIC_ACQUIRE))                             \
			return CUDA_ERROR_DEINITIALIZED;                                           \
	} while (0)
#define NEED_CTX()                                                                                 \
	do {                                                                                       \
		NEED_INIT();                                                                       \
		if (!tl_ctx)                                                                       \
			return CUDA_ERROR_INVALID_CONTEXT;                                         \
	} while (0)

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

static int nobooks_owns(uint64_t p)
{
	return nobooks.base && p - nobooks.base < (uint64_t)NOBOOKS_SLICES * NOBOOKS_SLICE;
}

static CUresult nobooks_alloc(CUdeviceptr *dptr, size_t size)
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

static int valid_dev(CUdevice dev)
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

/* ---- linear device memory ---- */
/* Capacity an allocation holds: whole 2 MiB pages above 1 MiB (how
 * nvidia-smi counts), 512-byte units below. Its alignment is the same. */
static size_t granule_of(size_t size)
{
	return size > MiB ? GRANULE : SMALL_ALIGN;
}

static CUresult dev_alloc_locked(int dev, size_t size, enum obj_kind kind, uintptr_t *out)
{
	size_t g = granule_of(size), charge = round_up(size, g);
	struct device *dv = &devs[dev];
	struct arena *a = kind == OBJ_LEGACY ? &legacy : &dv->arena;
	if (charge < size || charge > avail_locked(dv) || (kind == OBJ_LEGACY && !legacy_ok))
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t va = arena_take(a, charge, g);
	if (!va)
		return CUDA_ERROR_OUT_OF_MEMORY;
	struct obj *o = obj_new(va, kind, dev, size);
	if (!o) {
		arena_give(a, va, charge);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->charged = charge;
	o->va = va;
	o->va_len = charge;
	tab_put(&t_mem, o);
	dv->used += charge;
	*out = va;
	return CUDA_SUCCESS;
}

static CUresult dev_alloc(int dev, size_t size, enum obj_kind kind, CUdeviceptr *dptr)
{
	if (!dptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t va;
	LOCK();
	CUresult r = dev_alloc_locked(dev, size, kind, &va);
	UNLOCK();
	if (r == CUDA_SUCCESS)
		*dptr = va; /* on failure *dptr stays untouched */
	return r;
}

/* Gives the pool's reserve above `keep` back to the device. */
static void pool_trim_locked(struct CUmemPoolHandle_st *p, size_t keep)
{
	if (p->idle > keep) {
		devs[p->dev].used -= p->idle - keep;
		p->idle = keep;
	}
}

/* An allocation of the pool freed: its bytes stay reserved (still charged
 * to the device) up to the threshold. Called before the object's own
 * charge goes back. */
static void pool_keep_locked(struct CUmemPoolHandle_st *p, size_t charged)
{
	if (!p)
		return;
	p->live -= charged;
	p->idle += charged;
	devs[p->dev].used += charged;
	pool_trim_locked(p, p->threshold > SIZE_MAX ? SIZE_MAX : (size_t)p->threshold);
}

static void host_unmap(struct obj *o)
{
	munmap((void *)o->va, o->va_len);
}

static void obj_free_locked(struct table *t, struct obj *o)
{
	switch (o->kind) {
	case OBJ_ASYNC:
		pool_keep_locked((struct CUmemPoolHandle_st *)(uintptr_t)o->aux, o->charged);
		/* fall through */
	case OBJ_DEVICE:
		arena_give(&devs[o->dev].arena, o->va, o->va_len);
		devs[o->dev].used -= o->charged;
		break;
	case OBJ_LEGACY:
		arena_give(&legacy, o->va, o->va_len);
		devs[o->dev].used -= o->charged;
		break;
	case OBJ_MANAGED:
	case OBJ_PINNED:
	case OBJ_IPC:
		host_unmap(o);
		break;
	default:
		if (o->dev >= 0)
			devs[o->dev].used -= o->charged;
		break;
	}
	tab_del(t, o);
	free(o);
}

/* Frees address `p` if it is one of the kinds in `mask` (1 << kind). */
static CUresult free_addr(uint64_t p, unsigned mask)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_mem, p);
	if (o && (mask >> o->kind & 1)) {
		obj_free_locked(&t_mem, o);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

#define DEVICE_KINDS (1u << OBJ_DEVICE | 1u << OBJ_ASYNC)

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	NEED_CTX();
	if (nobooks.base)
		return nobooks_alloc(dptr, bytesize);
	return dev_alloc(tl_ctx->dev, bytesize, OBJ_DEVICE, dptr);
}

static CUresult pitch_of(size_t width, size_t height, unsigned elem, size_t *pitch, size_t *bytes)
{
	if (!width || !height || (elem != 4 && elem != 8 && elem != 16))
		return CUDA_ERROR_INVALID_VALUE;
	*pitch = round_up(width, PITCH_ALIGN);
	*bytes = *pitch * height;
	if (*bytes / height != *pitch)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
			    unsigned int ElementSizeBytes)
{
	NEED_CTX();
	size_t pitch, bytes;
	if (!dptr || !pPitch)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = pitch_of(WidthInBytes, Height, ElementSizeBytes, &pitch, &bytes);
	if (r == CUDA_SUCCESS)
		r = dev_alloc(tl_ctx->dev, bytes, OBJ_DEVICE, dptr);
	if (r == CUDA_SUCCESS)
		*pPitch = pitch;
	return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	NEED_CTX();
	if (!dptr)
		return CUDA_SUCCESS; /* freeing NULL is a no-op */
	if (nobooks_owns(dptr))
		return CUDA_SUCCESS;
	return free_addr(dptr, DEVICE_KINDS | 1u << OBJ_MANAGED);
}

/* The unversioned exports are the CUDA 3.1 ABI: 32-bit pointers and sizes.
 * They allocate from a reservation below 4 GiB so the pointer fits. */
CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize)
{
	NEED_CTX();
	if (!dptr || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t va;
	LOCK();
	CUresult r = dev_alloc_locked(tl_ctx->dev, bytesize, OBJ_LEGACY, &va);
	UNLOCK();
	if (r == CUDA_SUCCESS)
		*dptr = (unsigned int)va;
	return r;
}

CUresult cuMemAllocPitch(unsigned int *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
			 unsigned int Height, unsigned int ElementSizeBytes)
{
	NEED_CTX();
	size_t pitch, bytes;
	if (!dptr || !pPitch)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = pitch_of(WidthInBytes, Height, ElementSizeBytes, &pitch, &bytes);
	if (r == CUDA_SUCCESS && bytes > 0xffffffffu)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS)
		r = cuMemAlloc(dptr, (unsigned int)bytes);
	if (r == CUDA_SUCCESS)
		*pPitch = (unsigned int)pitch;
	return r;
}

CUresult cuMemFree(unsigned int dptr)
{
	NEED_CTX();
	if (!dptr)
		return CUDA_SUCCESS;
	return free_addr(dptr, 1u << OBJ_LEGACY);
}

/* ---- host memory: real pages ---- */
static CUresult host_alloc(size_t size, enum obj_kind kind, unsigned flags, void **out)
{
	size_t len = round_up(size, (size_t)sysconf(_SC_PAGESIZE));
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	struct obj *o = obj_new((uintptr_t)p, kind, -1, size);
	if (!o) {
		munmap(p, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->va = (uintptr_t)p;
	o->va_len = len;
	o->aux = flags;
	LOCK();
	tab_put(&t_mem, o);
	UNLOCK();
	*out = p;
	return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	NEED_CTX();
	if (!dptr || !bytesize || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	void *p;
	CUresult r = host_alloc(bytesize, OBJ_MANAGED, flags, &p);
	if (r == CUDA_SUCCESS)
		*dptr = (uintptr_t)p;
	return r;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	NEED_CTX();
	unsigned known =
	    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
	if (!pp || !bytesize || (Flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	return host_alloc(bytesize, OBJ_PINNED, Flags, pp);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemFreeHost(void *p)
{
	NEED_CTX();
	return free_addr((uintptr_t)p, 1u << OBJ_PINNED);
}

struct range {
	uintptr_t start, end;
};

static int overlaps_pinned(const struct obj *o, const void *arg)
{
	const struct range *r = arg;
	return (o->kind == OBJ_PINNED || o->kind == OBJ_REGISTERED) && o->va < r->end &&
	       r->start < o->va + o->size;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	NEED_CTX();
	unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
			 CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
	if (!p || !bytesize || (Flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	struct range r = {(uintptr_t)p, (uintptr_t)p + bytesize};
	CUresult res = CUDA_SUCCESS;
	LOCK();
	if (tab_find(&t_reg, overlaps_pinned, &r) || tab_find(&t_mem, overlaps_pinned, &r)) {
		res = SIM_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	} else {
		struct obj *o = obj_new(r.start, OBJ_REGISTERED, -1, bytesize);
		if (o) {
			o->va = r.start;
			o->aux = Flags;
			tab_put(&t_reg, o);
		} else {
			res = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	UNLOCK();
	return res;
}

/* CUDA 4.0's form; 6.5 (_v2) changed only what the flags may be. */
CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	return cuMemHostRegister_v2(p, bytesize, Flags);
}

CUresult cuMemHostUnregister(void *p)
{
	NEED_CTX();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = SIM_ERROR_HOST_MEMORY_NOT_REGISTERED;
	LOCK();
	struct obj *o = tab_get(&t_reg, (uintptr_t)p);
	if (o) {
		obj_free_locked(&t_reg, o);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

/* ---- stream-ordered allocation and pools ----
 * The simulation completes stream work at once: memory is allocated and
 * freed when the call is made. Streams are not checked. */
/* The pool's reserve serves first; what it lacks comes from the device,
 * the rest of the reserve going back if the device is short. */
static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool)
{
	NEED_CTX();
	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct CUmemPoolHandle_st *p = pool ? pool : &devs[tl_ctx->dev].default_pool;
	if (!tab_get(&t_pool, (uintptr_t)p)) {
		UNLOCK();
		return CUDA_ERROR_INVALID_VALUE;
	}
	size_t charge = round_up(bytesize, granule_of(bytesize));
	if (p->idle >= charge) {
		p->idle -= charge;
		devs[p->dev].used -= charge;
	} else if (charge > avail_locked(&devs[p->dev])) {
		pool_trim_locked(p, 0);
	}
	uintptr_t va;
	CUresult r = dev_alloc_locked(p->dev, bytesize, OBJ_ASYNC, &va);
	if (r == CUDA_SUCCESS) {
		struct obj *o = tab_get(&t_mem, va);
		o->aux = (uintptr_t)p;
		p->live += o->charged;
		if (p->live > p->used_high)
			p->used_high = p->live;
		if (p->live + p->idle > p->reserved_high)
			p->reserved_high = p->live + p->idle;
		*dptr = va;
	}
	UNLOCK();
	return r;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return pool_alloc(dptr, bytesize, NULL);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return pool_alloc(dptr, bytesize, NULL);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				 CUstream hStream)
{
	return pool ? pool_alloc(dptr, bytesize, pool) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				      CUstream hStream)
{
	return pool ? pool_alloc(dptr, bytesize, pool) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	NEED_CTX();
	return free_addr(dptr, DEVICE_KINDS);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	NEED_CTX();
	return free_addr(dptr, DEVICE_KINDS);
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	NEED_CTX();
	if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    !valid_dev(poolProps->location.id))
		return CUDA_ERROR_INVALID_VALUE;
	struct CUmemPoolHandle_st *p = malloc(sizeof *p);
	struct obj *o = p ? obj_new((uintptr_t)p, OBJ_POOL, poolProps->location.id, 0) : NULL;
	if (!o) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*p = (struct CUmemPoolHandle_st){.dev = poolProps->location.id};
	LOCK();
	tab_put(&t_pool, o);
	UNLOCK();
	*pool = p;
	return CUDA_SUCCESS;
}

/* Outstanding allocations outlive their pool, as the driver allows. */
CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_pool, (uintptr_t)pool);
	if (o && !pool->is_default) {
		pool_trim_locked(pool, 0);
		for (size_t i = 0; i < t_mem.n; i++)
			for (struct obj *m = t_mem.b[i]; m; m = m->next)
				if (m->kind == OBJ_ASYNC && m->aux == (uintptr_t)pool)
					m->aux = 0;
		tab_del(&t_pool, o);
		free(o);
		free(pool);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	NEED_CTX();
	LOCK();
	struct obj *o = tab_get(&t_pool, (uintptr_t)pool);
	if (o)
		pool_trim_locked(pool, minBytesToKeep);
	UNLOCK();
	return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	NEED_INIT();
	if (!pool_out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*pool_out = &devs[dev].default_pool;
	return CUDA_SUCCESS;
}

/* The reuse attributes are ints and change nothing here; the others are
 * cuuint64_t. Setting a high-water mark resets it. */
static CUresult pool_attr(CUmemoryPool pool, CUmemPool_attribute attr, void *value, int set)
{
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	CUresult r = tab_get(&t_pool, (uintptr_t)pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	cuuint64_t *v = value;
	if (r == CUDA_SUCCESS && set) {
		if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
			pool->threshold = *v;
			pool_trim_locked(pool, *v > SIZE_MAX ? SIZE_MAX : (size_t)*v);
		} else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) {
			pool->reserved_high = pool->live + pool->idle;
		} else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
			pool->used_high = pool->live;
		} else if (attr > CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES) {
			r = CUDA_ERROR_INVALID_VALUE;
		}
	} else if (r == CUDA_SUCCESS) {
		switch (attr) {
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
			*v = pool->threshold;
			break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
			*v = pool->live + pool->idle;
			break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
			*v = pool->reserved_high;
			break;
		case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
			*v = pool->live;
			break;
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
			*v = pool->used_high;
			break;
		default:
			*(int *)value = 1;
			break;
		}
	}
	UNLOCK();
	return r;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	NEED_CTX();
	return pool_attr(pool, attr, value, 1);
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	NEED_CTX();
	return pool_attr(pool, attr, value, 0);
}

/* ---- modules: code on the device, with no allocation call ---- */
struct CUmod_st {
	int dev;
	size_t bytes;
	int loaded;
};
struct CUfunc_st {
	struct CUmod_st *mod;
};

static void module_charge_locked(struct CUmod_st *m)
{
	if (!m->loaded) {
		m->loaded = 1;
		devs[m->dev].mod_bytes += m->bytes;
	}
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	NEED_CTX();
	unsigned long long bytes;
	if (!module || !image || sscanf(image, "SIMMODULE %llu", &bytes) != 1)
		return SIM_ERROR_INVALID_IMAGE;
	struct CUmod_st *m = calloc(1, sizeof *m);
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*m = (struct CUmod_st){tl_ctx->dev, (size_t)bytes, 0};
	const char *mode = getenv("CUDA_MODULE_LOADING");
	LOCK();
	if (mode && !strcmp(mode, "EAGER"))
		module_charge_locked(m);
	UNLOCK();
	*module = m;
	return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod)
{
	NEED_CTX();
	if (!hmod)
		return CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	if (hmod->loaded)
		devs[hmod->dev].mod_bytes -= hmod->bytes;
	UNLOCK();
	free(hmod);
	return CUDA_SUCCESS;
}

/* Functions are never freed: like the driver's, they live as long as the
 * module, and the programs that use them never unload. */
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	NEED_CTX();
	if (!hfunc || !hmod || !name)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUfunc_st *f = malloc(sizeof *f);
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	f->mod = hmod;
	*hfunc = f;
	return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			void **kernelParams, void **extra)
{
	NEED_CTX();
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	module_charge_locked(f->mod);
	UNLOCK();
	return CUDA_SUCCESS;
}

/* ---- virtual memory management ----
 * phys (capacity) <- handles (refs) <- mappings. Physical memory goes back
 * only when its last handle goes, and a handle only when it has been
 * released and unmapped everywhere. */
static void handle_put_locked(struct obj *h)
{
	if (h->refs > 0 || h->maps > 0)
		return;
	struct obj *phys = h->link;
	tab_del(&t_handle, h);
	free(h);
	if (--phys->refs == 0)
		obj_free_locked(&t_phys, phys);
}

static struct obj *handle_new_locked(struct obj *phys)
{
	struct obj *h = obj_new(next_handle++, OBJ_HANDLE, phys->dev, phys->size);
	if (!h)
		return NULL;
	h->refs = 1;
	h->link = phys;
	phys->refs++;
	tab_put(&t_handle, h);
	return h;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	NEED_INIT();
	if (!granularity || !prop ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
	     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = GRANULE;
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	NEED_CTX();
	if (!handle || !prop || flags || !size || size % GRANULE ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	/* No NVLink fabric here: what a machine without IMEX answers. */
	if (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC)
		return CUDA_ERROR_NOT_SUPPORTED;
	int dev;
	switch (prop->location.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		if (!valid_dev(prop->location.id))
			return CUDA_ERROR_INVALID_DEVICE;
		dev = prop->location.id;
		break;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		dev = -1; /* host memory: holds no device capacity */
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	CUresult r = CUDA_SUCCESS;
	LOCK();
	if (dev >= 0 && size > avail_locked(&devs[dev])) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		struct obj *phys = obj_new(next_phys++, OBJ_PHYS, dev, size);
		struct obj *h = phys ? handle_new_locked(phys) : NULL;
		if (!h) {
			free(phys);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			phys->aux = prop->requestedHandleTypes;
			tab_put(&t_phys, phys);
			if (dev >= 0) {
				phys->charged = size;
				devs[dev].used += size;
			}
			*handle = h->key;
		}
	}
	UNLOCK();
	return r;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *h = tab_get(&t_handle, handle);
	if (h && h->refs > 0) {
		h->refs--;
		handle_put_locked(h);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
			     unsigned long long flags)
{
	NEED_CTX();
	if (!ptr || !size || size % GRANULE || flags || (alignment & (alignment - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	size_t align = alignment > GRANULE ? alignment : GRANULE;
	/* Address space of our own, so no host pointer can ever equal it. */
	void *m = mmap((void *)(uintptr_t)addr, size + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t start = round_up((uintptr_t)m, align), end = start + size;
	if (start > (uintptr_t)m)
		munmap(m, start - (uintptr_t)m);
	if ((uintptr_t)m + size + align > end)
		munmap((void *)end, (uintptr_t)m + size + align - end);
	struct obj *o = obj_new(start, OBJ_RESERVE, -1, size);
	if (!o) {
		munmap((void *)start, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->va = start;
	o->va_len = size;
	LOCK();
	tab_put(&t_reserve, o);
	UNLOCK();
	*ptr = start;
	return CUDA_SUCCESS;
}

static int overlaps_mapping(const struct obj *o, const void *arg)
{
	const struct range *r = arg;
	return o->va < r->end && r->start < o->va + o->size;
}

static int contains_range(const struct obj *o, const void *arg)
{
	const struct range *r = arg;
	return o->va <= r->start && r->end <= o->va + o->size;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	struct range rg = {ptr, ptr + size};
	LOCK();
	struct obj *o = tab_get(&t_reserve, ptr);
	/* The whole reservation, and nothing may still be mapped in it. */
	if (o && o->size == size && !tab_find(&t_map, overlaps_mapping, &rg)) {
		host_unmap(o);
		tab_del(&t_reserve, o);
		free(o);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags)
{
	NEED_CTX();
	if (flags || !size || size % GRANULE || offset % GRANULE)
		return CUDA_ERROR_INVALID_VALUE;
	struct range rg = {ptr, ptr + size};
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *h = tab_get(&t_handle, handle);
	if (h && h->refs > 0 && offset <= h->size && size <= h->size - offset &&
	    tab_find(&t_reserve, contains_range, &rg) && !tab_find(&t_map, overlaps_mapping, &rg)) {
		struct obj *m = obj_new(ptr, OBJ_MAPPING, h->dev, size);
		if (m) {
			m->va = ptr;
			m->link = h;
			m->aux = offset;
			h->maps++;
			tab_put(&t_map, m);
			r = CUDA_SUCCESS;
		} else {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	UNLOCK();
	return r;
}

struct unmap_scan {
	struct range r;
	int partial, whole;
};

static int inside_range(const struct obj *o, const void *arg)
{
	const struct range *r = arg;
	return r->start <= o->va && o->va + o->size <= r->end;
}

static int scan_unmap(const struct obj *o, const void *arg)
{
	struct unmap_scan *s = (struct unmap_scan *)arg;
	if (overlaps_mapping(o, &s->r)) {
		if (inside_range(o, &s->r))
			s->whole++;
		else
			s->partial++;
	}
	return 0;
}

/* The range must cover whole mappings; it may cover several. */
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	NEED_CTX();
	struct unmap_scan s = {{ptr, ptr + size}, 0, 0};
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	tab_find(&t_map, scan_unmap, &s);
	if (size && s.whole && !s.partial) {
		struct obj *m;
		while ((m = tab_find(&t_map, inside_range, &s.r))) {
			struct obj *h = m->link;
			tab_del(&t_map, m);
			free(m);
			h->maps--;
			handle_put_locked(h);
		}
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

static int maps_addr(const struct obj *o, const void *arg)
{
	uintptr_t a = *(const uintptr_t *)arg;
	return o->va <= a && a < o->va + o->size;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	NEED_CTX();
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t a = (uintptr_t)addr;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *m = tab_find(&t_map, maps_addr, &a);
	if (m) {
		m->link->refs++;
		*handle = m->link->key; /* the same handle value, one more reference */
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

struct cover_scan {
	struct range r;
	size_t covered;
};

static int scan_cover(const struct obj *o, const void *arg)
{
	struct cover_scan *s = (struct cover_scan *)arg;
	if (overlaps_mapping(o, &s->r)) {
		uintptr_t lo = o->va > s->r.start ? o->va : s->r.start;
		uintptr_t hi = o->va + o->size < s->r.end ? o->va + o->size : s->r.end;
		s->covered += hi - lo;
	}
	return 0;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	NEED_CTX();
	if (!desc || !count || !size)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++)
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    !valid_dev(desc[i].location.id))
			return CUDA_ERROR_INVALID_VALUE;
	struct cover_scan s = {{ptr, ptr + size}, 0};
	LOCK();
	tab_find(&t_map, scan_cover, &s);
	UNLOCK();
	return s.covered == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* An exported handle is a memfd holding this record, so the fd can cross
 * a process boundary (fork, SCM_RIGHTS) and still describe the memory. */
struct share_record {
	uint32_t magic, pid;
	uint64_t phys_id, size;
	int32_t dev;
};

CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
				      CUmemAllocationHandleType handleType,
				      unsigned long long flags)
{
	NEED_CTX();
	if (!shareableHandle || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct share_record rec = {SHARE_MAGIC, (uint32_t)getpid(), 0, 0, 0};
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *h = tab_get(&t_handle, handle);
	if (h && h->refs > 0 && (h->link->aux & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
		rec.phys_id = h->link->key;
		rec.size = h->link->size;
		rec.dev = h->link->dev;
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	if (r != CUDA_SUCCESS)
		return r;
	int fd = memfd_create("simcuda-shareable", MFD_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (pwrite(fd, &rec, sizeof rec, 0) != (ssize_t)sizeof rec) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*(int *)shareableHandle = fd;
	return CUDA_SUCCESS;
}

/* Importing gives a new handle to the same physical memory. Memory another
 * process exported is described by the record and holds no capacity here. */
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
					CUmemAllocationHandleType shHandleType)
{
	NEED_CTX();
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct share_record rec;
	int fd = (int)(intptr_t)osHandle;
	if (pread(fd, &rec, sizeof rec, 0) != (ssize_t)sizeof rec || rec.magic != SHARE_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	struct obj *phys = rec.pid == (uint32_t)getpid() ? tab_get(&t_phys, rec.phys_id) : NULL;
	if (!phys) {
		phys = obj_new(next_phys++, OBJ_PHYS, rec.dev, rec.size);
		if (phys) {
			phys->aux = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
			tab_put(&t_phys, phys);
		}
	}
	struct obj *h = phys ? handle_new_locked(phys) : NULL;
	if (h) {
		*handle = h->key;
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

/* ---- arrays ---- */
static size_t format_bytes(CUarray_format f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

static CUresult array_create(CUarray *pHandle, size_t w, size_t h, size_t d, CUarray_format f,
			     unsigned channels)
{
	NEED_CTX();
	size_t elem = format_bytes(f);
	if (!pHandle || !w || !elem || (channels != 1 && channels != 2 && channels != 4))
		return CUDA_ERROR_INVALID_VALUE;
	size_t bytes = w * (h ? h : 1) * (d ? d : 1) * elem * channels;
	size_t charge = round_up(bytes, granule_of(bytes));
	int dev = tl_ctx->dev;
	struct CUarray_st *a = malloc(sizeof *a);
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->dev = dev;
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	if (charge <= avail_locked(&devs[dev])) {
		struct obj *o = obj_new((uintptr_t)a, OBJ_ARRAY, dev, bytes);
		if (o) {
			o->charged = charge;
			devs[dev].used += charge;
			tab_put(&t_array, o);
			r = CUDA_SUCCESS;
		}
	}
	UNLOCK();
	if (r == CUDA_SUCCESS)
		*pHandle = a;
	else
		free(a);
	return r;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	if (!pAllocateArray)
		return is_initialized() ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
	const CUDA_ARRAY_DESCRIPTOR *d = pAllocateArray;
	return array_create(pHandle, d->Width, d->Height, 0, d->Format, d->NumChannels);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	if (!pAllocateArray)
		return is_initialized() ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
	const CUDA_ARRAY3D_DESCRIPTOR *d = pAllocateArray;
	return array_create(pHandle, d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
}

CUresult cuArrayDestroy(CUarray hArray)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_array, (uintptr_t)hArray);
	if (o) {
		obj_free_locked(&t_array, o);
		free(hArray);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

/* ---- IPC ----
 * A handle names the exporter's allocation by pid and address. Opening maps
 * a fresh address range (no capacity: the memory is the exporter's); the
 * same handle opened twice in a process gives the same address, counted.
 * Unlike the real driver, a process may open its own handles, so one
 * program can exercise both sides. */
struct ipc_record {
	char magic[8];
	uint32_t pid;
	int32_t dev;
	uint64_t base, size;
};

static int contains_addr(const struct obj *o, const void *arg)
{
	uintptr_t a = *(const uintptr_t *)arg;
	return (o->kind == OBJ_DEVICE) && o->va <= a && a < o->va + o->size;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	NEED_CTX();
	if (!pHandle)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t a = dptr;
	struct ipc_record rec;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_mem, a);
	if (!o || o->kind != OBJ_DEVICE)
		o = tab_find(&t_mem, contains_addr, &a);
	if (o) {
		memset(&rec, 0, sizeof rec);
		memcpy(rec.magic, IPC_MAGIC, sizeof rec.magic);
		rec.pid = (uint32_t)getpid();
		rec.dev = o->dev;
		rec.base = o->va;
		rec.size = o->size;
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	if (r == CUDA_SUCCESS) {
		memset(pHandle, 0, sizeof *pHandle);
		memcpy(pHandle->reserved, &rec, sizeof rec);
	}
	return r;
}

struct ipc_key {
	uint32_t pid;
	uint64_t base;
};

static int same_ipc(const struct obj *o, const void *arg)
{
	const struct ipc_key *k = arg;
	return o->pid == k->pid && o->aux == k->base;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	NEED_CTX();
	struct ipc_record rec;
	memcpy(&rec, handle.reserved, sizeof rec);
	if (!pdptr || (Flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
	    memcmp(rec.magic, IPC_MAGIC, sizeof rec.magic) || !rec.size)
		return CUDA_ERROR_INVALID_VALUE;
	struct ipc_key k = {rec.pid, rec.base};
	LOCK();
	struct obj *o = tab_find(&t_ipc, same_ipc, &k);
	if (o) {
		o->refs++;
		UNLOCK();
		*pdptr = o->va;
		return CUDA_SUCCESS;
	}
	UNLOCK();
	size_t len = round_up(rec.size, GRANULE);
	void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o = obj_new((uintptr_t)m, OBJ_IPC, rec.dev, rec.size);
	if (!o) {
		munmap(m, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->va = (uintptr_t)m;
	o->va_len = len;
	o->refs = 1;
	o->pid = rec.pid;
	o->aux = rec.base;
	LOCK();
	tab_put(&t_ipc, o);
	UNLOCK();
	*pdptr = o->va;
	return CUDA_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_ipc, dptr);
	if (o) {
		if (--o->refs == 0)
			obj_free_locked(&t_ipc, o);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
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
