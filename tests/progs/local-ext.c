/* An "extension module": linked against the runtime, loaded RTLD_LOCAL by
 * local-main the way Python loads PyTorch's and CuPy's extensions. */
#include <stdio.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

int ext_alloc_free(int n); /* found with dlsym */
int ext_alloc_free(int n)
{
	int failures = 0;
	for (int i = 0; i < n; i++) {
		void *p = NULL;
		cudaError_t a = cudaMalloc(&p, (size_t)1 << 20);
		cudaError_t f = cudaFree(p);
		failures += a != cudaSuccess || f != cudaSuccess || !p;
	}
	return failures;
}
