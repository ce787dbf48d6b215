/* preload/nvml.h against the toolkit's nvml.h (t-nvml-decls.sh): compiled once
 * with our header (-DGMT_NVML_OURS) and once with nvml.h, each defining its
 * own table of sizes, offsets and constants; main (in the nvml.h build)
 * compares them. The nvml.h build also checks every prototype in
 * GMT_NVML_FUNCS against nvml.h's own. */
#include <stddef.h>
#include <stdio.h>

#ifdef GMT_NVML_OURS
#include "preload/nvml.h"
#define TABLE ours
#else
/* The legacy names as themselves, not as macros for their newest forms. */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>
#define GMT_NVML_TOOLKIT_TYPES
#include "preload/nvml.h"
#define TABLE theirs
#endif

/* clang-format off */
#define FACTS(X)                                                                                   \
	X(sizeof(nvmlReturn_t)) X(NVML_SUCCESS) X(NVML_ERROR_UNINITIALIZED)                        \
	X(NVML_ERROR_INVALID_ARGUMENT) X(NVML_ERROR_NOT_SUPPORTED) X(NVML_ERROR_NO_PERMISSION)     \
	X(NVML_ERROR_NOT_FOUND) X(NVML_ERROR_INSUFFICIENT_SIZE) X(NVML_ERROR_DRIVER_NOT_LOADED)    \
	X(NVML_ERROR_LIBRARY_NOT_FOUND) X(NVML_ERROR_FUNCTION_NOT_FOUND) X(NVML_ERROR_GPU_IS_LOST) \
	X(NVML_ERROR_UNKNOWN)                                                                      \
	X(sizeof(nvmlMemory_t)) X(offsetof(nvmlMemory_t, total)) X(offsetof(nvmlMemory_t, free))   \
	X(offsetof(nvmlMemory_t, used))                                                            \
	X(sizeof(nvmlProcessInfo_v1_t)) X(offsetof(nvmlProcessInfo_v1_t, pid))                     \
	X(offsetof(nvmlProcessInfo_v1_t, usedGpuMemory))                                           \
	X(sizeof(nvmlProcessInfo_v2_t)) X(offsetof(nvmlProcessInfo_v2_t, pid))                     \
	X(offsetof(nvmlProcessInfo_v2_t, usedGpuMemory))                                           \
	X(offsetof(nvmlProcessInfo_v2_t, gpuInstanceId))                                           \
	X(offsetof(nvmlProcessInfo_v2_t, computeInstanceId))                                       \
	X(sizeof(nvmlProcessInfo_t)) X(offsetof(nvmlProcessInfo_t, pid))                           \
	X(offsetof(nvmlProcessInfo_t, usedGpuMemory))                                              \
	X(offsetof(nvmlProcessInfo_t, gpuInstanceId))                                              \
	X(offsetof(nvmlProcessInfo_t, computeInstanceId))                                          \
	X(NVML_DEVICE_UUID_V2_BUFFER_SIZE) X(NVML_VALUE_NOT_AVAILABLE)
/* clang-format on */

#define ROW(fact) {#fact, (unsigned long long)(fact)},
const struct fact {
	const char *what;
	unsigned long long value;
} TABLE[] = {FACTS(ROW)};

#ifndef GMT_NVML_OURS
#define CHECK_FN(name, params)                                                                     \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), nvmlReturn_t(*) params),    \
		       #name " does not match nvml.h");
GMT_NVML_FUNCS(CHECK_FN)

extern const struct fact ours[];

int main(void)
{
	int bad = 0;
	for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++)
		if (ours[i].value != theirs[i].value) {
			printf("%s: ours %llu, nvml.h %llu\n", theirs[i].what, ours[i].value,
			       theirs[i].value);
			bad = 1;
		}
	printf(bad ? "nvml declarations differ\n" : "nvml declarations match\n");
	return bad;
}
#endif
