/* libfakeblas.so: a library built like cuBLAS. It embeds the static CUDA
 * runtime (libcudart_static.a), so it exports only its own fakeblas_*
 * functions, needs no libcudart and has no undefined cuda* symbol. Its
 * cudaMalloc is invisible to an interposer: the allocation is seen only as
 * the driver call the embedded runtime reaches through dlsym and
 * cuGetProcAddress (cuMemAlloc_v2). */
#include <stddef.h>

#include "sim-cuda.h"

#define FAKEBLAS_API	__attribute__((visibility("default")))
#define WORKSPACE_BYTES (4u << 20)

struct fakeblas {
	void *workspace;
	size_t size;
};

FAKEBLAS_API int fakeblas_create(struct fakeblas **out);
FAKEBLAS_API int fakeblas_destroy(struct fakeblas *h);
FAKEBLAS_API size_t fakeblas_workspace_size(const struct fakeblas *h);

static struct fakeblas the_handle;

/* Like cublasCreate: the workspace is allocated on the current device. */
FAKEBLAS_API int fakeblas_create(struct fakeblas **out)
{
	cudaError_t e = cudaMalloc(&the_handle.workspace, WORKSPACE_BYTES);
	if (e != cudaSuccess)
		return (int)e;
	the_handle.size = WORKSPACE_BYTES;
	*out = &the_handle;
	return 0;
}

FAKEBLAS_API int fakeblas_destroy(struct fakeblas *h)
{
	return (int)cudaFree(h->workspace);
}

FAKEBLAS_API size_t fakeblas_workspace_size(const struct fakeblas *h)
{
	return h->size;
}
