/* What the tracer asks the driver itself: the current device on the event
 * path, and each device's facts for the DEVICE records (preload/device.h). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "common/log.h"
#include "preload/device.h"
#include "preload/real.h"

/* ---- device of the current context -------------------------------------- */

int32_t gmt_current_device(void)
{
	static __thread CUcontext cached_ctx __attribute__((tls_model("initial-exec")));
	static __thread int32_t cached_dev __attribute__((tls_model("initial-exec")));
	pfn_cuCtxGetCurrent get_ctx = GMT_USED(cuCtxGetCurrent);
	CUcontext ctx = NULL;
	if (!get_ctx || get_ctx(&ctx) != CUDA_SUCCESS || !ctx)
		return -1;
	if (ctx != cached_ctx) {
		pfn_cuCtxGetDevice get_dev = GMT_USED(cuCtxGetDevice);
		CUdevice dev;
		if (!get_dev || get_dev(&dev) != CUDA_SUCCESS)
			return -1;
		cached_ctx = ctx;
		cached_dev = dev;
	}
	return cached_dev;
}

/* ---- device facts for the flush thread ---------------------------------- */

/* -1: CUDA not initialized by the program yet */
static int gmt_driver_device_count(void)
{
	pfn_cuDeviceGetCount count = GMT_USED(cuDeviceGetCount);
	int n = 0;
	/* NOT_INITIALIZED until the program calls cuInit: we never call it. */
	if (!count || count(&n) != CUDA_SUCCESS)
		return -1;
	return n;
}

/* Each query's result is checked: a DEVICE record of zeros (seen on an H100
 * with the dynamic runtime) says nothing of why, so the caller retries and
 * in the end notes the first query that failed. 0: every fact read; 1: a
 * query failed (why names the first); -1: no such device. */
static int gmt_driver_device_info(int ordinal, struct gmt_device_info *out, char *why,
				  size_t why_len)
{
	memset(out, 0, sizeof *out);
	if (why_len)
		why[0] = 0;
	pfn_cuDeviceGet get = GMT_USED(cuDeviceGet);
	CUdevice dev;
	if (!get || get(&dev, ordinal) != CUDA_SUCCESS)
		return -1;
	int incomplete = 0;
#define GMT_DEVICE_QUERY(fn, ...)                                                                  \
	do {                                                                                       \
		pfn_##fn f_ = GMT_USED(fn);                                                        \
		CUresult r_ = f_ ? f_(__VA_ARGS__) : CUDA_ERROR_NOT_FOUND;                         \
		if (r_ != CUDA_SUCCESS && !incomplete++ && why_len)                                \
			gmt_format(why, why_len, "%s returned %d%s", #fn, (int)r_,                 \
				   f_ ? "" : " (not in libcuda)");                                 \
	} while (0)
	GMT_DEVICE_QUERY(cuDeviceGetName, out->name, (int)sizeof out->name - 1, dev);
	CUuuid u;
	memset(&u, 0, sizeof u);
	GMT_DEVICE_QUERY(cuDeviceGetUuid_v2, &u, dev);
	memcpy(out->uuid, u.bytes, sizeof out->uuid);
	size_t bytes = 0;
	GMT_DEVICE_QUERY(cuDeviceTotalMem_v2, &bytes, dev);
	out->total_bytes = bytes;
	GMT_DEVICE_QUERY(cuDeviceGetAttribute, &out->cc_major,
			 CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	GMT_DEVICE_QUERY(cuDeviceGetAttribute, &out->cc_minor,
			 CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	GMT_DEVICE_QUERY(cuDriverGetVersion, &out->driver_version);
#undef GMT_DEVICE_QUERY
	return incomplete ? 1 : 0;
}

/* Keeps what each query gave at some flush: at the end the driver may be
 * gone (seen on an H100: cuDeviceGet failing at exit, after the runtime's
 * teardown), and what an earlier flush learnt is still true. */
static void merge_device_info(struct gmt_device_info *into, const struct gmt_device_info *d)
{
	static const uint8_t zero[16];
	if (d->name[0])
		memcpy(into->name, d->name, sizeof into->name);
	if (memcmp(d->uuid, zero, sizeof zero))
		memcpy(into->uuid, d->uuid, sizeof into->uuid);
	if (d->total_bytes)
		into->total_bytes = d->total_bytes;
	if (d->cc_major)
		into->cc_major = d->cc_major, into->cc_minor = d->cc_minor;
	if (d->driver_version)
		into->driver_version = d->driver_version;
}

int gmt_device_info_complete(const struct gmt_device_info *d)
{
	static const uint8_t zero[16];
	return d->name[0] && memcmp(d->uuid, zero, sizeof zero) && d->total_bytes && d->cc_major &&
	       d->driver_version;
}

int gmt_device_facts_query(struct gmt_device_facts *f, const uint8_t *skip)
{
	int n = gmt_driver_device_count();
	if (n > GMT_MAX_FACTS_DEVICES)
		n = GMT_MAX_FACTS_DEVICES;
	if (n > f->n)
		f->n = n;
	for (int i = 0; i < f->n; i++) {
		if (skip && skip[i])
			continue;
		struct gmt_device_info d;
		char why[sizeof f->why[0]];
		int rc = gmt_driver_device_info(i, &d, why, sizeof why);
		if (rc >= 0) {
			f->seen[i] = 1;
			merge_device_info(&f->d[i], &d);
		}
		if (rc != 0 && why[0] && !f->why[i][0])
			memcpy(f->why[i], why, sizeof why);
	}
	return n;
}

void gmt_device_facts_merge(struct gmt_device_facts *into, const struct gmt_device_facts *from)
{
	if (from->n > into->n)
		into->n = from->n;
	for (int i = 0; i < from->n; i++) {
		if (from->seen[i]) {
			into->seen[i] = 1;
			merge_device_info(&into->d[i], &from->d[i]);
		}
		if (from->why[i][0] && !into->why[i][0])
			memcpy(into->why[i], from->why[i], sizeof into->why[i]);
	}
}

struct gmt_device_facts *gmt_device_facts_new(void)
{
	struct gmt_device_facts *f =
	    mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return f == MAP_FAILED ? NULL : f;
}

void gmt_device_facts_free(struct gmt_device_facts *f)
{
	if (f)
		munmap(f, sizeof *f);
}
