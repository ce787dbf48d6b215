/* The marker API's entry points (include/gpumemtrace/gpumemtrace.h finds
 * them with dlsym, so a program that is not traced runs the same). */
#include <stddef.h>

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
