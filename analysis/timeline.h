/* plot's model: live device memory over a time window, per device, in
 * TIMELINE_COLS columns that each keep their highest point (so the peak is
 * never lost), layered by kind of memory or by library; the failed
 * allocations; the phases from the trace's ranges. cli/cmd-plot.c draws it. */
#ifndef GMT_ANALYSIS_TIMELINE_H
#define GMT_ANALYSIS_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/hash.h"

#include "analysis/counters.h"
#include "analysis/replay.h"
#include "analysis/trace.h"

#define TIMELINE_COLS	600 /* columns a trace is downsampled to (per-column max kept) */
#define TIMELINE_GROUPS 64  /* layers tracked; beyond that they count as "other", the last */
#define TIMELINE_OOMS	200 /* failed allocations kept; the rest are counted */

struct timeline_column {
	uint64_t total;
	uint64_t g[TIMELINE_GROUPS];
};

struct timeline_panel {
	int64_t ordinal;
	uint64_t cur[TIMELINE_GROUPS], total;
	struct timeline_column *cols;
	int opened; /* columns filled so far */
	uint64_t group_max[TIMELINE_GROUPS];
	struct rp_level lv; /* the device's peak and end, over the whole trace */
};

struct timeline_oom {
	uint64_t time_ns, size;
	int64_t device;
};

struct timeline_group {
	UT_hash_handle hh;
	uint64_t stack_id;
	int group;
};

struct timeline {
	struct trace *t;
	struct replay rp;
	bool by_library;
	int64_t only_dev;
	bool has_only_dev;
	uint64_t origin;   /* the trace's time zero: times are printed from it */
	uint64_t t0, span; /* the window drawn: absolute start, ns covered */
	uint64_t now;
	struct timeline_panel *panels;
	size_t npanels, panels_cap;
	char *names[TIMELINE_GROUPS];
	int ngroups;
	struct timeline_group *cache;
	struct timeline_oom ooms[TIMELINE_OOMS];
	size_t nooms, ooms_dropped;
	bool chosen;		      /* --from or --to */
	struct counters_set counters; /* the frameworks' own (COUNTERS records) */
};

/* The window the activity spans: the first to the last event, 2% around
 * (1 ms at least), within the trace; absolute times. */
void timeline_activity(const struct trace *t, uint64_t *lo, uint64_t *hi);

/* Replays t into tl: before it, tl is zeroed but for t, by_library,
 * only_dev/has_only_dev, origin, t0, span and chosen. Layers by kind are
 * analysis/snapshot.h's dev_kind; by library, named in tl->names. Panels
 * sorted by ordinal. -1, or the exit code after the error line. */
int timeline_compute(struct timeline *tl);
void timeline_free(struct timeline *tl);

/* Phases from the trace's ranges: PUSH/POP nest per thread, START/END by id. */
struct timeline_phase {
	uint64_t start, end;
	const char *text;
	int depth;
	bool mark;
};
/* The phases of t's ranges, in order: *out malloc'd, their count returned. */
size_t timeline_phases(const struct trace *t, struct timeline_phase **out);

#endif
