/* The tracer core as the hooks see it: the one core header that
 * preload/hooks/ includes (with preload/real.h, below, for the real
 * functions' inline fast paths). The dependency is one-way: the core never
 * includes preload/hooks/ nor calls into it (make check-layers). */
#ifndef GMT_TRACER_H
#define GMT_TRACER_H

#include <stdint.h>

#include "preload/clock.h"
#include "preload/real.h"
#include "gpumemtrace/format.h"

#define GMT_INTERNAL __attribute__((visibility("hidden")))

/* Nesting guard: a runtime call that reaches the driver inside is one event.
 * initial-exec TLS is a plain %fs-relative access: it can never call
 * __tls_get_addr (which may malloc) from inside a hook. */
extern __thread int gmt_tls_depth __attribute__((tls_model("initial-exec")));

/* Set by GMT_FORWARD_FREE before the real call; gmt_record takes it as
 * the event's time (and clears it) instead of reading the clock after. */
extern __thread uint64_t gmt_tls_call_start __attribute__((tls_model("initial-exec")));

/* Set by GMT_FORWARD_ to the wrapper's own frame: the stack cache's key is
 * the slot just above it, found without walking our frames (a hint: checked,
 * and the walk is the fallback). gmt_record takes it and clears it. */
extern __thread uintptr_t gmt_tls_hook_frame __attribute__((tls_model("initial-exec")));

/* Which threads make traced calls: GMT_CALLERS_NONE, then the one
 * thread's token, then GMT_CALLERS_MANY for good (preload/callers.c). While a
 * single thread makes them all, no other thread's free can hand its
 * allocations an address, so their stamps need no fence (gmt_stamp_after;
 * docs/design.md, "The clock"). A thread joins before its call reaches the
 * driver: the wrappers' GMT_FORWARD_ and context.c's CTX_CALL. */
#define GMT_CALLERS_NONE 1
#define GMT_CALLERS_MANY UINT64_MAX
extern uint64_t gmt_callers GMT_INTERNAL;
/* This thread's token (> GMT_CALLERS_NONE, never reused), 0 until it joins. */
extern __thread uint64_t gmt_tls_caller __attribute__((tls_model("initial-exec")));
void gmt_callers_join_slow(void);

static inline void gmt_callers_join(void)
{
	uint64_t callers = __atomic_load_n(&gmt_callers, __ATOMIC_RELAXED);
	if (__builtin_expect(callers != gmt_tls_caller && callers != GMT_CALLERS_MANY, 0))
		gmt_callers_join_slow();
}

/* 1 while this thread is the only one that has made traced calls. Read
 * after a call, it sees any other thread's join that the call could have
 * seen the effects of: that thread joined before its own call's stores,
 * and x86 keeps stores in order and loads in order. */
static inline int gmt_sole_caller(void)
{
	return __atomic_load_n(&gmt_callers, __ATOMIC_ACQUIRE) == gmt_tls_caller;
}

/* An event's stamp, taken after its call: ordered (clock.h, gmt_now_ns)
 * so that it is later than another thread's free whose address the call
 * handed out, unless this thread is the sole caller: then only its own
 * stamps can come before it, and the writer keeps those in order. A
 * free's stamp, taken before its call, needs no fence in either case
 * (clock.h, gmt_now_ns_before). */
static inline uint64_t gmt_stamp_after(void)
{
	return gmt_clock_read(!gmt_sole_caller());
}

static inline int gmt_nested(void)
{
	return gmt_tls_depth > 0;
}
static inline void gmt_enter(void)
{
	gmt_tls_depth++;
}
static inline void gmt_leave(void)
{
	gmt_tls_depth--;
}

/* 0 when the hooks should only forward: tracing off, AT_SECURE, or setup
 * failed. Initializes on first use, so it works before our constructor. */
int gmt_tracing(void);

/* A device argument gmt_record resolves from the current context. */
#define GMT_DEVICE_CURRENT INT32_MIN

/* Records one call. Preserves errno. `flags` is GMT_EV_HAS_AUX/AUX2. */
void gmt_record(enum gmt_api api, uint32_t result, int32_t device, uint64_t ptr, uint64_t size,
		uint64_t aux, uint64_t aux2, unsigned flags);

/* What a failed call adds: NVML's view, and cuMemGetInfo's after an OOM
 * (preload/device.c). Preserves errno. */
void gmt_hook_failed(enum gmt_api api, uint32_t result);

/* A context call's cost to its device, from NVML readings just before and
 * just after the call, on the calling thread (preload/device.c). */
#define GMT_MAX_DEVICES 64 /* devices NVML and the probes know */
struct gmt_ctx_probe {
	int index;				 /* NVML device, -1: nothing measured */
	uint64_t used_bytes, process_used_bytes; /* before the call */
	int process_known;
};
void gmt_ctx_probe_before(struct gmt_ctx_probe *p, int32_t device);
/* The event's size, aux (before) and aux2 (after); returns its flags, 0
 * when nothing was measured. `result` is the call's. */
unsigned gmt_ctx_probe_after(const struct gmt_ctx_probe *p, enum gmt_api api, uint32_t result,
			     uint64_t *size, uint64_t *before, uint64_t *after);

/* Records what cuMemGetInfo said right after a failed allocation. */
void gmt_record_meminfo(enum gmt_api api, int32_t device, uint64_t free_bytes,
			uint64_t total_bytes);

/* A framework's memory counters (GMT_TAG_COUNTERS) from the calling thread
 * (the marker API). Texts are cut at 128 bytes, the list at
 * GMT_COUNTERS_MAX entries. */
#define GMT_COUNTERS_MAX 64
void gmt_record_counters(unsigned reason, const char *source, const char *device, int64_t ordinal,
			 size_t n, const char *const *names, const uint64_t *values);

/* A framework's out-of-memory error (GMT_TAG_FWOOM) from the calling thread
 * (the marker API): texts cut at 128 bytes, the message at
 * GMT_FWOOM_MESSAGE_MAX, the list at GMT_FWOOM_VALUES_MAX entries. */
void gmt_record_fwoom(unsigned how, const char *source, const char *type, int64_t ordinal, size_t n,
		      const char *const *names, const uint64_t *values, const char *message);

/* The process's exit status as the exit hooks and main's return pass it
 * (GMT_EXIT_*), for the EXIT record the final flush writes before its
 * trailer. Async-signal-safe: a store, no lock. */
void gmt_exit_status(unsigned how, int status);
/* A record other than an event from the calling thread (a GMT_RING_* type
 * whose body the caller fills): its body's room in the thread's ring, or
 * NULL (tracing off, or the ring stayed full: counted as lost). A non-NULL
 * begin is followed by gmt_record_end(*len) on the same thread, nothing
 * traced in between; errno is the caller's to keep. */
void *gmt_record_begin(int type, size_t body, size_t *len);
void gmt_record_end(size_t len);

/* A framework's allocator history (preload/fwhist.c). */
uint64_t gmt_python_name_id(const char *function, const char *file, uint64_t line);

/* Phase markers (GMT_TAG_RANGE) from the calling thread: NVTX and the
 * marker API. text may be NULL (POP, END); it is cut at 1024 bytes. */
/* gpumemtrace_flush_v1: waits, at most max_ms, until everything recorded
 * before the call is written (a flush cycle that began after it ended).
 * 0: written; 1: nothing to wait for (not tracing, or the trace ended);
 * -1: not within max_ms. */
int gmt_flush_wait(unsigned max_ms);
/* gpumemtrace_trace_path_v1: the trace file's path into buf (cut to size,
 * NUL-terminated); its length, or -1 before the file exists. */
long gmt_trace_path(char *buf, size_t size);
void gmt_record_range(enum gmt_range_op op, uint64_t id, enum gmt_range_source source,
		      const char *text);

/* One NVML reading (GMT_TAG_SAMPLE), from the sampling thread. */
struct gmt_raw_sample;
void gmt_record_sample(const struct gmt_raw_sample *s);

/* Defines Python frame `id` (GMT_TAG_PYFRAME) before the calling thread's
 * next event uses GMT_PYFRAME_IP(id). Strings are cut at 1024 bytes. */
void gmt_record_pyframe(uint64_t id, const char *function, const char *file, uint64_t line);

/* 1 once the trace file exists (ACTIVE or FINISHED): samplers start then,
 * so a process that never touches CUDA leaves no trace. */
int gmt_trace_started(void);

/* Queues a NOTE for the trace (level 0 info, 1 warning): something a
 * reader must know, such as a route the hooks could not follow. Safe before
 * the trace exists; at most GMT_MAX_NOTES are kept, the rest are counted. */
#define GMT_MAX_NOTES 32
void gmt_note(int level, const char *text);

/* After every pipe2 of the process: a pipe libunwind made for itself (the
 * calling thread is capturing a stack) is moved high (preload/stackcache.c). */
void gmt_unwinder_pipe(int fds[2]);
/* Before every mincore and msync of the process: 0 when libunwind asks
 * (the calling thread is capturing a stack) and its pipe's numbers are
 * the program's now: the call must fail, so libunwind never uses them. */
int gmt_unwinder_may_check(void);

/* exit() was called: returns at once for the first call; a racing call
 * from another thread waits a little for the first to end the process,
 * then finishes the trace itself. Keeps errno. */
void gmt_exit_called(void);
/* The same, done by the flush thread while the caller waits a bounded
 * time: async-signal-safe, for _exit and exec, which handlers may call. */
void gmt_finish_async(enum gmt_end_reason reason);
/* An exec came back (it failed): the flush thread writes again. Its
 * trailer was written already, so the trace stays complete until then.
 * Async-signal-safe; keeps errno. */
void gmt_exec_returned(void);

#endif
