/* PyTorch's CUDA allocator, as the driver sees it (frameworks.md §1), for
 * emu-torch.c. Four backends, chosen as PyTorch chooses them, from the
 * environment:
 *   native       CUDACachingAllocator (§1.1-1.4): cudaMalloc of 2 MiB,
 *                20 MiB or 2 MiB-rounded segments, blocks split inside,
 *                no driver free on a tensor free;
 *   expandable   PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (§1.5):
 *                cuMemCreate/cuMemMap pages of 2 or 20 MiB in a reservation
 *                of 1.125x the device, the driver reached through
 *                cudaGetDriverEntryPointByVersion (§0.1);
 *   async        PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (§1.6):
 *                cudaMallocAsync/cudaFreeAsync per tensor, unrounded;
 *   nocache      PYTORCH_NO_CUDA_MEMORY_CACHING=1 (§1.7): cudaMalloc and
 *                cudaFree of the exact size per tensor.
 * All through the dynamic libcudart (the route of libc10_cuda.so). */
#ifndef TORCH_ALLOC_H
#define TORCH_ALLOC_H

#include "emu.h"

enum backend { NATIVE, EXPANDABLE, ASYNC, NOCACHE };
enum pool { SMALL, LARGE };

/* §1.1 constants */
#define K_MIN_BLOCK    512ull
#define K_SMALL_SIZE   (1 * MiB)
#define K_SMALL_BUFFER (2 * MiB)
#define K_MIN_LARGE    (10 * MiB)
#define K_LARGE_BUFFER (20 * MiB)
#define K_ROUND_LARGE  (2 * MiB)
#define MAX_PAGES      4096

struct seg;
struct block {
	uintptr_t ptr;
	size_t size;
	int used;
	struct seg *seg; /* NULL: a tensor of the async or nocache backends */
	struct block *prev, *next;
};

struct seg {
	uintptr_t base;
	size_t size; /* mapped bytes for an expandable segment */
	enum pool pool;
	struct block *head;
	struct seg *next;
	/* expandable only */
	size_t page, reserved;
	CUmemGenericAllocationHandle *handles;
};

struct torch_alloc {
	pthread_mutex_t lock;
	enum backend backend;
	struct seg *segs;
	struct seg *expandable[2];
	size_t total;	  /* the device's memory (cudaMemGetInfo) */
	size_t limit;	  /* set_per_process_memory_fraction, 0: none */
	size_t reserved;  /* memory_reserved() */
	size_t allocated; /* memory_allocated() */
	size_t max_reserved;
	unsigned retries; /* num_alloc_retries */
	unsigned ooms;
	struct {
		CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
		CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
				   const CUmemAllocationProp *, unsigned long long);
		CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
				unsigned long long);
		CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
		CUresult (*unmap)(CUdeviceptr, size_t);
		CUresult (*release)(CUmemGenericAllocationHandle);
	} drv;
};

void torch_init(struct torch_alloc *a);
/* A tensor of `size` bytes; NULL after PyTorch's OOM path gave up (the
 * caller raises torch.OutOfMemoryError). */
struct block *torch_malloc(struct torch_alloc *a, size_t size);
void torch_free(struct torch_alloc *a, struct block *b);
/* torch.cuda.set_per_process_memory_fraction */
void torch_set_fraction(struct torch_alloc *a, double fraction);
void torch_print_stats(struct torch_alloc *a);

#endif
