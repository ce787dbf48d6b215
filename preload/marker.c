/* The marker API's entry points (include/gpumemtrace/gpumemtrace.h finds
 * them with dlsym, so a program that is not traced runs the same). */
#include <stddef.h>
#include <stdint.h>

#include "preload/exports.h"
#include "preload/tracer.h"

#define GMT_EXPORT __attribute__((visibility("default")))

GMT_EXPORT void gpumemtrace_mark_v1(const char *text)
{
	gmt_record_range(GMT_RANGE_MARK, 0, GMT_RANGE_SRC_API, text);
}

GMT_EXPORT void gpumemtrace_range_push_v1(const char *text)
{
	gmt_record_range(GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_API, text);
}

GMT_EXPORT void gpumemtrace_range_pop_v1(void)
{
	gmt_record_range(GMT_RANGE_POP, 0, GMT_RANGE_SRC_API, NULL);
}

/* The pytest plugin's per-test figures: everything recorded so far in the
 * file before it reads it (preload/flush.c, gmt_flush_wait). */
GMT_EXPORT int gpumemtrace_flush_v1(unsigned max_ms)
{
	return gmt_flush_wait(max_ms);
}

GMT_EXPORT long gpumemtrace_trace_path_v1(char *buf, size_t size)
{
	return gmt_trace_path(buf, size);
}

/* A framework's memory counters (GMT_TAG_COUNTERS): n names and values.
 * The helper of `run --framework-counters` calls it through ctypes. */
GMT_EXPORT void gpumemtrace_counters_v1(unsigned reason, const char *source, const char *device,
					int64_t ordinal, size_t n, const char *const *names,
					const uint64_t *values)
{
	gmt_record_counters(reason, source, device, ordinal, n, names, values);
}

/* A framework's out-of-memory error (GMT_TAG_FWOOM): how the helper saw it
 * (GMT_FWOOM_*), the exception's class, n figures, and its message. The
 * helper of `run --framework-counters` calls it through ctypes. */
GMT_EXPORT void gpumemtrace_framework_oom_v1(unsigned how, const char *source, const char *type,
					     int64_t ordinal, size_t n, const char *const *names,
					     const uint64_t *values, const char *message)
{
	gmt_record_fwoom(how, source, type, ordinal, n, names, values, message);
}
