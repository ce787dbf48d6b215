/* The oom report's figures for one trace: every allocation that failed
 * with out-of-memory, the MEMINFO record (free/total) after it, what the
 * process held then by library and by site, and a verdict; other failed
 * calls counted by API and result. */
#ifndef GMT_ANALYSIS_OOM_H
#define GMT_ANALYSIS_OOM_H

#include <stdint.h>

#include "analysis/trace.h"

#define OOM_MAX	      200 /* analysed and kept; all are counted */
#define OOM_TOP_LIBS  8
#define OOM_TOP_SITES 5
#define OOM_MAX_OTHER 64 /* distinct (api, result) pairs kept */

struct oom_holder {
	const char *name; /* library (trace-owned string) */
	uint64_t stack_id;
	uint64_t bytes, count;
};

struct oom_failure {
	struct gmt_event e;
	const struct trace_meminfo *mi; /* NULL: none matched */
	uint64_t held, held_all;	/* live device bytes: on e.device, on all */
	struct oom_holder libs[OOM_TOP_LIBS], sites[OOM_TOP_SITES];
	size_t nlibs, nsites, libs_total, sites_total;
	const char *verdict; /* "fragmentation", "other processes", "real exhaustion", "unknown" */
	char why[400];
};

struct oom_other {
	uint32_t api;
	uint64_t result, count, first_time;
};

struct oom_result {
	struct oom_failure *ooms; /* the first OOM_MAX, in trace order */
	size_t nooms;
	uint64_t ooms_total;
	struct oom_other others[OOM_MAX_OTHER];
	size_t nothers;
	uint64_t others_total;
};

/* One replay of `t`. Returns the trace's exit code, or -1; `out` is filled
 * either way (oom_free it). */
int oom_compute(struct trace *t, struct oom_result *out);
void oom_free(struct oom_result *r);

#endif
