/* Simulated libnvidia-ml.so.1: exactly the NVML functions the tracer calls
 * (preload/nvml.h), answering from the simulated driver's state.
 *
 *   device used   = this process's usage (when it is listed) + SIMCUDA_NVML_OTHER_BYTES
 *   process usage = the driver's allocated device bytes + its contexts' cost
 *                   + its loaded modules' code (lazily, at a kernel's first launch)
 *                   + SIMCUDA_UNTRACED_BYTES (memory taken by a route the
 *                   tracer cannot see: the "unexplained" of known-answer tests)
 *   total         = SIMCUDA_CAPACITY (default 16G); devices: SIMCUDA_DEVICES
 *
 * The process is listed on a device once it holds anything there, like
 * nvidia-smi. Other processes' bytes are listed under a pid of their own.
 * UUIDs are the simulated driver's cuDeviceGetUuid bytes as NVML prints them.
 *
 * SIMCUDA_NVML=fail     nvmlInit_v2 fails (NVML_ERROR_DRIVER_NOT_LOADED)
 * SIMCUDA_NVML=v2       _v3 of the process query says FUNCTION_NOT_FOUND
 * SIMCUDA_NVML=v1       so do _v3 and _v2: only the unversioned form answers
 * SIMCUDA_NVML=otherpid this process is listed under another pid (a
 *                       container's pid namespace)
 * SIMCUDA_NVML_CALL_US  each memory query holds NVML's lock this long, like
 *                       a slow real NVML (what a fork must not catch held) */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "preload/nvml.h"
#include "sim-nvml.h"

#define EXPORT __attribute__((visibility("default")))

/* NVML's entry points, as the tracer finds them with dlsym
 * (preload/nvml.h's list): declared, so each definition is checked. */
EXPORT nvmlReturn_t nvmlInit_v2(void);
EXPORT const char *nvmlErrorString(nvmlReturn_t result);
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
							    unsigned int *infoCount,
							    nvmlProcessInfo_t *infos);
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
							    unsigned int *infoCount,
							    nvmlProcessInfo_v2_t *infos);
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
							 unsigned int *infoCount,
							 nvmlProcessInfo_v1_t *infos);
#define MAX_DEVICES 16
#define OTHER_PID   0x7ffffff0u

struct nvmlDevice_st {
	int index;
};
static struct nvmlDevice_st devices[MAX_DEVICES];
static int initialized;

static pthread_mutex_t nvml_lock = PTHREAD_MUTEX_INITIALIZER; /* real NVML has one */

static const char *mode(void)
{
	const char *m = getenv("SIMCUDA_NVML");
	return m ? m : "";
}

static unsigned long long env_bytes(const char *name, unsigned long long dflt)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return dflt;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return dflt;
	switch (*end) {
	case 'k':
	case 'K':
		return v << 10;
	case 'm':
	case 'M':
		return v << 20;
	case 'g':
	case 'G':
		return v << 30;
	case 't':
	case 'T':
		return v << 40;
	default:
		return *end ? dflt : v;
	}
}

static unsigned device_count(void)
{
	unsigned long long n = env_bytes("SIMCUDA_DEVICES", 1);
	return n > MAX_DEVICES ? MAX_DEVICES : (unsigned)n;
}

static int valid(nvmlDevice_t d)
{
	return initialized && d && d >= devices && d < devices + device_count();
}

/* This process's bytes on the device; 0 when it holds nothing there. */
static unsigned long long process_usage(int dev)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	simcuda_usage_fn usage = (simcuda_usage_fn)dlsym(h, "simcuda_usage");
	struct simcuda_usage u;
	int ok = usage && usage(dev, &u) == 0;
	dlclose(h);
	if (!ok || u.allocated + u.contexts + u.modules == 0)
		return 0;
	return u.allocated + u.contexts + u.modules + env_bytes("SIMCUDA_UNTRACED_BYTES", 0);
}

static void lock_for_a_call(void)
{
	pthread_mutex_lock(&nvml_lock);
	unsigned long long us = env_bytes("SIMCUDA_NVML_CALL_US", 0);
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
	if (us)
		nanosleep(&ts, NULL);
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	if (!strcmp(mode(), "fail"))
		return NVML_ERROR_DRIVER_NOT_LOADED;
	for (int i = 0; i < MAX_DEVICES; i++)
		devices[i].index = i;
	initialized = 1;
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_FUNCTION_NOT_FOUND:
		return "Function Not Found";
	default:
		return "Unknown Error";
	}
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!deviceCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = device_count();
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= device_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devices[index];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	if (!valid(device) || !uuid)
		return NVML_ERROR_INVALID_ARGUMENT;
	char b[16];
	sim_uuid_bytes(device->index, b);
	const unsigned char *u = (const unsigned char *)b;
	int n = snprintf(uuid, length,
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
			 u[12], u[13], u[14], u[15]);
	return n < 0 || (unsigned)n >= length ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	if (!valid(device) || !memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	lock_for_a_call();
	unsigned long long total = env_bytes("SIMCUDA_CAPACITY", 16ull << 30);
	unsigned long long used =
	    process_usage(device->index) + env_bytes("SIMCUDA_NVML_OTHER_BYTES", 0);
	memory->total = total;
	memory->used = used;
	memory->free = used < total ? total - used : 0;
	pthread_mutex_unlock(&nvml_lock);
	return NVML_SUCCESS;
}

/* Fills `count` entries of `stride` bytes; pid and usedGpuMemory sit at the
 * same offsets in every version of the struct. */
static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *infoCount, void *infos,
			      size_t stride)
{
	if (!valid(device) || !infoCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned long long mine = process_usage(device->index);
	unsigned long long other = env_bytes("SIMCUDA_NVML_OTHER_BYTES", 0);
	unsigned pid = (unsigned)getpid() + (strcmp(mode(), "otherpid") ? 0 : 1000000u);
	struct {
		unsigned pid;
		unsigned long long used;
	} list[2];
	unsigned n = 0;
	if (other)
		list[n++] = (typeof(list[0])){OTHER_PID, other};
	if (mine)
		list[n++] = (typeof(list[0])){pid, mine};
	unsigned room = *infoCount;
	*infoCount = n;
	if (room < n)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	if (n && !infos)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(infos, 0, n * stride);
	for (unsigned i = 0; i < n; i++) {
		char *e = (char *)infos + i * stride;
		memcpy(e + offsetof(nvmlProcessInfo_v1_t, pid), &list[i].pid, sizeof list[i].pid);
		memcpy(e + offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), &list[i].used,
		       sizeof list[i].used);
		if (stride > sizeof(nvmlProcessInfo_v1_t)) { /* no MIG: both ids all ones */
			memset(e + offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), 0xff, 4);
			memset(e + offsetof(nvmlProcessInfo_v2_t, computeInstanceId), 0xff, 4);
		}
	}
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
							    unsigned int *infoCount,
							    nvmlProcessInfo_t *infos)
{
	if (!strcmp(mode(), "v2") || !strcmp(mode(), "v1"))
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	return processes(device, infoCount, infos, sizeof *infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
							    unsigned int *infoCount,
							    nvmlProcessInfo_v2_t *infos)
{
	if (!strcmp(mode(), "v1"))
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	return processes(device, infoCount, infos, sizeof *infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
							 unsigned int *infoCount,
							 nvmlProcessInfo_v1_t *infos)
{
	return processes(device, infoCount, infos, sizeof *infos);
}
