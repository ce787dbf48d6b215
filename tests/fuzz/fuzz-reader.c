/* libFuzzer target: an input is a trace file, read by the trace reader and
 * then by one CLI command (chosen by the input's length, so the real traces
 * seeding the corpus stay valid traces). Every command must end with an
 * exit code, never a crash, a sanitizer report or a runaway allocation.
 * Built and run by `make fuzz` (docs/reliability.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/cli.h"
#include "reader/reader.h"

static int trace_fd = -1;
static char trace_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	trace_fd = memfd_create("fuzz-trace", 0);
	if (trace_fd < 0)
		abort();
	snprintf(trace_path, sizeof trace_path, "/proc/self/fd/%d", trace_fd);
	xalloc_on_failure(diag_out_of_memory); /* as the CLI's main */
	/* The reports themselves are not under test: keep them off the log. */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

/* The reader alone: every record, to the end or the first error. */
static void read_all(void)
{
	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(trace_path, &err);
	if (!r)
		return;
	struct gmt_record rec;
	while (gmt_reader_next(r, &rec) > 0)
		;
	gmt_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (ftruncate(trace_fd, 0) != 0 || pwrite(trace_fd, data, size, 0) != (ssize_t)size)
		abort();
	read_all();
	char *p = trace_path;
	char *argvs[][7] = {
	    {"dump", p},
	    {"summary", "--json", p},
	    {"summary", p},
	    {"top", p},
	    {"growth", p},
	    {"fragmentation", p},
	    {"oom", p},
	    {"leaks", p},
	    {"diff", p, p},
	    {"check", "--max-peak", "1GiB", p},
	    {"accounting", p},
	    {"top", "--by", "range", p},
	    {"plot", "-o", "/dev/null", p},
	    {"flamegraph", "--folded", p},
	    {"export", "--format", "perfetto", "-o", "/dev/null", p},
	    {"export", "--format", "pprof", "-o", "/dev/null", p},
	};
	int (*fns[])(int, char **) = {cmd_dump,	  cmd_summary,	     cmd_summary,    cmd_top,
				      cmd_growth, cmd_fragmentation, cmd_oom,	     cmd_leaks,
				      cmd_diff,	  cmd_check,	     cmd_accounting, cmd_top,
				      cmd_plot,	  cmd_flamegraph,    cmd_export,     cmd_export};
	size_t k = size % (sizeof fns / sizeof fns[0]);
	int argc = 0;
	while (argc < 7 && argvs[k][argc])
		argc++;
	int rc = fns[k](argc, argvs[k]);
	if (rc < 0 || rc > 4)
		abort(); /* only the documented exit codes */
	return 0;
}
