/* PyTorch's CUDA allocator, as the driver sees it (frameworks.md §1), for
 * emu-torch.c. Four backends, chosen as PyTorch chooses them, from the
 * environment:
 *   native       CUDACachingAllocator: the product's own model of it
 *                (model/torchalloc.h) driving the simulated CUDA: cudaMalloc
 *                of 2 MiB, 20 MiB or 2 MiB-rounded segments, blocks split
 *                inside, no driver free on a tensor free;
 *   expandable   PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (§1.5):
 *                the same model, cuMemCreate/cuMemMap pages of 2 or 20 MiB
 *                in a reservation of 1.125x the device, the driver reached
 *                through cudaGetDriverEntryPointByVersion (§0.1);
 *   async        PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (§1.6):
 *                cudaMallocAsync/cudaFreeAsync per tensor, unrounded;
 *   nocache      PYTORCH_NO_CUDA_MEMORY_CACHING=1 (§1.7): cudaMalloc and
 *                cudaFree of the exact size per tensor.
 * All through the dynamic libcudart (the route of libc10_cuda.so). */
#ifndef TORCH_ALLOC_H
#define TORCH_ALLOC_H

#include "emu.h"
#include "model/torchalloc.h"

enum backend { NATIVE, EXPANDABLE, ASYNC, NOCACHE };

#define MAX_PAGES 8192

/* A tensor. */
struct block {
	uintptr_t ptr;
	size_t size;
};

struct torch_alloc {
	pthread_mutex_t lock;
	enum backend backend;
	struct ta *model; /* native and expandable */
	size_t total;	  /* the device's memory (cudaMemGetInfo) */
	/* async and nocache: their own counters */
	size_t reserved, allocated, max_reserved;
	unsigned ooms;
	/* cudaMemGetInfo's figures in the model's last OOM path */
	size_t oom_free, oom_total;
	/* expandable: each mapped page's handle, by address */
	struct {
		uintptr_t va;
		CUmemGenericAllocationHandle h;
	} pages[MAX_PAGES];
	size_t npages;
	struct {
		CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
		CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
				   const CUmemAllocationProp *, unsigned long long);
		CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
				unsigned long long);
		CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
		CUresult (*unmap)(CUdeviceptr, size_t);
		CUresult (*release)(CUmemGenericAllocationHandle);
		CUresult (*addr_free)(CUdeviceptr, size_t);
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
/* With EMU_HISTORY: the snapshot the helper writes at exit (torch-history.h). */
void torch_history_write(struct torch_alloc *a);

#endif
