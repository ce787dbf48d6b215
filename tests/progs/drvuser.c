/* libdrvuser.so: linked against the driver itself, and loaded RTLD_LOCAL by
 * late-driver after the driver was first looked for and missing. */
#include "common/cuda-types.h"

CUresult cuInit(unsigned int flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size);
CUresult cuMemFree_v2(CUdeviceptr dptr);

int drvuser_alloc_free(int n); /* found with dlsym */
int drvuser_alloc_free(int n)
{
	CUcontext ctx;
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx))
		return -1;
	int failures = 0;
	for (int i = 0; i < n; i++) {
		CUdeviceptr p = 0;
		failures += cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS;
		failures += cuMemFree_v2(p) != CUDA_SUCCESS;
	}
	return failures;
}
