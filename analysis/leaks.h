/* leaks' model: what was still live at the end of each trace (never
 * freed), grouped in trace_rows by stack, function, library or API, with
 * the kinds of memory, when the first and last were allocated, and what a
 * recognized framework holds until exit by design. One replay per trace;
 * what is left in the live set is what was never freed. cli/cmd-leaks.c
 * prints it. */
#ifndef GMT_ANALYSIS_LEAKS_H
#define GMT_ANALYSIS_LEAKS_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/trace.h"

struct leak_trace {
	struct trace t;
	uint64_t bytes, allocs;
	uint64_t bucket[BK_COUNT];
	char held_by[300]; /* what holds them until exit (explain_held_by), or "" */
	/* the bytes held_by names: under a stream-ordered pool only the pool's
	 * allocations (a library's own cuMemAlloc beside them is not) */
	uint64_t held_bytes;
};

/* Whether a bucket of memory counts as leaked: not VA reservations and
 * pool objects, which hold no memory. */
bool leaks_counted(int bucket);
/* Opens path into lt->t, replays it while reading the file and adds what
 * is left live to rows (VA reservations and pool objects hold no memory:
 * left out). -1, or the exit code after the error line; after a failed
 * open lt->t is not open. */
int leaks_read_trace(struct trace_rows *rows, struct leak_trace *lt, const char *cmd,
		     const char *path, const struct site_opts *sites, bool short_names);

#endif
