/* What the simulated driver's files share (tests/sim/driver.c says what it
 * simulates): its sizes, the books' types, the one lock and the helpers
 * that more than one file uses. Everything declared here stays inside
 * libcuda.so.1 (hidden): the exports are the CUDA API alone.
 *
 *   driver.c      the books (address arenas, object tables), cuInit and
 *                 devices, contexts, errors, cuGetProcAddress, NVML's view
 *   driver-mem.c  linear device memory, host memory, stream-ordered pools,
 *                 arrays
 *   driver-vmm.c  modules, virtual memory management, IPC */
#ifndef SIM_DRIVER_H
#define SIM_DRIVER_H

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

static inline size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- the books ---- */
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
static inline size_t avail_locked(const struct device *dv)
{
	return dv->capacity - dv->others - dv->used;
}

struct range {
	uintptr_t start, end;
};

#pragma GCC visibility push(hidden)

/* Address arenas (driver.c): first fit over a sorted list of free extents. */
uintptr_t arena_take(struct arena *a, size_t len, size_t align); /* 0: none */
void arena_give(struct arena *a, uintptr_t start, size_t len);

/* Object tables (driver.c), keyed by address or handle. */
void tab_put(struct table *t, struct obj *o);
struct obj *tab_get(const struct table *t, uint64_t key);
void tab_del(struct table *t, struct obj *victim);
/* Calls fn on every object until it returns nonzero; returns that object. */
struct obj *tab_find(const struct table *t, int (*fn)(const struct obj *, const void *),
		     const void *arg);
struct obj *obj_new(uint64_t key, enum obj_kind kind, int dev, size_t size);

/* The state (driver.c), under the one lock. */
extern pthread_mutex_t lock;
extern int initialized; /* read without the lock: __atomic */
extern int deinitialized;
extern struct device devs[MAX_DEVICES];
extern struct arena legacy;
extern int legacy_ok;
extern struct table t_mem, t_reg, t_pool, t_array, t_phys, t_handle, t_reserve, t_map, t_ipc;
extern uint64_t next_handle, next_phys;
extern __thread CUcontext tl_ctx; /* the calling thread's current context */

int valid_dev(CUdevice dev);
/* SIMCUDA_BOOKS=0 (driver.c) */
int nobooks_on(void);
int nobooks_owns(uint64_t p);
CUresult nobooks_alloc(CUdeviceptr *dptr, size_t size);

/* driver-mem.c, for the VMM and IPC */
void host_unmap(struct obj *o);
void obj_free_locked(struct table *t, struct obj *o);

#pragma GCC visibility pop

#define LOCK()	 pthread_mutex_lock(&lock)
#define UNLOCK() pthread_mutex_unlock(&lock)

static inline int is_initialized(void)
{
	return __atomic_load_n(&initialized, __ATOMIC_ACQUIRE);
}

/* Every call but the version and lookup ones needs cuInit; memory calls
 * need a current context, like the real driver. */
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

#endif
