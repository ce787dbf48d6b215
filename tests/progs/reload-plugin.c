/* A plugin linked against the runtime, opened, used, closed and opened again
 * by reload-main (t-reload): closing it unloads the runtime with it. */
#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

int plugin_alloc_free(int n, size_t size); /* found with dlsym */
/* n cudaMalloc/cudaFree pairs of `size` bytes; the number that failed. */
int plugin_alloc_free(int n, size_t size)
{
	int failures = 0;
	for (int i = 0; i < n; i++) {
		void *p = NULL;
		cudaError_t a = cudaMalloc(&p, size);
		cudaError_t f = cudaFree(p);
		failures += a != cudaSuccess || f != cudaSuccess || !p;
	}
	return failures;
}
