/* NVML at run time: dlopen, never linked. See nvml.h. */
#include "preload/nvml.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "preload/tracer.h"

#define GMT_NVML_PFN_(name, params) typedef nvmlReturn_t(*pfn_##name) params;
GMT_NVML_FUNCS(GMT_NVML_PFN_)
#undef GMT_NVML_PFN_

typedef const char *(*pfn_nvmlErrorString)(nvmlReturn_t);

enum load_state { LOAD_NONE = 0, LOAD_BUSY, LOAD_READY, LOAD_FAILED };

/* Process-info variants, newest first; the stride is what differs. */
enum { PROC_V3 = 0, PROC_V2, PROC_V1, PROC_NONE };

static struct {
	int state; /* enum load_state */
#define GMT_NVML_FIELD_(name, params) pfn_##name name;
	GMT_NVML_FUNCS(GMT_NVML_FIELD_)
#undef GMT_NVML_FIELD_
	unsigned ndev;
	nvmlDevice_t dev[GMT_NVML_MAX_DEVICES];
	uint8_t uuid[GMT_NVML_MAX_DEVICES][16];
	int uuid_ok[GMT_NVML_MAX_DEVICES];
	int proc_variant; /* PROC_*: demoted when a variant says FUNCTION_NOT_FOUND */
	int pid_unmatched;
} nv;

static int load_state(void)
{
	/* Pairs with the release store in settle: the table is filled first. */
	return __atomic_load_n(&nv.state, __ATOMIC_ACQUIRE);
}

static void settle(int st)
{
	__atomic_store_n(&nv.state, st, __ATOMIC_RELEASE);
}

static void note_unavailable(const char *why)
{
	char text[220];
	gmt_format(text, sizeof text, "NVML not available (%s): device memory not sampled", why);
	gmt_note(1, text);
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (or MIG-...) to CUDA's 16 bytes. */
static int parse_uuid(const char *s, uint8_t out[16])
{
	const char *dash = strchr(s, '-');
	if (!dash)
		return -1;
	unsigned n = 0;
	for (const char *p = dash + 1; *p && n < 32; p++) {
		int v;
		if (*p == '-')
			continue;
		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			v = *p - 'A' + 10;
		else
			return -1;
		out[n / 2] = (uint8_t)(n % 2 ? out[n / 2] | v : v << 4);
		n++;
	}
	return n == 32 ? 0 : -1;
}

static void load(void)
{
	void *h = gmt_libc_dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *err = dlerror();
		note_unavailable(err ? err : "libnvidia-ml.so.1: cannot open");
		settle(LOAD_FAILED);
		return;
	}
#define GMT_NVML_SYM_(name, params) nv.name = (pfn_##name)gmt_libc_dlsym(h, #name);
	GMT_NVML_FUNCS(GMT_NVML_SYM_)
#undef GMT_NVML_SYM_
	pfn_nvmlErrorString error_string =
	    (pfn_nvmlErrorString)gmt_libc_dlsym(h, "nvmlErrorString");
	dlerror();
	nv.proc_variant = nv.nvmlDeviceGetComputeRunningProcesses_v3   ? PROC_V3
			  : nv.nvmlDeviceGetComputeRunningProcesses_v2 ? PROC_V2
			  : nv.nvmlDeviceGetComputeRunningProcesses    ? PROC_V1
								       : PROC_NONE;
	if (!nv.nvmlInit_v2 || !nv.nvmlDeviceGetCount_v2 || !nv.nvmlDeviceGetHandleByIndex_v2 ||
	    !nv.nvmlDeviceGetMemoryInfo) {
		note_unavailable("libnvidia-ml.so.1 lacks nvmlInit_v2 or the memory queries");
		settle(LOAD_FAILED);
		return;
	}
	nvmlReturn_t r = nv.nvmlInit_v2();
	unsigned n = 0;
	if (r == NVML_SUCCESS)
		r = nv.nvmlDeviceGetCount_v2(&n);
	if (r != NVML_SUCCESS) {
		char why[160];
		const char *text = error_string ? error_string(r) : NULL;
		gmt_format(why, sizeof why, "nvmlInit_v2: %s (%d)", text ? text : "error", (int)r);
		note_unavailable(why);
		settle(LOAD_FAILED);
		return;
	}
	if (n > GMT_NVML_MAX_DEVICES)
		n = GMT_NVML_MAX_DEVICES;
	for (unsigned i = 0; i < n; i++) {
		char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
		if (nv.nvmlDeviceGetHandleByIndex_v2(i, &nv.dev[i]) != NVML_SUCCESS) {
			nv.dev[i] = NULL;
			continue;
		}
		nv.uuid_ok[i] =
		    nv.nvmlDeviceGetUUID &&
		    nv.nvmlDeviceGetUUID(nv.dev[i], text, sizeof text) == NVML_SUCCESS &&
		    parse_uuid(text, nv.uuid[i]) == 0;
	}
	nv.ndev = n;
	settle(LOAD_READY);
}

int gmt_nvml_ready(void)
{
	int st = load_state();
	if (st == LOAD_NONE) {
		int expected = LOAD_NONE;
		/* One loader; pairs with the acquire loads of load_state. */
		if (__atomic_compare_exchange_n(&nv.state, &expected, LOAD_BUSY, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			gmt_enter(); /* whatever NVML calls is not the program's */
			load();
			gmt_leave();
		}
		st = load_state();
	}
	return st == LOAD_READY;
}

int gmt_nvml_settled(void)
{
	int st = load_state();
	return st == LOAD_READY || st == LOAD_FAILED;
}

unsigned gmt_nvml_device_count(void)
{
	return gmt_nvml_ready() ? nv.ndev : 0;
}

int gmt_nvml_index_of_uuid(const uint8_t uuid[16])
{
	if (!gmt_nvml_ready())
		return -1;
	for (unsigned i = 0; i < nv.ndev; i++)
		if (nv.uuid_ok[i] && !memcmp(nv.uuid[i], uuid, 16))
			return (int)i;
	return -1;
}

/* This process's bytes on a device from the process list: -1 unknown. */
static int64_t process_bytes(nvmlDevice_t d)
{
	enum { MAX_PROCS = 256 };
	/* The largest layout; v1 entries are packed at their own stride. */
	nvmlProcessInfo_t buf[MAX_PROCS];
	for (;;) {
		int v = __atomic_load_n(&nv.proc_variant, __ATOMIC_RELAXED);
		unsigned count = MAX_PROCS;
		nvmlReturn_t r;
		size_t stride;
		switch (v) {
		case PROC_V3:
			r = nv.nvmlDeviceGetComputeRunningProcesses_v3(d, &count, buf);
			stride = sizeof(nvmlProcessInfo_t);
			break;
		case PROC_V2:
			r = nv.nvmlDeviceGetComputeRunningProcesses_v2(d, &count,
								       (nvmlProcessInfo_v2_t *)buf);
			stride = sizeof(nvmlProcessInfo_v2_t);
			break;
		case PROC_V1:
			r = nv.nvmlDeviceGetComputeRunningProcesses(d, &count,
								    (nvmlProcessInfo_v1_t *)buf);
			stride = sizeof(nvmlProcessInfo_v1_t);
			break;
		default:
			return -1;
		}
		if (r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED) {
			/* An older driver behind a newer library: try the next form.
			 * A relaxed store: racing readers demote to the same value. */
			int next = v + 1;
			if (v == PROC_V3 && !nv.nvmlDeviceGetComputeRunningProcesses_v2)
				next = PROC_V1;
			if (next == PROC_V1 && !nv.nvmlDeviceGetComputeRunningProcesses)
				next = PROC_NONE;
			__atomic_store_n(&nv.proc_variant, next, __ATOMIC_RELAXED);
			continue;
		}
		if (r != NVML_SUCCESS || count > MAX_PROCS)
			return -1;
		pid_t me = getpid();
		uint64_t sum = 0;
		int found = 0;
		for (unsigned i = 0; i < count; i++) {
			const uint8_t *e = (const uint8_t *)buf + i * stride;
			unsigned pid;
			unsigned long long used;
			memcpy(&pid, e + offsetof(nvmlProcessInfo_v1_t, pid), sizeof pid);
			memcpy(&used, e + offsetof(nvmlProcessInfo_v1_t, usedGpuMemory),
			       sizeof used);
			if (pid != (unsigned)me)
				continue;
			if (used == NVML_VALUE_NOT_AVAILABLE)
				return -1;
			sum += used;
			found = 1;
		}
		/* Not listed: no context of ours there, unless NVML sees other pids. */
		if (!found && __atomic_load_n(&nv.pid_unmatched, __ATOMIC_RELAXED))
			return -1;
		return (int64_t)sum;
	}
}

int gmt_nvml_read(unsigned index, struct gmt_nvml_reading *out)
{
	memset(out, 0, sizeof *out);
	if (!gmt_nvml_ready() || index >= nv.ndev || !nv.dev[index])
		return -1;
	gmt_enter();
	nvmlMemory_t mem;
	nvmlReturn_t r = nv.nvmlDeviceGetMemoryInfo(nv.dev[index], &mem);
	int64_t mine = r == NVML_SUCCESS ? process_bytes(nv.dev[index]) : -1;
	gmt_leave();
	if (r != NVML_SUCCESS)
		return -1;
	out->used_bytes = mem.used;
	out->total_bytes = mem.total;
	out->process_known = mine >= 0;
	out->process_used_bytes = mine >= 0 ? (uint64_t)mine : 0;
	if (nv.uuid_ok[index])
		memcpy(out->uuid, nv.uuid[index], 16);
	return 0;
}

int gmt_nvml_context_made(const struct gmt_nvml_reading *after)
{
	if (!after->process_known || after->process_used_bytes > 0)
		return 0;
	/* A flag, read relaxed: a reading that misses it is one more known 0. */
	if (__atomic_exchange_n(&nv.pid_unmatched, 1, __ATOMIC_RELAXED))
		return 1;
	gmt_note(1, "NVML does not list this process after it created a context (another pid "
		    "namespace?): this process's device memory is not known, samples give the "
		    "device's");
	return 1;
}
