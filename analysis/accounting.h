/* The reconciliation of what nvidia-smi shows with what the trace explains,
 * per device, at the traced peak of device bytes and at the end: used by
 * `gpumemtrace accounting` and by the summary. docs/reports.md explains the
 * figures and the likely-route heuristics. */
#ifndef GMT_ANALYSIS_ACCOUNTING_H
#define GMT_ANALYSIS_ACCOUNTING_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/peakset.h"
#include "analysis/trace.h"

/* Unexplained memory is flagged above both of these. */
#define ACCT_FLAG_SHARE 0.10
#define ACCT_FLAG_BYTES (64ull << 20)
/* The sample for a moment: the highest within this long after it. */
#define ACCT_WINDOW_NS 1000000000ull

struct acct_lib {
	const char *library;
	uint64_t bytes, count;
};

/* The framework's own counters at a moment (analysis/counters.h, traces of
 * `run --framework-counters`): its cache split into tensors and free space,
 * which no driver call shows. */
struct acct_cache {
	bool known;	   /* a reading of this device exists */
	bool has_reserved; /* the framework says what it holds (PyTorch, JAX; not TF) */
	const char *api, *device_name;
	uint64_t time_ns; /* of the reading: at or before the moment, else the first */
	uint64_t reserved, allocated;
};

static inline uint64_t acct_cache_free(const struct acct_cache *c)
{
	return c->reserved > c->allocated ? c->reserved - c->allocated : 0;
}

struct acct_moment {
	bool have;	  /* false: no device bytes were ever traced there */
	uint64_t time_ns; /* absolute */
	/* The peak only: the end of its plateau, when traced device bytes last
	 * fell below 95% of it (accounting.c) (0: never). A training loop returns to
	 * its peak every step: the plateau spans those returns. A sample
	 * speaks for the peak only if taken from the peak to then. */
	uint64_t until_ns;
	bool unsampled; /* samples exist, but none was taken in the peak's plateau */
	/* nvidia-smi */
	bool nvml;	       /* a sample was found */
	uint64_t nvml_dropped; /* the device's NVML figures are inconsistent
				  (acct_nvml_inconsistent): its largest, not used */
	bool nvml_process;     /* it is this process's usage (else the whole device's) */
	uint64_t smi, sample_time_ns;
	int sample_reason;
	/* traced */
	uint64_t traced, device, async, vmm;
	uint64_t big_allocs, rounding; /* allocations over 1 MiB; their 2 MiB page rounding */
	struct acct_lib *libs;	       /* sorted by bytes */
	size_t nlibs;
	/* contexts live then */
	uint64_t contexts, contexts_live, contexts_unmeasured;
	/* nvidia-smi - traced - contexts (valid with nvml) */
	int64_t unexplained;
	bool flagged;
	struct acct_cache cache;
};

struct acct_route {
	const char *key, *text;
	char *evidence;
	int score;
};

struct acct_dev {
	int64_t ordinal;
	const char *name;
	uint64_t total;
	struct acct_moment peak, end;
	uint64_t ctx_events, ctx_measured; /* context creations seen, and measured */
	/* The cost of a context the trace's first event created: the library's
	 * first NVML sample is taken inside that call, so it may show it. */
	uint64_t first_event_ctx;
	size_t nsamples;
	struct acct_route *routes; /* most likely first; only when a moment is flagged */
	size_t nroutes;
};

struct acct {
	struct trace *t;
	const char *nvml_why; /* why there is no NVML figure; NULL when samples exist */
	struct acct_dev *devs;
	size_t ndevs;
	void *pass; /* between acct_begin and acct_end */
};

/* The one rule for nvidia-smi's figures, in accounting, summary, explain,
 * oom and check --max-smi: a device's NVML figures (this process's when
 * `process`, else the device's use) are not what nvidia-smi showed when one
 * sample's figure is above the device's total memory (a stale or simulated
 * NVML: the emulators report 1.22 GiB for a process on a 1 GiB device).
 * Then none of that device's figures is used (the remaining ones would
 * understate its peak), and every report says so. Returns 0 when they can
 * be used, else the largest figure above the total. */
uint64_t acct_nvml_inconsistent(const struct trace *t, int64_t ordinal, bool process);

/* One replay of t. Returns -1, or the exit code of a read error. */
int acct_compute(struct acct *a, struct trace *t);
/* The same, fed from a caller's replay pass (rp, with ps attached):
 * acct_event after each replay_apply; acct_end once t's metadata is
 * complete. */
void acct_begin(struct acct *a, struct trace *t, struct replay *rp);
void acct_event(struct acct *a, const struct gmt_event *e);
void acct_end(struct acct *a, const struct peakset *ps);
/* Between acct_begin and acct_end: the cost of the contexts (with their
 * module code) live on device `ordinal` as of the last acct_event. */
uint64_t acct_contexts_now(const struct acct *a, int64_t ordinal);
void acct_free(struct acct *a);

#endif
