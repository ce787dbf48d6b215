#include "preload/settings.h"

#include <stdlib.h>

#include "common/log.h"

static long env_long(const char *name, long def, long min, long max)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	long n = strtol(v, &end, 10);
	if (*end || n < min || n > max) {
		gmt_log("ignoring %s='%s' (want an integer in %ld..%ld); using %ld", name, v, min,
			max, def);
		return def;
	}
	return n;
}

void gmt_settings_load(struct gmt_settings *s)
{
	const char *out = getenv("GPUMEMTRACE_OUTPUT");
	s->output_template = out && *out ? out : "gpumemtrace.%p.gmt";
	const char *list = getenv("GPUMEMTRACE_TRACE_LIST");
	s->trace_list = list && *list ? list : NULL;
	s->stack_depth = (int)env_long("GPUMEMTRACE_STACK_DEPTH", 64, 0, GMT_MAX_STACK_DEPTH);
	s->flush_ms = (int)env_long("GPUMEMTRACE_FLUSH_MS", 20, 1, 60000);
	s->ring_bytes = (size_t)env_long("GPUMEMTRACE_RING_KB", 1024, 64, 65536) * 1024;
	s->full_wait_ms = (int)env_long("GPUMEMTRACE_FULL_WAIT_MS", 1000, 0, 60000);
	s->stack_cache = (int)env_long("GPUMEMTRACE_STACK_CACHE", 1, 0, 2);
	s->symbolize = (int)env_long("GPUMEMTRACE_SYMBOLIZE", 1, 0, 1);
	s->disabled = (int)env_long("GPUMEMTRACE_DISABLE", 0, 0, 1);
	s->python = (int)env_long("GPUMEMTRACE_PYTHON", 1, 0, 1);
	s->pid_only = env_long("GPUMEMTRACE_PID_ONLY", 0, 0, 0x7fffffff);
	s->sample_ms = (int)env_long("GPUMEMTRACE_SAMPLE_MS", 100, 0, 60000);
	s->compress = (int)env_long("GPUMEMTRACE_COMPRESS", 1, 0, 1);
	s->clock = (int)env_long("GPUMEMTRACE_CLOCK", 1, 0, 2);
	s->record_argv = (int)env_long("GPUMEMTRACE_RECORD_ARGV", 1, 0, 1);
}
