/* summary's model: one pass over a trace (with a second for its phases
 * when it has ranges) gives, per device, the peak and what was live there
 * by site, library and kind, what was live at the end; the calls per API,
 * the failed calls, the NVML reconciliation, the frameworks' counters.
 * cli/cmd-summary.c and cli/summary-json.c print it. */
#ifndef GMT_ANALYSIS_SUMMARY_H
#define GMT_ANALYSIS_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "reader/hash.h"

#include "analysis/accounting.h"
#include "analysis/counters.h"
#include "analysis/fwtensors.h"
#include "analysis/peakset.h"
#include "analysis/phase.h"
#include "analysis/replay.h"
#include "analysis/trace.h"

#define SUMMARY_MAX_FAILURES 1000 /* kept for the output; all are counted */
#define SUMMARY_TOP_SITES    10	  /* sites and rows kept per device */

struct summary_dev {
	int64_t ordinal;
	const char *name;
	uint64_t total;
	struct rp_level lv;
	struct summary_site *sites; /* top sites at the peak, sorted */
	size_t nsites, distinct_sites;
	struct summary_row *rows; /* the text's rows: sites that print alike merged */
	size_t nrows, distinct_rows;
	struct acct_lib *libs; /* live bytes at the peak by library, sorted */
	size_t nlibs;
	uint64_t kind_peak[GMT_KIND_MAX_ + 1]; /* live bytes at the peak by kind */
	uint64_t kind_end[GMT_KIND_MAX_ + 1];  /* live at the end by kind */
};

struct summary_row {
	UT_hash_handle hh;
	char *text;			 /* the site and 3 callers, as printed */
	uint64_t stack_id, bytes, count; /* stack_id: the largest stack's */
	size_t stacks;
};

struct summary_call {
	UT_hash_handle hh;
	uint32_t api;
	uint64_t count, failed, bytes;
};

struct summary_failure {
	uint64_t time_ns, size, result, stack_id;
	uint32_t api, recorded_api; /* api: site_api's (the static runtime's) */
	int64_t device;
};

/* Driver allocations and frees by (api, stack): after the pass, each counts
 * as the runtime API it stands for (site_api: the static runtime). */
struct summary_drv {
	UT_hash_handle hh;
	uint64_t key[2]; /* api, stack */
	uint64_t count, failed, bytes;
};

struct summary_site {
	UT_hash_handle hh;
	uint64_t stack_id, bytes, count;
	struct trace_frame frame;
	bool has_frame;
};

struct summary {
	struct trace t;
	const char *path;
	const struct gmt_header *hdr;
	struct summary_dev *devs;
	size_t ndevs, devs_cap;
	struct summary_call *calls;
	struct summary_call *by_api[GMT_API_MAX_ + 1];
	struct summary_drv *drv, *drv_last;
	bool drv_api[GMT_API_MAX_ + 1]; /* the APIs that go to drv */
	struct summary_failure *failures;
	size_t nfailures_kept;
	uint64_t nfailures;
	struct replay rp;
	struct peakset ps;
	/* with NVML samples or its NOTE: the reconciliation */
	struct acct acct;
	bool has_acct;
	/* with ranges: the phases */
	struct phase_tracker phases;
	bool has_phases;
	/* with COUNTERS records: the frameworks' own counters */
	struct counters_set counters;
	/* with the framework's history (run --framework-history): what was
	 * inside its segments at each device's peak */
	struct fwt_set fwt;
	struct fwt_peaks peak_ptrs;
	bool has_fw;
	uint64_t last_live; /* device bytes before the event */
};

/* Kinds of device memory, in the order shown. */
struct summary_kind {
	int kind;
	const char *key, *label;
};
enum { NKINDS = 3 };
extern const struct summary_kind summary_kinds[NKINDS];

static inline int64_t summary_rel(const struct summary *s, uint64_t t)
{
	return trace_rel(&s->t, t);
}

/* Phases in first-seen order, "(no phase)" last; only those with events. */
struct phase **summary_phases(struct summary *s, size_t *n);

/* The per-process figures for several traces. */
struct summary_proc {
	uint64_t peak, live_end, allocs_end, failures, events;
	int64_t peak_time;
	bool complete;
};

/* A failure's result name (the static runtime's out of memory as the
 * runtime's). */
const char *summary_failure_result(const struct summary_failure *x);

/* The pass, as callbacks a reader of the file can drive: summary_pass_begin
 * before it (s->rp is the replay to run; s->t is opened by the reader),
 * summary_pass_event for each event (a replay callback, ctx = s), and
 * summary_pass_end after it (the second pass over the phases, the devices,
 * the sites): -1, or the exit code after the error line. */
void summary_pass_begin(struct summary *s);
void summary_pass_event(void *ctx, const struct gmt_event *e, struct replay *rp);
int summary_pass_end(struct summary *s);
/* All three over the file at path: -1 with s filled (summary_free it
 * whatever the result), or the exit code. short_names: tables' C++ names. */
int summary_read(struct summary *s, const char *cmd, const char *path,
		 const struct site_opts *sites, bool short_names);
void summary_free(struct summary *s);

/* The text's rows of a device's sites at its peak (dev->rows): stacks
 * that print alike with 3 callers merged. Made once, on demand. */
void summary_site_rows(struct summary *s, struct summary_dev *dev);

/* Each kept failure's case as oom names it (NULL: none), into
 * kase[s->nfailures_kept]; *any: oom judged some; *recovered: one was
 * recovered by a retry. */
void summary_failure_cases(struct summary *s, const char **kase, bool *any, bool *recovered);

/* One process's row, and the totals of n rows. */
struct summary_proc summary_proc_row(const struct summary *s);
struct summary_proc summary_proc_total(const struct summary_proc *rows, int n);

#endif
