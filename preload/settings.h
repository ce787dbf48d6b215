/* GPUMEMTRACE_* environment settings, read once. A bad value gets one
 * warning and the default; it never stops the traced program. */
#ifndef GMT_SETTINGS_H
#define GMT_SETTINGS_H

#include <stddef.h>

struct gmt_settings {
	const char *output_template; /* GPUMEMTRACE_OUTPUT, default gpumemtrace.%p.gmt */
	int stack_depth;	     /* GPUMEMTRACE_STACK_DEPTH, 0..256, default 64 */
	int flush_ms;		     /* GPUMEMTRACE_FLUSH_MS, 1..60000, default 20 */
	size_t ring_bytes;	     /* GPUMEMTRACE_RING_KB, 64..65536, default 1024 */
	int full_wait_ms;	     /* GPUMEMTRACE_FULL_WAIT_MS, 0..60000, default 1000 */
	int stack_cache;	     /* GPUMEMTRACE_STACK_CACHE: 0 off, 1 on (default), 2 verify */
	int symbolize;		     /* GPUMEMTRACE_SYMBOLIZE, 0 or 1, default 1 */
	int disabled;		     /* GPUMEMTRACE_DISABLE=1 */
	int python;		     /* GPUMEMTRACE_PYTHON, 0 or 1, default 1 */
	long pid_only;	 /* GPUMEMTRACE_PID_ONLY: trace only this pid (0: every process) */
	int sample_ms;	 /* GPUMEMTRACE_SAMPLE_MS, 0..60000, default 100; 0: not periodic */
	int compress;	 /* GPUMEMTRACE_COMPRESS, 0 or 1, default 1: zstd chunks */
	int clock;	 /* GPUMEMTRACE_CLOCK: 0 CLOCK_MONOTONIC, 1 TSC where vouched for
			    (default), 2 TSC where invariant */
	int record_argv; /* GPUMEMTRACE_RECORD_ARGV, 0 or 1, default 1: the command line */
	/* GPUMEMTRACE_TRACE_LIST (or NULL): the file `gpumemtrace run` made, to
	 * which the trace's path is added (gmt_writer_list) */
	const char *trace_list;
};

#define GMT_MAX_STACK_DEPTH 256

void gmt_settings_load(struct gmt_settings *s);

#endif
