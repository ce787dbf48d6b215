/* The library's peak watch against summary's peak (t-peak-agree.sh),
 * linked to the driver:
 *   1. cuInit, the primary context of device 0 retained and made current;
 *   2. cuMemCreate 64 MiB located on the host (not device memory) and
 *      16 MiB on device 0 (hd); reserve 32 MiB, map hd, cuMemRelease hd
 *      while it is mapped: its 16 MiB stay held; a pause;
 *   3. cuMemAlloc_v2 8 MiB: 24 MiB of device memory, the peak; a pause
 *      (PEAK_AGREE_PAUSE_MS, default 400) so the flush thread sees the new
 *      high and the sampler takes its PEAK sample;
 *   4. cuMemUnmap (hd's memory goes), cuMemFree_v2, cuMemRelease of the
 *      host handle, cuMemAddressFree. */
#include <stdint.h>
#include <time.h>

#include "progs.h"

static void pause_ms(void)
{
	const char *s = getenv("PEAK_AGREE_PAUSE_MS");
	long ms = s ? atol(s) : 400;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static size_t free_bytes(void)
{
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	return f;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CUdevice dev;
	CUcontext primary;
	CHECK(cuInit(0), CUDA_SUCCESS);
	CHECK(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(primary), CUDA_SUCCESS);

	CUmemAllocationProp on_dev = {0}, on_host = {0};
	on_dev.type = on_host.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	on_dev.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, 0};
	on_host.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_HOST, 0};
	CUmemGenericAllocationHandle hh, hd;
	CUdeviceptr va, p;
	size_t free0 = free_bytes();
	CHECK(cuMemCreate(&hh, 64 * MiB, &on_host, 0), CUDA_SUCCESS);
	CHECK(cuMemCreate(&hd, 16 * MiB, &on_dev, 0), CUDA_SUCCESS);
	CHECK(cuMemAddressReserve(&va, 32 * MiB, 0, 0, 0), CUDA_SUCCESS);
	CHECK(cuMemMap(va, 16 * MiB, 0, hd, 0), CUDA_SUCCESS);
	CHECK(cuMemRelease(hd), CUDA_SUCCESS);
	EXPECT(free0 - free_bytes() == 16 * MiB); /* released but mapped: held */
	pause_ms();

	CHECK(cuMemAlloc_v2(&p, 8 * MiB), CUDA_SUCCESS);
	EXPECT(free0 - free_bytes() == 24 * MiB);
	pause_ms();

	CHECK(cuMemUnmap(va, 16 * MiB), CUDA_SUCCESS);
	EXPECT(free0 - free_bytes() == 8 * MiB);
	CHECK(cuMemFree_v2(p), CUDA_SUCCESS);
	CHECK(cuMemRelease(hh), CUDA_SUCCESS);
	CHECK(cuMemAddressFree(va, 32 * MiB), CUDA_SUCCESS);
	EXPECT(free_bytes() == free0);
	CHECK(cuDevicePrimaryCtxRelease_v2(dev), CUDA_SUCCESS);
	return prog_exit("peak-agree");
}
