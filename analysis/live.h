/* The live view of a trace still being written (gpumemtrace watch): each
 * poll reads only what the file gained (trace_follow) and folds it into
 * figures that cost the same to keep after a minute or a day:
 *
 *  - per device: traced live bytes and their peak (summary's replay rules),
 *    the framework's reserved bytes (its last COUNTERS reading), NVML's
 *    last sample, and a history of the live bytes, the most in each second
 *    of trace time, for the last LIVE_HISTORY_S seconds;
 *  - per device and group (site, library, thread): live bytes and
 *    allocations, and what they were at the baseline (live_set_start) and
 *    at each of the last LIVE_STEPS step boundaries;
 *  - steps: a MARK, or a range opened at depth 0 on its thread (or a
 *    START), whose text matches the step expression; each is a boundary;
 *  - what the reports warn of: events lost, an incomplete or damaged file.
 *
 * Events are applied in time order: the threads' batches interleave in the
 * file, so each is held until it is `window_ns` older than the newest read
 * (a reorder; applied during the read, so a long backlog costs no memory),
 * and all are applied when a poll finds nothing new. Ranges are taken as
 * they are read, before the events after them are applied.
 *
 *     struct live lv;
 *     int rc = live_open(&lv, "watch", path, NULL);   // -1: ok, else the exit code
 *     while (...) { live_poll(&lv); ... live_rows(&lv, dev, LIVE_BY_SITE, ...); }
 *     live_close(&lv);
 *
 * Memory is bounded by live allocations, distinct stacks and groups. */
#ifndef GMT_ANALYSIS_LIVE_H
#define GMT_ANALYSIS_LIVE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/hash.h"

#include "analysis/replay.h"
#include "analysis/trace.h"

#define LIVE_HISTORY_S 600 /* seconds of live-bytes history per device */
/* Step boundaries remembered per device and row. A leak suspect: over the
 * last LIVE_STEPS boundaries, live bytes never fell, and rose in both the
 * first half of the steps between them and the second. A caching
 * allocator's staircase (a new segment every few steps) counts; growth
 * that stops (a cache warming up in the first steps) does not. */
#define LIVE_STEPS	16
#define LIVE_WINDOW_NS	(250ull * 1000000ull) /* default hold-back for time order */
#define LIVE_STEP_REGEX "step|iter|batch"     /* default, case-insensitive */

enum live_group { LIVE_BY_SITE, LIVE_BY_LIBRARY, LIVE_BY_THREAD, LIVE_GROUPS };
enum live_sort { LIVE_SORT_LIVE, LIVE_SORT_START, LIVE_SORT_STEP, LIVE_SORTS };
extern const char *const live_group_name[LIVE_GROUPS]; /* "sites", "libraries", "threads" */
extern const char *const live_sort_name[LIVE_SORTS];   /* "live", "since start", "since step" */

struct live_row {
	UT_hash_handle hh;
	char *id; /* "group|device|key" */
	const char *key;
	int group; /* enum live_group */
	int64_t device;
	uint64_t live, count; /* bytes and allocations live now */
	uint64_t at_start;
	uint64_t at_step[LIVE_STEPS]; /* ring by step number */
	uint64_t born_step;	      /* steps seen when it was made: before, it held 0 */
	uint64_t stack_id;	      /* one of its stacks (sites, libraries) */
	uint32_t api;		      /* that stack's allocation's API */
};

struct live_dev {
	int64_t ordinal;
	uint64_t live, peak, count; /* traced device memory */
	uint64_t at_start;
	uint64_t at_step[LIVE_STEPS];
	uint64_t born_step;
	uint64_t total; /* the DEVICE record's; 0: unknown */
	/* the framework's last reading (COUNTERS) */
	bool has_reserved, has_allocated;
	uint64_t reserved, allocated;
	char source[32]; /* "torch" */
	/* NVML's last sample */
	bool has_nvml, nvml_process_known;
	uint64_t nvml_used, nvml_total, nvml_process;
	/* a sample above the device's total (acct_nvml_inconsistent's rule):
	 * its largest figure; then no NVML figure of the device is used */
	uint64_t nvml_inconsistent;
	/* history: hist[s % LIVE_HISTORY_S] is the most live in second s */
	uint64_t hist[LIVE_HISTORY_S];
	int64_t hist_sec; /* the newest second written; -1: none */
};

struct live_opts {
	uint64_t window_ns;	/* 0: LIVE_WINDOW_NS */
	const char *step_regex; /* NULL: LIVE_STEP_REGEX */
};

struct live_step_at;
struct live_cache;
struct live_thread;
struct live_open_range;

struct live {
	struct trace t;
	struct replay rp;
	struct reorder q;
	uint64_t window_ns;
	regex_t step_re;
	struct live_dev *devs;
	size_t ndevs, devs_cap;
	struct live_row *rows;
	size_t nrows;
	struct live_cache *cache;     /* (device, stack) -> its site and library rows */
	struct live_thread *threads;  /* tid -> name, range depth */
	struct live_step_at *pending; /* step boundaries not yet reached by the replay */
	size_t npending, pending_cap;
	/* steps */
	uint64_t steps;
	uint64_t step_time_ns; /* the last boundary's */
	char *step_text;       /* its range's text; NULL before the first */
	/* the newest time read (events, ranges, samples, counters) and applied */
	uint64_t newest_ns, applied_ns;
	uint64_t events; /* applied */
	bool started;	 /* live_set_start called */
	size_t nsymbols; /* SYMBOL records the site rows were named with */
	uint64_t start_time_ns;
};

/* Opens a trace to follow (it must exist and have a readable header).
 * Returns -1, else the exit code after the one error line. */
int live_open(struct live *lv, const char *cmd, const char *path, const struct live_opts *o);
void live_close(struct live *lv);
/* Reads what the trace gained and applies it. Returns whether anything new
 * was read. */
bool live_poll(struct live *lv);
/* The baseline "since start" is measured from: now. */
void live_set_start(struct live *lv);

/* The device's entry, NULL when unknown. Devices are in lv->devs by ordinal. */
const struct live_dev *live_dev(const struct live *lv, int64_t ordinal);
/* A row's change since the baseline and since the last step boundary. */
int64_t live_row_since_start(const struct live_row *r);
int64_t live_row_since_step(const struct live *lv, const struct live_row *r);
int64_t live_dev_since_step(const struct live *lv, const struct live_dev *d);
/* The rows of one device and grouping with live bytes or a change, sorted
 * (largest first: live bytes, or the change, then the key); malloc'd. */
struct live_row **live_rows(struct live *lv, int64_t device, enum live_group g, enum live_sort s,
			    size_t *n);

/* A leak suspect on d: its rise over the last boundaries, and the site row
 * that rose most over them (NULL when none did). */
struct live_leak {
	uint64_t steps; /* steps looked at (LIVE_STEPS - 1) */
	uint64_t rises; /* of them, how many rose (in both halves) */
	uint64_t grew;	/* bytes, first boundary to last */
	const struct live_row *site;
	uint64_t site_grew;
};
bool live_leak(const struct live *lv, const struct live_dev *d, struct live_leak *out);

/* The history of d as ncols values (the most live in each column's span),
 * oldest first, ending at the newest time read; *span_s: seconds a column
 * covers (at least 1). Columns before the trace began hold 0 and are
 * counted in *empty. */
void live_history(const struct live *lv, const struct live_dev *d, uint64_t *cols, size_t ncols,
		  uint64_t *span_s, size_t *empty);

/* A thread's name from its THREAD record, or NULL. */
const char *live_thread_name(const struct live *lv, uint64_t tid);

#endif
