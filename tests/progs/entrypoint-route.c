/* The cudaGetDriverEntryPoint route, as PyTorch's expandable segments and
 * NCCL use it: driver VMM functions fetched through the runtime (all four
 * forms: plain, ByVersion, and their _ptsz variants), then called.
 *
 * Calls made through the fetched pointers (what the integration test counts):
 *   cuMemAddressReserve 8 MiB; cuMemCreate 2 MiB x2 (device 0);
 *   cuMemMap x2; cuMemSetAccess; cuMemUnmap x1 (the whole 4 MiB);
 *   cuMemRelease x2; cuMemAddressFree;
 *   cuMemAllocAsync_ptsz 1 MiB + cuMemFreeAsync_ptsz.
 * Peak device bytes 4 MiB. */
#include <dlfcn.h>
#include <stdint.h>

#include "progs.h"

static void *h; /* libcuda, to compare the pointers with */

/* fetch(call, expected ELF name): one entry-point query that must succeed
 * and answer what dlsym of that exported name answers. */
#define FETCH(call, expected) fetch_((call), #call, expected)

static void *fetched;
static enum cudaDriverEntryPointQueryResult status;

static void *fetch_(cudaError_t e, const char *what, const char *expected)
{
	printf("%s = %d, status %d\n", what, e, status);
	void *want = dlsym(h, expected);
	printf("  is dlsym(%s): %s\n", expected, fetched && fetched == want ? "yes" : "NO");
	if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || !fetched ||
	    fetched != want)
		prog_failures++;
	return fetched;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int n;
	CHECK(cudaGetDeviceCount(&n), cudaSuccess); /* initialises the runtime */
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 1;

	CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			   unsigned long long) =
	    FETCH(cudaGetDriverEntryPoint("cuMemCreate", &fetched, cudaEnableDefault, &status),
		  "cuMemCreate");
	CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
			unsigned long long) =
	    FETCH(cudaGetDriverEntryPointByVersion("cuMemMap", &fetched, 12050, cudaEnableDefault,
						   &status),
		  "cuMemMap");
	CUresult (*unmap)(CUdeviceptr, size_t) =
	    FETCH(cudaGetDriverEntryPoint_ptsz("cuMemUnmap", &fetched, cudaEnableDefault, &status),
		  "cuMemUnmap");
	CUresult (*release)(CUmemGenericAllocationHandle) =
	    FETCH(cudaGetDriverEntryPointByVersion_ptsz("cuMemRelease", &fetched, 12050,
							cudaEnableDefault, &status),
		  "cuMemRelease");
	CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) = FETCH(
	    cudaGetDriverEntryPointByVersion("cuMemAddressReserve", &fetched, 12000, 0, &status),
	    "cuMemAddressReserve");
	CUresult (*addr_free)(CUdeviceptr, size_t) = FETCH(
	    cudaGetDriverEntryPoint("cuMemAddressFree", &fetched, 0, &status), "cuMemAddressFree");
	CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t) = FETCH(
	    cudaGetDriverEntryPoint("cuMemSetAccess", &fetched, 0, &status), "cuMemSetAccess");
	CUresult (*granularity)(size_t *, const CUmemAllocationProp *,
				CUmemAllocationGranularity_flags) =
	    FETCH(cudaGetDriverEntryPoint("cuMemGetAllocationGranularity", &fetched, 0, &status),
		  "cuMemGetAllocationGranularity");
	/* Per-thread default stream: explicitly, and as the _ptsz default. */
	CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream) =
	    FETCH(cudaGetDriverEntryPoint("cuMemAllocAsync", &fetched,
					  cudaEnablePerThreadDefaultStream, &status),
		  "cuMemAllocAsync_ptsz");
	CUresult (*free_async)(CUdeviceptr, CUstream) = FETCH(
	    cudaGetDriverEntryPoint_ptsz("cuMemFreeAsync", &fetched, cudaEnableDefault, &status),
	    "cuMemFreeAsync_ptsz");
	FETCH(cudaGetDriverEntryPoint("cuMemFreeAsync", &fetched, cudaEnableDefault, &status),
	      "cuMemFreeAsync");

	/* Misses are reported in the status, with a NULL pointer. */
	fetched = (void *)1;
	CHECK(cudaGetDriverEntryPoint("cuNoSuchFunction", &fetched, 0, &status), cudaSuccess);
	CHECK(status, cudaDriverEntryPointSymbolNotFound);
	EXPECT(fetched == NULL);
	CHECK(cudaGetDriverEntryPointByVersion("cuMemCreate", &fetched, 10000, 0, &status),
	      cudaSuccess);
	CHECK(status, cudaDriverEntryPointVersionNotSufficent);

	/* Expandable segments: reserve, create, map, access, then undo. */
	CUmemAllocationProp prop = {0};
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, 0};
	CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0},
			       CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	size_t gran = 0;
	CUdeviceptr va;
	CUmemGenericAllocationHandle s0, s1;
	CHECK(granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), CUDA_SUCCESS);
	printf("granularity = %zu\n", gran);
	CHECK(reserve(&va, 4 * gran, 0, 0, 0), CUDA_SUCCESS);
	CHECK(create(&s0, gran, &prop, 0), CUDA_SUCCESS);
	CHECK(create(&s1, gran, &prop, 0), CUDA_SUCCESS);
	CHECK(map(va, gran, 0, s0, 0), CUDA_SUCCESS);
	CHECK(map(va + gran, gran, 0, s1, 0), CUDA_SUCCESS);
	CHECK(set_access(va, 2 * gran, &acc, 1), CUDA_SUCCESS);
	CHECK(unmap(va, 2 * gran), CUDA_SUCCESS);
	CHECK(release(s0), CUDA_SUCCESS);
	CHECK(release(s1), CUDA_SUCCESS);
	CHECK(addr_free(va, 4 * gran), CUDA_SUCCESS);

	CUdeviceptr d;
	CHECK(alloc_async(&d, 1 * MiB, NULL), CUDA_SUCCESS);
	CHECK(free_async(d, NULL), CUDA_SUCCESS);
	return prog_exit("entrypoint-route");
}
