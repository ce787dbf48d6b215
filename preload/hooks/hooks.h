/* Shared by the interposers: the wrapper table, the real functions behind
 * the wrappers, and the driver functions the tracer calls itself. */
#ifndef GMT_HOOKS_H
#define GMT_HOOKS_H

#include "common/cuda-api.h"
#include "common/cuda-types.h"
#include "preload/tracer.h"

#define GMT_EXPORT __attribute__((visibility("default")))

#define GMT_PFN_DRIVER_(name, base, params)  typedef CUresult(*pfn_##name) params;
#define GMT_PFN_RUNTIME_(name, base, params) typedef cudaError_t(*pfn_##name) params;
GMT_DRIVER_HOOKS(GMT_PFN_DRIVER_)
GMT_DRIVER_HOOKS_LEGACY(GMT_PFN_DRIVER_)
GMT_DRIVER_USED(GMT_PFN_DRIVER_)
GMT_RUNTIME_HOOKS(GMT_PFN_RUNTIME_)

/* Our wrappers, exported under the CUDA names. */
#define GMT_PROTO_DRIVER_(name, base, params)  GMT_EXPORT CUresult name params;
#define GMT_PROTO_RUNTIME_(name, base, params) GMT_EXPORT cudaError_t name params;
GMT_DRIVER_HOOKS(GMT_PROTO_DRIVER_)
GMT_DRIVER_HOOKS_LEGACY(GMT_PROTO_DRIVER_)
GMT_RUNTIME_HOOKS(GMT_PROTO_RUNTIME_)

enum gmt_hook_id {
#define GMT_HOOK_ID_(name, base, params) GMT_HOOK_##name,
	GMT_DRIVER_HOOKS(GMT_HOOK_ID_) GMT_DRIVER_HOOKS_LEGACY(GMT_HOOK_ID_)
	    GMT_RUNTIME_HOOKS(GMT_HOOK_ID_)
#undef GMT_HOOK_ID_
		GMT_HOOK_COUNT
};

/* Each API id has the hook of its name, and each hook records the id of its
 * name or is a lookup (common/cuda-api.h). What lacks fails to compile by
 * name: GMT_HOOK_<id's name> or GMT_HAS_ID_OR_LOOKUP_<hook> undeclared, or
 * the latter redeclared for a lookup that also has an id. */
enum {
#define GMT_TIE_API_(id, name, op, kind, space) GMT_HAS_ID_OR_LOOKUP_##name = GMT_HOOK_##name,
#define GMT_TIE_LOOKUP_(name)			GMT_HAS_ID_OR_LOOKUP_##name = GMT_HOOK_##name,
	GMT_API_LIST(GMT_TIE_API_) GMT_HOOKS_LOOKUP(GMT_TIE_LOOKUP_)
#undef GMT_TIE_API_
#undef GMT_TIE_LOOKUP_
};
enum {
#define GMT_TIE_HOOK_(name, base, params) GMT_TIED_##name = GMT_HAS_ID_OR_LOOKUP_##name,
	GMT_DRIVER_HOOKS(GMT_TIE_HOOK_) GMT_DRIVER_HOOKS_LEGACY(GMT_TIE_HOOK_)
	    GMT_RUNTIME_HOOKS(GMT_TIE_HOOK_)
#undef GMT_TIE_HOOK_
};

enum gmt_used_id {
#define GMT_USED_ID_(name, base, params) GMT_USED_##name,
	GMT_DRIVER_USED(GMT_USED_ID_)
#undef GMT_USED_ID_
	    GMT_USED_COUNT
};

struct gmt_hook {
	const char *name; /* exported ELF name */
	const char *base; /* name the entry-point lookups ask for */
	void *wrapper;
	void *real;	   /* what the wrapper calls; set once */
	void *driver_addr; /* the export's address in the driver, once looked up */
	int is_runtime;
};

extern struct gmt_hook gmt_hooks[GMT_HOOK_COUNT];

/* The function behind wrapper `id`, found on first use. NULL if none. */
void *gmt_real_resolve(enum gmt_hook_id id);
static inline void *gmt_real(enum gmt_hook_id id)
{
	/* Pairs with the release CAS in set_real (preload/hooks/table.c). */
	void *p = __atomic_load_n(&gmt_hooks[id].real, __ATOMIC_ACQUIRE);
	return p ? p : gmt_real_resolve(id);
}
#define GMT_REAL(name) ((pfn_##name)gmt_real(GMT_HOOK_##name))

/* A driver function we call ourselves, or NULL while libcuda is unknown.
 * The found ones are cached inline: cuCtxGetCurrent is on every event. */
extern void *gmt_used_fn[GMT_USED_COUNT];
void *gmt_used_resolve(enum gmt_used_id id);
static inline void *gmt_used(enum gmt_used_id id)
{
	/* Pairs with the release store in gmt_used_resolve. */
	void *p = __atomic_load_n(&gmt_used_fn[id], __ATOMIC_ACQUIRE);
	return p ? p : gmt_used_resolve(id);
}
#define GMT_USED(name) ((pfn_##name)gmt_used(GMT_USED_##name))

/* libc's own dlsym/dlvsym, never ours. */
void *(*gmt_real_dlsym(void))(void *, const char *);
void *(*gmt_real_dlvsym(void))(void *, const char *, const char *);
void *gmt_libc_next(const char *name); /* RTLD_NEXT lookup from this library */

/* Post-processing of lookups: returns our wrapper when `addr` is the real
 * function of one we wrap, else `addr` unchanged. */
void *gmt_wrap_dlsym(const char *name, void *handle, void *addr);
void *gmt_wrap_entry_point(const char *base, void *addr);

/* What a failed call adds: NVML's view, and cuMemGetInfo's after an OOM.
 * Preserves errno. */
void gmt_hook_failed(enum gmt_api api, uint32_t result);

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
