/* NVML (libnvidia-ml.so.1), opened with dlopen on first use: device memory
 * as nvidia-smi sees it. NVML never touches a CUDA context, so any thread
 * may ask, the program's included.
 *
 * Our own declarations of the few NVML types and functions we call, written
 * from NVIDIA's public NVML reference; tests/cuda-decls/nvml-check.c checks
 * them against nvml.h where a toolkit ships it. Names are NVML's. */
#ifndef GMT_NVML_H
#define GMT_NVML_H

#include <stdint.h>

/* ---- NVML's own declarations ---- */
#ifndef GMT_NVML_TOOLKIT_TYPES /* tests/cuda-decls/nvml-check.c: nvml.h's instead */
typedef enum nvmlReturn_enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct nvmlMemory_st {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

/* nvmlDeviceGetComputeRunningProcesses (unversioned) fills these. */
typedef struct nvmlProcessInfo_v1_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* ..._v2 fills these; ..._v3 fills nvmlProcessInfo_t, the same layout. */
typedef struct nvmlProcessInfo_v2_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

typedef struct nvmlProcessInfo_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_VALUE_NOT_AVAILABLE	((unsigned long long)-1)
#endif

/* X(name, params): every NVML function the tracer calls. */
/* clang-format off */
#define GMT_NVML_FUNCS(X)                                                                          \
	X(nvmlInit_v2, (void))                                                                     \
	X(nvmlDeviceGetCount_v2, (unsigned int *deviceCount))                                      \
	X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device))               \
	X(nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length))               \
	X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t *memory))                    \
	X(nvmlDeviceGetComputeRunningProcesses_v3,                                                 \
	  (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos))                \
	X(nvmlDeviceGetComputeRunningProcesses_v2,                                                 \
	  (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))             \
	X(nvmlDeviceGetComputeRunningProcesses,                                                    \
	  (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))
/* clang-format on */

/* ---- the tracer's view ---- */
#define GMT_NVML_MAX_DEVICES 64

struct gmt_nvml_reading {
	uint64_t used_bytes, total_bytes;
	uint64_t process_used_bytes; /* valid when process_known */
	uint8_t uuid[16];	     /* CUDA's byte order (cuDeviceGetUuid) */
	int process_known;
};

/* 1 once NVML is loaded and initialized. The first caller loads it; a caller
 * arriving while another thread loads it gets 0 at once (never waits: the
 * loader may hold locks our caller needs). If NVML is missing or fails,
 * one NOTE says so and every later call returns 0. */
int gmt_nvml_ready(void);
/* 1 once gmt_nvml_ready has settled (either way). */
int gmt_nvml_settled(void);

unsigned gmt_nvml_device_count(void);
/* Reads NVML device `index`. Returns 0, or -1 if NVML could not. */
int gmt_nvml_read(unsigned index, struct gmt_nvml_reading *out);
/* The NVML index of the device with this CUDA UUID, or -1. */
int gmt_nvml_index_of_uuid(const uint8_t uuid[16]);
/* The process just created a context (the call succeeded) and `after` was
 * read on its device: if NVML still does not list our pid (a container's
 * pid namespace), pid matching cannot work and process usage is unknown
 * from then on (one NOTE). Returns 1 when process usage is not to be used. */
int gmt_nvml_context_made(const struct gmt_nvml_reading *after);

#endif
