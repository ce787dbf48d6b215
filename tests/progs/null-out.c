/* NULL out-parameters: each call below passes NULL where the API writes its
 * result. The driver and the runtime answer CUDA_ERROR_INVALID_VALUE /
 * cudaErrorInvalidValue; the tracer must pass the NULL through and the same
 * answer back, without touching the NULL itself. Then one good allocation,
 * so the process has a trace even if the failures were not recorded.
 * Calls: cuInit, cuDevicePrimaryCtxRetain(NULL), cuCtxCreate_v2(NULL),
 * cuDevicePrimaryCtxRetain (good), cuCtxSetCurrent, cuMemAlloc_v2(NULL),
 * cuMemGetInfo_v2(NULL, NULL), cuMemCreate(NULL), cuMemAddressReserve(NULL),
 * cuGetProcAddress_v2(pfn NULL), cuGetProcAddress(pfn NULL),
 * cudaMalloc(NULL), cudaMallocHost(NULL), cudaMalloc 1 MiB + cudaFree. */
#include "progs.h"

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(cuInit(0), CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuCtxCreate_v2(NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CUcontext ctx;
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	CHECK(cuMemAlloc_v2(NULL, 1 * MiB), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemGetInfo_v2(NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	CUmemAllocationProp prop = {0};
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	size_t gran = 0;
	CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
	      CUDA_SUCCESS);
	CHECK(cuMemCreate(NULL, gran, &prop, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemAddressReserve(NULL, gran, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CUdriverProcAddressQueryResult st = 99;
	CHECK(cuGetProcAddress_v2("cuMemAlloc", NULL, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuGetProcAddress("cuMemAlloc", NULL, 12000, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK(cudaMalloc(NULL, 1 * MiB), cudaErrorInvalidValue);
	CHECK(cudaMallocHost(NULL, 1 * MiB), cudaErrorInvalidValue);
	void *p;
	CHECK(cudaMalloc(&p, 1 * MiB), cudaSuccess);
	CHECK(cudaFree(p), cudaSuccess);
	return prog_exit("null-out");
}
