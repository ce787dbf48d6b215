/* Context creation and destruction: what a context costs the device, from
 * NVML readings just before and just after the real call, on the calling
 * thread (NVML never touches a CUDA context).
 *
 * Recorded even inside another traced call: the runtime retains the primary
 * context inside the program's first cudaMalloc, and that cost is exactly
 * what the program cannot see. A context call inside a context call (a
 * driver's own forwarding) is one event. */
#include <errno.h>

#include "preload/hooks/forward.h"

#define MISSING GMT_DRIVER_MISSING

static __thread int tls_in_ctx_call __attribute__((tls_model("initial-exec")));

/* ---- which device a context is on ---------------------------------------- */

/* Each device's primary context, for the release and reset events. */
static CUcontext primary_of[GMT_MAX_DEVICES];

/* Contexts made by cuCtxCreate, for cuCtxDestroy's device. Lock-free:
 * context calls are rare, but a lock could be held across fork. */
enum { MAX_CONTEXTS = 256 };
#define SLOT_CLAIMED ((CUcontext)1)
static struct {
	CUcontext ctx;
	int32_t device;
} contexts[MAX_CONTEXTS];

static void remember_context(CUcontext ctx, int32_t device)
{
	for (int i = 0; i < MAX_CONTEXTS; i++) {
		CUcontext expected = NULL;
		if (__atomic_compare_exchange_n(&contexts[i].ctx, &expected, SLOT_CLAIMED, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			contexts[i].device = device;
			/* Pairs with the acquire load in forget_context. */
			__atomic_store_n(&contexts[i].ctx, ctx, __ATOMIC_RELEASE);
			return;
		}
	}
	/* Full: cuCtxDestroy of this one records device -1, no NVML figures. */
}

static int32_t forget_context(CUcontext ctx)
{
	for (int i = 0; i < MAX_CONTEXTS; i++) {
		if (__atomic_load_n(&contexts[i].ctx, __ATOMIC_ACQUIRE) != ctx)
			continue;
		int32_t device = contexts[i].device;
		CUcontext expected = ctx;
		/* Relaxed: the slot's device is rewritten only after a new claim. */
		if (__atomic_compare_exchange_n(&contexts[i].ctx, &expected, NULL, 0,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return device;
	}
	return -1;
}

/* The event, with what NVML saw the call cost its device. */
static void record(struct gmt_ctx_probe *p, enum gmt_api api, CUresult r, int32_t device,
		   CUcontext ctx)
{
	uint64_t size, before, after;
	unsigned flags = gmt_ctx_probe_after(p, api, r, &size, &before, &after);
	/* Inside a traced free (the runtime may retain its context there), the
	 * free's start time belongs to the free's own event, recorded later. */
	uint64_t outer_start = gmt_tls_call_start;
	uintptr_t outer_frame = gmt_tls_hook_frame; /* likewise the free's frame */
	gmt_tls_call_start = 0;
	gmt_tls_hook_frame = 0;
	gmt_record(api, r, device, GMT_U(ctx), size, before, after, flags);
	gmt_tls_call_start = outer_start;
	gmt_tls_hook_frame = outer_frame;
}

/* Declares r_; returns early, untraced, when tracing is off or inside
 * another context call. */
#define CTX_CALL(name, device, ...)                                                                \
	pfn_##name real_ = GMT_REAL(name);                                                         \
	if (!real_)                                                                                \
		return MISSING;                                                                    \
	if (tls_in_ctx_call || !gmt_tracing())                                                     \
		return real_(__VA_ARGS__);                                                         \
	int saved_errno_ = errno;                                                                  \
	gmt_callers_join();                                                                        \
	tls_in_ctx_call = 1;                                                                       \
	gmt_enter();                                                                               \
	struct gmt_ctx_probe probe_;                                                               \
	gmt_ctx_probe_before(&probe_, device);                                                     \
	errno = saved_errno_;                                                                      \
	CUresult r_ = real_(__VA_ARGS__);                                                          \
	saved_errno_ = errno;                                                                      \
	gmt_leave()

#define CTX_DONE()                                                                                 \
	tls_in_ctx_call = 0;                                                                       \
	errno = saved_errno_;                                                                      \
	return r_

static void note_primary(CUdevice dev, CUcontext ctx)
{
	if (dev >= 0 && dev < GMT_MAX_DEVICES && ctx)
		__atomic_store_n(&primary_of[dev], ctx, __ATOMIC_RELAXED); /* a label only */
}

static CUcontext primary(CUdevice dev)
{
	return dev >= 0 && dev < GMT_MAX_DEVICES
		   ? __atomic_load_n(&primary_of[dev], __ATOMIC_RELAXED)
		   : NULL;
}

/* ---- the wrappers ------------------------------------------------------------ */

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CTX_CALL(cuDevicePrimaryCtxRetain, dev, pctx, dev);
	CUcontext ctx = r_ == CUDA_SUCCESS && pctx ? *pctx : NULL;
	if (ctx)
		note_primary(dev, ctx);
	record(&probe_, GMT_API_cuDevicePrimaryCtxRetain, r_, dev, ctx);
	CTX_DONE();
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	CTX_CALL(cuDevicePrimaryCtxRelease_v2, dev, dev);
	record(&probe_, GMT_API_cuDevicePrimaryCtxRelease_v2, r_, dev, primary(dev));
	CTX_DONE();
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	CTX_CALL(cuDevicePrimaryCtxReset_v2, dev, dev);
	record(&probe_, GMT_API_cuDevicePrimaryCtxReset_v2, r_, dev, primary(dev));
	CTX_DONE();
}

static void created(struct gmt_ctx_probe *p, enum gmt_api api, CUresult r, CUcontext *pctx,
		    CUdevice dev)
{
	CUcontext ctx = r == CUDA_SUCCESS && pctx ? *pctx : NULL;
	if (ctx)
		remember_context(ctx, dev);
	record(p, api, r, dev, ctx);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CTX_CALL(cuCtxCreate_v2, dev, pctx, flags, dev);
	created(&probe_, GMT_API_cuCtxCreate_v2, r_, pctx, dev);
	CTX_DONE();
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
			unsigned int flags, CUdevice dev)
{
	CTX_CALL(cuCtxCreate_v3, dev, pctx, paramsArray, numParams, flags, dev);
	created(&probe_, GMT_API_cuCtxCreate_v3, r_, pctx, dev);
	CTX_DONE();
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
			CUdevice dev)
{
	CTX_CALL(cuCtxCreate_v4, dev, pctx, ctxCreateParams, flags, dev);
	created(&probe_, GMT_API_cuCtxCreate_v4, r_, pctx, dev);
	CTX_DONE();
}

/* The device is known only for contexts we saw created: find it before
 * the call, so the reading before is of the right device. */
static int32_t device_of(CUcontext ctx)
{
	for (int i = 0; i < MAX_CONTEXTS; i++)
		if (__atomic_load_n(&contexts[i].ctx, __ATOMIC_ACQUIRE) == ctx)
			return contexts[i].device;
	return -1;
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	CTX_CALL(cuCtxDestroy_v2, device_of(ctx), ctx);
	int32_t dev = r_ == CUDA_SUCCESS ? forget_context(ctx) : device_of(ctx);
	record(&probe_, GMT_API_cuCtxDestroy_v2, r_, dev, ctx);
	CTX_DONE();
}
