/* What the simulated driver shares with the simulated NVML (tests/sim/nvml.c),
 * which finds it in the same process with dlopen(RTLD_NOLOAD) + dlsym, as a
 * real NVML asks the kernel driver. */
#ifndef SIM_NVML_H
#define SIM_NVML_H

#include <stddef.h>

struct simcuda_usage {
	size_t allocated; /* device bytes allocations hold, whole pages as nvidia-smi counts */
	size_t contexts;  /* what the live contexts cost (SIMCUDA_CTX_BYTES each) */
	size_t modules;	  /* code of the loaded modules (cuModuleLoadData, lazily) */
};

/* 0, or -1 before cuInit or for a bad device. */
typedef int (*simcuda_usage_fn)(int dev, struct simcuda_usage *out);
int simcuda_usage(int dev, struct simcuda_usage *out);

/* cuDeviceGetUuid's 16 bytes: "SIMCUDA-GPU-00NN", NN the ordinal. */
static inline void sim_uuid_bytes(int dev, char out[16])
{
	static const char base[] = "SIMCUDA-GPU-0000";
	for (int i = 0; i < 16; i++)
		out[i] = base[i];
	out[15] = (char)('0' + dev % 10);
	out[14] = (char)('0' + dev / 10);
}

#endif
