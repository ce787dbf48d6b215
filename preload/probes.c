/* What the tracer adds around a program's call: after a failed allocation,
 * the device's free memory (cuMemGetInfo) and NVML's view (a sample); for a
 * context call, its cost to the device from NVML readings before and
 * after (preload/tracer.h). */
#include <errno.h>

#include "common/events.h"
#include "preload/device.h"
#include "preload/nvml.h"
#include "preload/real.h"
#include "preload/sampler.h"
#include "preload/tracer.h"

/* Allocations of device memory, whose failure cuMemGetInfo can explain. */
static int device_alloc(enum gmt_api api)
{
	switch (api) {
#define GMT_DEVICE_ALLOC_(id, name, op, kind, space, aux)                                          \
	case GMT_API_##name:                                                                       \
		return op == GMT_OP_ALLOC && kind != GMT_KIND_HOST_PINNED &&                       \
		       kind != GMT_KIND_HOST_REGISTERED && kind != GMT_KIND_IPC &&                 \
		       kind != GMT_KIND_POOL && kind != GMT_KIND_VMM_VA;
		GMT_API_LIST(GMT_DEVICE_ALLOC_)
#undef GMT_DEVICE_ALLOC_
	default:
		return 0;
	}
}

/* What the device had free when an allocation failed, asked on the failing
 * thread, where the program's context is current. No context, no question:
 * cuMemGetInfo never creates one, and neither do we. */
static void record_meminfo(enum gmt_api api)
{
	pfn_cuCtxGetCurrent get_ctx = GMT_USED(cuCtxGetCurrent);
	pfn_cuMemGetInfo_v2 get_info = GMT_USED(cuMemGetInfo_v2);
	CUcontext ctx = NULL;
	size_t free_bytes = 0, total_bytes = 0;
	if (!get_ctx || !get_info || get_ctx(&ctx) != CUDA_SUCCESS || !ctx)
		return;
	gmt_enter();
	CUresult r = get_info(&free_bytes, &total_bytes);
	gmt_leave();
	if (r == CUDA_SUCCESS)
		gmt_record_meminfo(api, gmt_current_device(), free_bytes, total_bytes);
}

void gmt_hook_failed(enum gmt_api api, uint32_t result)
{
	if (!device_alloc(api))
		return;
	int saved_errno = errno;
	gmt_sampler_poke(GMT_SAMPLE_WHY_OOM); /* NVML's view of the failure */
	if (gmt_out_of_memory((uint64_t)result))
		record_meminfo(api);
	errno = saved_errno;
}

/* ---- what a context call costs its device -------------------------------- */

_Static_assert(GMT_MAX_DEVICES == GMT_NVML_MAX_DEVICES, "one table of devices");

/* CUDA device -> NVML index + 1 (0: not known yet). */
static int nvml_of_device[GMT_NVML_MAX_DEVICES];

static int nvml_index(int32_t device)
{
	if (device < 0 || device >= GMT_NVML_MAX_DEVICES)
		return -1;
	/* A cache; racing threads store the same value. */
	int cached = __atomic_load_n(&nvml_of_device[device], __ATOMIC_RELAXED);
	if (cached)
		return cached - 1;
	pfn_cuDeviceGetUuid_v2 get_uuid = GMT_USED(cuDeviceGetUuid_v2);
	CUuuid u;
	if (!get_uuid || get_uuid(&u, device) != CUDA_SUCCESS)
		return -1; /* before cuInit: not known yet, ask again next time */
	int index = gmt_nvml_index_of_uuid((const uint8_t *)u.bytes);
	if (index >= 0)
		__atomic_store_n(&nvml_of_device[device], index + 1, __ATOMIC_RELAXED);
	return index;
}

void gmt_ctx_probe_before(struct gmt_ctx_probe *p, int32_t device)
{
	struct gmt_nvml_reading before;
	p->index = gmt_nvml_ready() ? nvml_index(device) : -1;
	if (p->index >= 0 && gmt_nvml_read((unsigned)p->index, &before) != 0)
		p->index = -1;
	if (p->index < 0)
		return;
	p->used_bytes = before.used_bytes;
	p->process_used_bytes = before.process_used_bytes;
	p->process_known = before.process_known;
}

unsigned gmt_ctx_probe_after(const struct gmt_ctx_probe *p, enum gmt_api api, uint32_t result,
			     uint64_t *size, uint64_t *before, uint64_t *after)
{
	struct gmt_nvml_reading now;
	*size = *before = *after = 0;
	if (p->index < 0 || gmt_nvml_read((unsigned)p->index, &now) != 0)
		return 0;
	int creates = api == GMT_API_cuDevicePrimaryCtxRetain || api == GMT_API_cuCtxCreate_v2 ||
		      api == GMT_API_cuCtxCreate_v3 || api == GMT_API_cuCtxCreate_v4;
	int untrusted = creates && result == CUDA_SUCCESS && gmt_nvml_context_made(&now);
	/* The process's usage when NVML reports it, else the device's. */
	int process = p->process_known && now.process_known && !untrusted;
	*before = process ? p->process_used_bytes : p->used_bytes;
	*after = process ? now.process_used_bytes : now.used_bytes;
	if (creates)
		*size = *after > *before ? *after - *before : 0;
	else
		*size = *before > *after ? *before - *after : 0;
	return GMT_EV_HAS_AUX | GMT_EV_HAS_AUX2;
}
