/* summary's model, shared by its text (cmd-summary.c) and JSON
 * (summary-json.c) printers. */
#ifndef GMT_CLI_SUMMARY_H
#define GMT_CLI_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "reader/hash.h"

#include "analysis/accounting.h"
#include "analysis/counters.h"
#include "analysis/peakset.h"
#include "analysis/phase.h"
#include "analysis/replay.h"
#include "analysis/trace.h"

struct dev_info {
	int64_t ordinal;
	const char *name;
	uint64_t total;
	struct rp_level lv;
	struct site *sites; /* top sites at the peak, sorted */
	size_t nsites, distinct_sites;
	struct site_row *rows; /* the text's rows: sites that print alike merged */
	size_t nrows, distinct_rows;
	struct acct_lib *libs; /* live bytes at the peak by library, sorted */
	size_t nlibs;
	uint64_t kind_peak[GMT_KIND_MAX_ + 1]; /* live bytes at the peak by kind */
	uint64_t kind_end[GMT_KIND_MAX_ + 1];  /* live at the end by kind */
};

struct site_row {
	UT_hash_handle hh;
	char *text;			 /* the site and 3 callers, as printed */
	uint64_t stack_id, bytes, count; /* stack_id: the largest stack's */
	size_t stacks;
};

struct call {
	UT_hash_handle hh;
	uint32_t api;
	uint64_t count, failed, bytes;
};

struct failure {
	uint64_t time_ns, size, result, stack_id;
	uint32_t api, recorded_api; /* api: site_api's (the static runtime's) */
	int64_t device;
};

/* Driver allocations and frees by (api, stack): after the pass, each counts
 * as the runtime API it stands for (site_api: the static runtime). */
struct drv_call {
	UT_hash_handle hh;
	uint64_t key[2]; /* api, stack */
	uint64_t count, failed, bytes;
};

struct site {
	UT_hash_handle hh;
	uint64_t stack_id, bytes, count;
	struct trace_frame frame;
	bool has_frame;
};

struct summary {
	struct trace t;
	const char *path;
	const struct gmt_header *hdr;
	struct dev_info *devs;
	size_t ndevs, devs_cap;
	struct call *calls;
	struct call *by_api[GMT_API_MAX_ + 1];
	struct drv_call *drv, *drv_last;
	bool drv_api[GMT_API_MAX_ + 1]; /* the APIs that go to drv */
	struct failure *failures;
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
	uint64_t last_live; /* device bytes before the event */
};

/* Kinds of device memory, in the order shown. */
struct summary_kind {
	int kind;
	const char *key, *label;
};
enum { NKINDS = 3 };
extern const struct summary_kind dev_kinds[NKINDS];

static inline int64_t summary_rel(const struct summary *s, uint64_t t)
{
	return trace_rel(&s->t, t);
}

static inline uint64_t summary_end(const struct summary *s)
{
	return trace_end_ns(&s->t);
}

/* Phases in first-seen order, "(no phase)" last; only those with events. */
struct phase **summary_phases(struct summary *s, size_t *n);

/* The per-process figures for several traces. */
struct proc_row {
	uint64_t peak, live_end, allocs_end, failures, events;
	int64_t peak_time;
	bool complete;
};

/* A failure's result name (the static runtime's out of memory as the
 * runtime's). */
const char *failure_result(const struct failure *x);

/* One trace's summary as a JSON object (no newline after it). */
void summary_print_json(struct summary *s, const struct gmt_read_info *in);
/* Several traces: each one's object, then the per-process rows, totals and
 * imbalance. */
void summary_print_many_json(struct summary *all, struct trace **ts, const struct proc_row *rows,
			     const struct proc_row *tot, const uint64_t *peaks,
			     const uint64_t *ends, int n);

#endif
