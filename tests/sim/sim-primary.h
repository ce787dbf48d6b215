/* The usual start of the programs that call the driver directly (tests and
 * benchmarks): device 0's primary context, current on the calling thread. */
#ifndef SIM_PRIMARY_H
#define SIM_PRIMARY_H

#include "sim-cuda.h"

/* 0 on success, -1 if any step failed. */
static inline int sim_use_primary_context(void)
{
	CUdevice dev;
	CUcontext ctx;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
		return -1;
	return 0;
}

#endif
