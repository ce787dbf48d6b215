/* Device accounting through the driver, linked directly (tests/integration
 * t-nvml-*.sh check its trace against known answers):
 *   1. cuInit, the primary context of device 0 retained and made current;
 *   2. three 64 MiB cuMemAlloc_v2, then a pause (ACCOUNTING_PAUSE_MS,
 *      default 400) so the flush thread sees the new high and the sampler
 *      takes PEAK and periodic samples;
 *   3. a cuMemAlloc_v2 larger than the device: out of memory, then a pause
 *      for the OOM sample;
 *   4. cuCtxCreate_v2 + cuCtxDestroy_v2, then cuCtxCreate_v4 and _v3 found
 *      with cuGetProcAddress + cuCtxDestroy_v2 (a context made current is
 *      replaced by the primary again);
 *   5. everything freed, the primary context released and reset.
 * Totals: 3 x 64 MiB live at the peak; contexts: 1 retain, 3 creates,
 * 3 destroys, 1 release, 1 reset. */
#include <time.h>

#include "progs.h"

static void pause_ms(void)
{
	const char *s = getenv("ACCOUNTING_PAUSE_MS");
	long ms = s ? atol(s) : 400;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CUdevice dev;
	CUcontext primary, own;
	CUdeviceptr p[3], huge;
	CHECK(cuInit(0), CUDA_SUCCESS);
	CHECK(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(primary), CUDA_SUCCESS);
	for (int i = 0; i < 3; i++)
		CHECK(cuMemAlloc_v2(&p[i], 64 * MiB), CUDA_SUCCESS);
	pause_ms();
	CHECK(cuMemAlloc_v2(&huge, (size_t)1 << 50), CUDA_ERROR_OUT_OF_MEMORY);
	pause_ms();

	CHECK(cuCtxCreate_v2(&own, 0, dev), CUDA_SUCCESS);
	CHECK(cuCtxDestroy_v2(own), CUDA_SUCCESS);
	CUresult (*create_v4)(CUcontext *, CUctxCreateParams *, unsigned, CUdevice) = NULL;
	CUresult (*create_v3)(CUcontext *, CUexecAffinityParam *, int, unsigned, CUdevice) = NULL;
	CHECK(cuGetProcAddress_v2("cuCtxCreate", (void **)&create_v4, 12050, 0, NULL),
	      CUDA_SUCCESS);
	CHECK(cuGetProcAddress_v2("cuCtxCreate", (void **)&create_v3, 11040, 0, NULL),
	      CUDA_SUCCESS);
	CHECK(create_v4(&own, NULL, 0, dev), CUDA_SUCCESS);
	CHECK(cuCtxDestroy_v2(own), CUDA_SUCCESS);
	CHECK(create_v3(&own, NULL, 0, 0, dev), CUDA_SUCCESS);
	CHECK(cuCtxDestroy_v2(own), CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(primary), CUDA_SUCCESS);

	for (int i = 0; i < 3; i++)
		CHECK(cuMemFree_v2(p[i]), CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRelease_v2(dev), CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxReset_v2(dev), CUDA_SUCCESS);
	return prog_exit("accounting");
}
