/* Shared by the interposers: our wrappers, and how they reach their real
 * functions. Everything of the core comes through preload/tracer.h. */
#ifndef GMT_HOOKS_H
#define GMT_HOOKS_H

#include "preload/tracer.h"

#define GMT_EXPORT __attribute__((visibility("default")))

/* Our wrappers, exported under the CUDA names. */
#define GMT_PROTO_DRIVER_(name, base, params)  GMT_EXPORT CUresult name params;
#define GMT_PROTO_RUNTIME_(name, base, params) GMT_EXPORT cudaError_t name params;
GMT_DRIVER_HOOKS(GMT_PROTO_DRIVER_)
GMT_DRIVER_HOOKS_LEGACY(GMT_PROTO_DRIVER_)
GMT_RUNTIME_HOOKS(GMT_PROTO_RUNTIME_)

/* The real function behind wrapper `name`: the wrapper passes itself, so
 * the core's table (preload/real.c) never needs the hooks' addresses. */
#define GMT_REAL(name) ((pfn_##name)gmt_real(GMT_HOOK_##name, (void *)&name))

/* One function call on the event path: gmt_record resolves
 * GMT_DEVICE_CURRENT itself, after its one errno save. */
static inline void gmt_hook_record(enum gmt_api api, uint32_t result, int32_t device, uint64_t ptr,
				   uint64_t size, uint64_t aux, uint64_t aux2, unsigned flags)
{
	gmt_record(api, result, device, ptr, size, aux, aux2, flags);
	if (__builtin_expect(result != 0, 0))
		gmt_hook_failed(api, result);
}

#endif
