/* Checks every prototype in common/cuda-api.h and tests/sim/sim-api.h
 * against the toolkit's own declarations. Compiled (syntax only) in three
 * modes, because cuda.h declares different things in each:
 *   default                          the ordinary names (cuda.h maps
 *                                    cuMemAlloc to cuMemAlloc_v2 and so on;
 *                                    our lists already use the ELF names)
 *   -DCUDA_API_PER_THREAD_DEFAULT_STREAM   the _ptsz functions (the base
 *                                    names then become _ptsz too: same type)
 *   -DGMT_DECLS_LEGACY               __CUDA_API_VERSION_INTERNAL: the old
 *                                    ABIs (32-bit cuMemAlloc, the 4-argument
 *                                    cuGetProcAddress) */
#ifdef GMT_DECLS_LEGACY
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "common/cuda-api.h"
#include "sim-api.h"

#define GMT_CHECK_(name, ret, params)                                                              \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params),             \
		       #name " does not match the toolkit's prototype");
#define GMT_CHECK_DRIVER(name, base, params)  GMT_CHECK_(name, CUresult, params)
#define GMT_CHECK_RUNTIME(name, base, params) GMT_CHECK_(name, cudaError_t, params)

#if defined(GMT_DECLS_LEGACY)
GMT_DRIVER_HOOKS_LEGACY(GMT_CHECK_DRIVER)
SIM_DRIVER_OLD(GMT_CHECK_DRIVER)
#elif defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
GMT_DRIVER_HOOKS(GMT_CHECK_DRIVER)
GMT_RUNTIME_HOOKS(GMT_CHECK_RUNTIME)
#else
/* The _ptsz names are not declared in this mode: checking them needs the
 * mode above. A redeclaration with our type leaves them be here, and makes
 * any other mismatch a "conflicting types" error as well. */
#define GMT_REDECLARE_DRIVER(name, base, params)  extern CUresult name params;
#define GMT_REDECLARE_RUNTIME(name, base, params) extern cudaError_t name params;
GMT_DRIVER_HOOKS(GMT_REDECLARE_DRIVER)
GMT_DRIVER_USED(GMT_REDECLARE_DRIVER)
GMT_RUNTIME_HOOKS(GMT_REDECLARE_RUNTIME)
SIM_DRIVER_EXTRA(GMT_REDECLARE_DRIVER)
SIM_RUNTIME_EXTRA(GMT_REDECLARE_RUNTIME)
GMT_DRIVER_HOOKS(GMT_CHECK_DRIVER)
GMT_DRIVER_USED(GMT_CHECK_DRIVER)
GMT_RUNTIME_HOOKS(GMT_CHECK_RUNTIME)
SIM_DRIVER_EXTRA(GMT_CHECK_DRIVER)
SIM_RUNTIME_EXTRA(GMT_CHECK_RUNTIME)
_Static_assert(__builtin_types_compatible_p(__typeof__(&cudaGetErrorString),
					    const char *(*)(cudaError_t)),
	       "cudaGetErrorString does not match the toolkit's prototype");
#endif
