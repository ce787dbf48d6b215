/* A training loop in miniature, for `make demo`: a caching allocator that
 * grows during warm-up and then re-uses its blocks, per-step activations,
 * a pinned staging buffer, and a communication buffer made with the VMM API
 * the way NCCL and PyTorch's expandable segments make theirs.
 *
 * It runs on the simulated CUDA under tests/sim, or on a real GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
				    enum cudaDriverEntryPointQueryResult *driverStatus);

/* Kept out of line so the demo's stacks name each step; in real programs
 * an inlined function shows as its caller. */
#define STEP __attribute__((noinline))

#define MiB   (1024ull * 1024)
#define BLOCK (2 * MiB)

/* A toy caching allocator: sizes round up to 2 MiB blocks, freed blocks go
 * to a free list and are handed out again before new memory is asked for. */
struct block {
	void *ptr;
	size_t size;
	int used;
};
static struct block cache[4096];
static int ncache;

STEP static void *cache_alloc(size_t size)
{
	size = (size + BLOCK - 1) / BLOCK * BLOCK;
	for (int i = 0; i < ncache; i++)
		if (!cache[i].used && cache[i].size == size) {
			cache[i].used = 1;
			return cache[i].ptr;
		}
	void *p = NULL;
	if (ncache == 4096 || cudaMalloc(&p, size) != cudaSuccess)
		return NULL;
	cache[ncache++] = (struct block){p, size, 1};
	return p;
}

static void cache_free(void *p)
{
	for (int i = 0; i < ncache; i++)
		if (cache[i].ptr == p)
			cache[i].used = 0;
}

static void cache_empty(void)
{
	for (int i = 0; i < ncache; i++)
		cudaFree(cache[i].ptr);
	ncache = 0;
}

static void *weights[8];

STEP static void load_model(void)
{
	for (int i = 0; i < 8; i++)
		cudaMalloc(&weights[i], (size_t)(16 + 8 * i) * MiB);
}

STEP static void forward(void **acts, int batch)
{
	for (int layer = 0; layer < 8; layer++)
		acts[layer] = cache_alloc((size_t)batch * (layer + 1) * 256 * 1024);
}

STEP static void backward(void **acts, int batch)
{
	for (int layer = 7; layer >= 0; layer--) {
		void *grad = cache_alloc((size_t)batch * (layer + 1) * 256 * 1024);
		cache_free(acts[layer]);
		cache_free(grad);
	}
}

static void *optimizer_state[8];

STEP static void optimizer_step(int step)
{
	/* Adam's moments are made on the first step and kept. */
	if (step == 0)
		for (int i = 0; i < 8; i++)
			cudaMalloc(&optimizer_state[i], (size_t)(32 + 16 * i) * MiB);
}

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			      unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);

static CUmemGenericAllocationHandle comm_buffer;

STEP static void init_communicator(void)
{
	create_fn create = NULL;
	enum cudaDriverEntryPointQueryResult st;
	if (cudaGetDriverEntryPoint("cuMemCreate", (void **)&create, 0, &st) != cudaSuccess ||
	    !create)
		return;
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	create(&comm_buffer, 64 * MiB, &prop, 0);
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 50;
	void *staging = NULL;
	load_model();
	init_communicator();
	cudaHostAlloc(&staging, 32 * MiB, 0);
	void *acts[8];
	for (int step = 0; step < steps; step++) {
		int batch = step < 5 ? 8 << step : 64; /* warm-up ramps the batch */
		forward(acts, batch);
		backward(acts, batch);
		optimizer_step(step);
	}
	printf("trained %d steps; the cache holds %d blocks\n", steps, ncache);
	cache_empty();
	cudaFreeHost(staging);
	/* The weights and optimizer state stay live to the end, like a model
	 * that is still loaded when the process exits. */
	return 0;
}
