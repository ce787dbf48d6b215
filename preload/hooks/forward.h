/* The shape every wrapper shares: call the real function with the nesting
 * guard up, then record. Keeps the wrappers thin. */
#ifndef GMT_FORWARD_H
#define GMT_FORWARD_H

#include "preload/hooks/hooks.h"

/* Declares r_ holding the real function's result. Returns early, untraced,
 * when tracing is off or when another traced call is below us (a runtime
 * call reaching the driver is one event, named after the runtime call). */
#define GMT_FORWARD(name, missing, ...) GMT_FORWARD_(name, missing, (void)0, __VA_ARGS__)

/* The same for calls that make an address (or handle) free for reuse: the
 * event is timed before the real call. Another thread's allocation that
 * gets the address back is timed after its own call returns, so it always
 * sorts after this free, and replay never sees the reuse first. */
#define GMT_FORWARD_FREE(name, missing, ...)                                                       \
	GMT_FORWARD_(name, missing, gmt_tls_call_start = gmt_now_ns_before(), __VA_ARGS__)

#define GMT_FORWARD_(name, missing, before_call, ...)                                              \
	pfn_##name real_ = GMT_REAL(name);                                                         \
	if (!real_)                                                                                \
		return missing;                                                                    \
	if (gmt_nested() || !gmt_tracing())                                                        \
		return real_(__VA_ARGS__);                                                         \
	gmt_callers_join();                                                                        \
	gmt_enter();                                                                               \
	gmt_tls_hook_frame = (uintptr_t)__builtin_frame_address(0);                                \
	before_call;                                                                               \
	__typeof__(real_(__VA_ARGS__)) r_ = real_(__VA_ARGS__);                                    \
	gmt_leave()

/* An out-parameter's value, only when the call succeeded. */
#define GMT_OUT(p) (r_ == 0 && (p) ? (uint64_t)(uintptr_t) * (p) : 0)
#define GMT_U(x)   ((uint64_t)(uintptr_t)(x))

#define GMT_AUX	 GMT_EV_HAS_AUX
#define GMT_AUX2 (GMT_EV_HAS_AUX | GMT_EV_HAS_AUX2)

#define GMT_DRIVER_MISSING  CUDA_ERROR_NOT_INITIALIZED
#define GMT_RUNTIME_MISSING cudaErrorInitializationError

#endif
