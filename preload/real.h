/* The table of real functions: what each wrapper forwards to, and the
 * driver functions the tracer calls itself. The core owns it and finds
 * them; the wrappers' own addresses stay in preload/hooks/, which passes
 * its wrapper in where resolution must not pick it (gmt_real). */
#ifndef GMT_REAL_H
#define GMT_REAL_H

#include "common/cuda-api.h"
#include "common/cuda-types.h"
#include "gpumemtrace/format.h"

#define GMT_PFN_DRIVER_(name, base, params)  typedef CUresult(*pfn_##name) params;
#define GMT_PFN_RUNTIME_(name, base, params) typedef cudaError_t(*pfn_##name) params;
GMT_DRIVER_HOOKS(GMT_PFN_DRIVER_)
GMT_DRIVER_HOOKS_LEGACY(GMT_PFN_DRIVER_)
GMT_DRIVER_USED(GMT_PFN_DRIVER_)
GMT_RUNTIME_HOOKS(GMT_PFN_RUNTIME_)

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
#define GMT_TIE_API_(id, name, op, kind, space, aux) GMT_HAS_ID_OR_LOOKUP_##name = GMT_HOOK_##name,
#define GMT_TIE_LOOKUP_(name)			     GMT_HAS_ID_OR_LOOKUP_##name = GMT_HOOK_##name,
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
	const char *name;  /* exported ELF name */
	const char *base;  /* name the entry-point lookups ask for */
	void *real;	   /* what the wrapper calls; set once per load of its object */
	void *driver_addr; /* the export's address in the driver, once looked up */
	int is_runtime;
};

extern struct gmt_hook gmt_hooks[GMT_HOOK_COUNT];

/* The function behind `wrapper` (hook `id`), found on first use. NULL if
 * none. The wrapper itself is never taken as its own real function. */
void *gmt_real_resolve(enum gmt_hook_id id, void *wrapper);
static inline void *gmt_real(enum gmt_hook_id id, void *wrapper)
{
	/* Pairs with the release CAS in gmt_set_real. */
	void *p = __atomic_load_n(&gmt_hooks[id].real, __ATOMIC_ACQUIRE);
	return p ? p : gmt_real_resolve(id, wrapper);
}
/* A lookup handed out `fn` as hook id's function: the first one set wins. */
void gmt_set_real(enum gmt_hook_id id, void *fn);
/* A handle the program looked a driver function up in: libcuda's. */
void gmt_note_driver_handle(void *handle);

/* The loader's count of objects unloaded so far (dlpi_subs; 0: unknown). */
unsigned long long gmt_loader_unloads(void);
/* After an object was unloaded (dlclose): drops every cached real function,
 * driver address and driver handle that no longer lies in a loaded object,
 * so the next call looks it up again. Off the fast path: gmt_real and
 * gmt_used stay one acquire load. */
void gmt_forget_unloaded(void);

/* A driver function we call ourselves, or NULL while libcuda is unknown.
 * The found ones are cached inline: cuCtxGetCurrent is on every event. */
extern void *gmt_used_fn[GMT_USED_COUNT] __attribute__((visibility("hidden"))); /* no GOT load */
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
/* `name` in libc's own symbol table: no dlsym, so never waits on the
 * loader's lock (a dlopen holds it while constructors run). */
void *gmt_libc_find(const char *name);
/* libc's dlsym, dlopen and dlclose for the core: a plain call would bind to our
 * exported hooks (-Bsymbolic), and the core never calls into the hooks. */
void *gmt_libc_dlsym(void *handle, const char *name);
void *gmt_libc_dlopen(const char *file, int mode);
int gmt_libc_dlclose(void *handle);

#endif
