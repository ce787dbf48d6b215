/* libearly.so: CUDA calls from a library constructor, before main and
 * possibly before the tracer's own constructor (a preloaded library's
 * constructor runs after those of the libraries the program links).
 *   - cuMemAlloc_v2 through dlsym before anyone called cuInit: fails 3;
 *   - cudaMalloc 1 MiB + cudaFree. */
#include <dlfcn.h>
#include <stdio.h>

#include "sim-cuda.h"

int early_status;

__attribute__((constructor)) static void early_init(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	CUresult (*alloc)(CUdeviceptr *, size_t) = h ? dlsym(h, "cuMemAlloc_v2") : NULL;
	if (!alloc) {
		early_status = 1;
		return;
	}
	CUdeviceptr d = 0;
	CUresult r = alloc(&d, 4096);
	printf("constructor: cuMemAlloc_v2 before cuInit = %d\n", r);
	void *p = NULL;
	cudaError_t e1 = cudaMalloc(&p, 1u << 20);
	cudaError_t e2 = cudaFree(p);
	printf("constructor: cudaMalloc = %d, cudaFree = %d\n", e1, e2);
	early_status = r != CUDA_ERROR_NOT_INITIALIZED || e1 || e2;
}
