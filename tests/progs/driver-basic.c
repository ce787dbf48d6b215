/* Every family of driver allocation calls, linked against libcuda.so.1.
 *
 * usage: driver-basic [family...]   (none: all, in this order)
 *   preinit malloc managed host async pool vmm array ipc oom errors
 *
 * The context is set up between preinit and the rest, whatever is chosen.
 * What each family calls (the integration tests count exactly this):
 *   preinit  cuMemAlloc_v2 before cuInit (fails 3), and after cuInit with
 *            no current context (fails 201)
 *   malloc   cuMemAlloc_v2 1 MiB, 3000 B; cuMemAllocPitch_v2 1000 x 100
 *            (pitch 1024: 102400 B); cuMemFree_v2 x3
 *   managed  cuMemAllocManaged 10000 B; cuMemFree_v2
 *   host     cuMemAllocHost_v2 8192; cuMemHostAlloc 12288; cuMemFreeHost x2;
 *            cuMemHostRegister_v2 65536; cuMemHostUnregister
 *   async    cuMemAllocAsync 2 MiB; cuMemAllocAsync_ptsz 4 MiB;
 *            cuMemFreeAsync; cuMemFreeAsync_ptsz
 *   pool     cuMemPoolCreate; cuMemAllocFromPoolAsync 1 MiB;
 *            cuMemAllocFromPoolAsync_ptsz 3 MiB; cuMemFreeAsync;
 *            cuMemFreeAsync_ptsz; cuMemPoolTrimTo; cuMemPoolDestroy
 *   vmm      cuMemCreate 4 MiB device (h1), 2 MiB host (hh); reserve 8 MiB;
 *            map h1 and hh; retain h1 by address + release; release h1
 *            while mapped; cuMemCreate 2 MiB device (h2): 6 MiB of device
 *            memory now; unmap both; release hh, h2; cuMemAddressFree;
 *            cuMemCreate 2 MiB exportable (hx); export; import (hi);
 *            release hi, hx.  cuMemCreate x4 (10 MiB, 8 MiB on the
 *            device), cuMemRelease x6, peak device bytes 6 MiB.
 *   array    cuArrayCreate_v2 256 x 128 float (131072 B);
 *            cuArray3DCreate_v2 64 x 32 x 8 uchar4 (65536 B); cuArrayDestroy x2
 *   ipc      cuMemAlloc_v2 2 MiB; cuIpcGetMemHandle; cuIpcOpenMemHandle_v2;
 *            cuIpcCloseMemHandle; cuMemFree_v2
 *   oom      cuMemAlloc_v2 of the whole capacity + 1 byte (fails 2,
 *            pointer untouched)
 *   errors   failing calls only: cuMemFree_v2 and cuMemFreeHost of unknown
 *            pointers, cuMemCreate of 3 MiB (not a granularity multiple),
 *            cuArrayDestroy of an unknown array, NULL out-parameters */
#include <stdint.h>
#include <unistd.h>

#include "progs.h"

static void fam_preinit(void)
{
	CUdeviceptr d = 0;
	CHECK(cuMemAlloc_v2(&d, 4096), CUDA_ERROR_NOT_INITIALIZED);
	CHECK(cuInit(0), CUDA_SUCCESS);
	CHECK(cuMemAlloc_v2(&d, 4096), CUDA_ERROR_INVALID_CONTEXT);
}

static void setup(void)
{
	CUdevice dev;
	CUcontext ctx, own;
	char name[64];
	int n;
	CHECK(cuInit(0), CUDA_SUCCESS);
	CHECK(cuDeviceGetCount(&n), CUDA_SUCCESS);
	CHECK(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	CHECK(cuDeviceGetName(name, sizeof name, dev), CUDA_SUCCESS);
	printf("device 0: %s\n", name);
	/* A context of its own, created and destroyed, then the primary one. */
	CHECK(cuCtxCreate_v2(&own, 0, dev), CUDA_SUCCESS);
	CHECK(cuCtxDestroy_v2(own), CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
}

static void fam_malloc(void)
{
	CUdeviceptr a, b, p;
	size_t pitch = 0;
	CHECK(cuMemAlloc_v2(&a, 1 * MiB), CUDA_SUCCESS);
	CHECK(cuMemAlloc_v2(&b, 3000), CUDA_SUCCESS);
	CHECK(cuMemAllocPitch_v2(&p, &pitch, 1000, 100, 4), CUDA_SUCCESS);
	printf("pitch = %zu\n", pitch);
	EXPECT(a % 512 == 0 && b % 512 == 0 && p % 512 == 0);
	CHECK(cuMemFree_v2(b), CUDA_SUCCESS);
	CHECK(cuMemFree_v2(a), CUDA_SUCCESS);
	CHECK(cuMemFree_v2(p), CUDA_SUCCESS);
}

static void fam_managed(void)
{
	CUdeviceptr m;
	CHECK(cuMemAllocManaged(&m, 10000, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	memset((void *)(uintptr_t)m, 0x5a, 10000);
	EXPECT(((unsigned char *)(uintptr_t)m)[9999] == 0x5a);
	CHECK(cuMemFree_v2(m), CUDA_SUCCESS);
}

static void fam_host(void)
{
	char *h1, *h2;
	void *buf = aligned_alloc(4096, 65536);
	CHECK(cuMemAllocHost_v2((void **)&h1, 8192), CUDA_SUCCESS);
	CHECK(cuMemHostAlloc((void **)&h2, 12288, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
	h1[8191] = 1;
	h2[12287] = 2;
	EXPECT(h1[8191] == 1 && h2[12287] == 2);
	CHECK(cuMemFreeHost(h1), CUDA_SUCCESS);
	CHECK(cuMemFreeHost(h2), CUDA_SUCCESS);
	CHECK(cuMemHostRegister_v2(buf, 65536, 0), CUDA_SUCCESS);
	CHECK(cuMemHostUnregister(buf), CUDA_SUCCESS);
	free(buf);
}

static void fam_async(void)
{
	CUdeviceptr a, b;
	CHECK(cuMemAllocAsync(&a, 2 * MiB, NULL), CUDA_SUCCESS);
	CHECK(cuMemAllocAsync_ptsz(&b, 4 * MiB, NULL), CUDA_SUCCESS);
	CHECK(cuMemFreeAsync(a, NULL), CUDA_SUCCESS);
	CHECK(cuMemFreeAsync_ptsz(b, NULL), CUDA_SUCCESS);
}

static void fam_pool(void)
{
	CUmemPoolProps props = {0};
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, 0};
	CUmemoryPool pool;
	CUdeviceptr c, d;
	CHECK(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
	CHECK(cuMemAllocFromPoolAsync(&c, 1 * MiB, pool, NULL), CUDA_SUCCESS);
	CHECK(cuMemAllocFromPoolAsync_ptsz(&d, 3 * MiB, pool, NULL), CUDA_SUCCESS);
	CHECK(cuMemFreeAsync(c, NULL), CUDA_SUCCESS);
	CHECK(cuMemFreeAsync_ptsz(d, NULL), CUDA_SUCCESS);
	CHECK(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
	CHECK(cuMemPoolDestroy(pool), CUDA_SUCCESS);
}

static size_t free_bytes(void)
{
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	return f;
}

static void fam_vmm(void)
{
	CUmemAllocationProp dev = {0}, host = {0}, shared = {0};
	dev.type = host.type = shared.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	dev.location = shared.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, 0};
	host.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_HOST, 0};
	shared.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0},
			       CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	size_t gran = 0;
	CUmemGenericAllocationHandle h1, hh, h2, r, hx, hi;
	CUdeviceptr va;

	CHECK(cuMemGetAllocationGranularity(&gran, &dev, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
	      CUDA_SUCCESS);
	printf("granularity = %zu\n", gran);
	size_t free0 = free_bytes();
	CHECK(cuMemCreate(&h1, 4 * MiB, &dev, 0), CUDA_SUCCESS);
	CHECK(cuMemCreate(&hh, 2 * MiB, &host, 0), CUDA_SUCCESS);
	EXPECT(free0 - free_bytes() == 4 * MiB); /* host memory holds no capacity */
	CHECK(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0), CUDA_SUCCESS);
	EXPECT(va % (2 * MiB) == 0);
	CHECK(cuMemMap(va, 4 * MiB, 0, h1, 0), CUDA_SUCCESS);
	CHECK(cuMemMap(va + 4 * MiB, 2 * MiB, 0, hh, 0), CUDA_SUCCESS);
	CHECK(cuMemSetAccess(va, 4 * MiB, &acc, 1), CUDA_SUCCESS);
	CHECK(cuMemRetainAllocationHandle(&r, (void *)(uintptr_t)(va + 4096)), CUDA_SUCCESS);
	EXPECT(r == h1);
	CHECK(cuMemRelease(r), CUDA_SUCCESS);
	CHECK(cuMemRelease(h1), CUDA_SUCCESS);
	EXPECT(free0 - free_bytes() == 4 * MiB); /* still mapped: still held */
	CHECK(cuMemCreate(&h2, 2 * MiB, &dev, 0), CUDA_SUCCESS);
	EXPECT(free0 - free_bytes() == 6 * MiB);
	CHECK(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
	EXPECT(free0 - free_bytes() == 2 * MiB); /* last unmap after release frees */
	CHECK(cuMemUnmap(va + 4 * MiB, 2 * MiB), CUDA_SUCCESS);
	CHECK(cuMemRelease(hh), CUDA_SUCCESS);
	CHECK(cuMemRelease(h2), CUDA_SUCCESS);
	CHECK(cuMemAddressFree(va, 8 * MiB), CUDA_SUCCESS);
	EXPECT(free_bytes() == free0);

	int fd = -1;
	CHECK(cuMemCreate(&hx, 2 * MiB, &shared, 0), CUDA_SUCCESS);
	CHECK(cuMemExportToShareableHandle(&fd, hx, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
	      CUDA_SUCCESS);
	CHECK(cuMemImportFromShareableHandle(&hi, (void *)(intptr_t)fd,
					     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
	      CUDA_SUCCESS);
	EXPECT(hi != hx);
	CHECK(cuMemRelease(hi), CUDA_SUCCESS);
	CHECK(cuMemRelease(hx), CUDA_SUCCESS);
	close(fd);
	EXPECT(free_bytes() == free0);
}

static void fam_array(void)
{
	CUDA_ARRAY_DESCRIPTOR d2 = {256, 128, CU_AD_FORMAT_FLOAT, 1};
	CUDA_ARRAY3D_DESCRIPTOR d3 = {64, 32, 8, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
	CUarray a, b;
	CHECK(cuArrayCreate_v2(&a, &d2), CUDA_SUCCESS);
	CHECK(cuArray3DCreate_v2(&b, &d3), CUDA_SUCCESS);
	CHECK(cuArrayDestroy(a), CUDA_SUCCESS);
	CHECK(cuArrayDestroy(b), CUDA_SUCCESS);
}

static void fam_ipc(void)
{
	CUdeviceptr d, o;
	CUipcMemHandle h;
	CHECK(cuMemAlloc_v2(&d, 2 * MiB), CUDA_SUCCESS);
	CHECK(cuIpcGetMemHandle(&h, d), CUDA_SUCCESS);
	CHECK(cuIpcOpenMemHandle_v2(&o, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
	EXPECT(o != d);
	CHECK(cuIpcCloseMemHandle(o), CUDA_SUCCESS);
	CHECK(cuMemFree_v2(d), CUDA_SUCCESS);
}

static void fam_oom(void)
{
	size_t f, total;
	CUdeviceptr d = 0x5e5e5e5e;
	CHECK(cuMemGetInfo_v2(&f, &total), CUDA_SUCCESS);
	CHECK(cuMemAlloc_v2(&d, total + 1), CUDA_ERROR_OUT_OF_MEMORY);
	EXPECT(d == 0x5e5e5e5e); /* a failed allocation leaves *dptr alone */
}

static void fam_errors(void)
{
	int local;
	size_t t;
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp dev = {0};
	dev.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	dev.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, 0};
	CHECK(cuMemFree_v2((uintptr_t)&local), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemFreeHost(&local), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemCreate(&h, 3 * MiB, &dev, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuArrayDestroy((CUarray)&local), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemAlloc_v2(NULL, 4096), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemGetInfo_v2(NULL, &t), CUDA_ERROR_INVALID_VALUE);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} families[] = {
	    {"preinit", fam_preinit}, {"malloc", fam_malloc}, {"managed", fam_managed},
	    {"host", fam_host},	      {"async", fam_async},   {"pool", fam_pool},
	    {"vmm", fam_vmm},	      {"array", fam_array},   {"ipc", fam_ipc},
	    {"oom", fam_oom},	      {"errors", fam_errors},
	};
	const size_t nfam = sizeof families / sizeof families[0];
	const char *names[sizeof families / sizeof families[0]];
	for (size_t i = 0; i < nfam; i++)
		names[i] = families[i].name;
	check_families(argc, argv, names, nfam);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < nfam; i++) {
		if (i == 1)
			setup();
		if (wanted(argc, argv, families[i].name)) {
			printf("-- %s\n", families[i].name);
			families[i].fn();
		}
	}
	return prog_exit("driver-basic");
}
