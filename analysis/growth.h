/* How device memory grew, per device, for gpumemtrace growth: every step of
 * the high-water mark, the sizes that raised it, the end of warm-up, the
 * slope of live bytes after it and the leak verdict, live bytes at each
 * iteration boundary (markers), and the chart's column highs.
 *
 * Two replays per trace: the first finds the steps, the final peak and the
 * chart; the second fits the slope over the samples after the warm-up. */
#ifndef GMT_ANALYSIS_GROWTH_H
#define GMT_ANALYSIS_GROWTH_H

#include <stdbool.h>
#include <stdint.h>

#include <uthash.h>

#include "analysis/replay.h"
#include "analysis/trace.h"

#define GROWTH_MAX_STEPS  100000 /* kept for the output; all are counted */
#define GROWTH_SLICES	  16
#define GROWTH_MARKER_MIN 3

struct growth_params {
	bool has_device; /* only device `device` (listed even without events) */
	int64_t device;
	int ncols; /* chart columns between the first and last event */
};

struct growth_step {
	uint64_t time_ns, peak, step, size, stack_id;
	uint32_t api;
};

struct growth_chunk {
	UT_hash_handle hh;
	uint64_t size, count;
};

struct growth_dev {
	int64_t ordinal;
	uint64_t peak, peak_time, last_bytes;
	struct growth_step *steps;
	size_t nsteps, steps_cap;
	uint64_t steps_total;
	struct growth_chunk *chunks; /* by bytes raised, largest first */
	/* chart */
	uint64_t *cols;
	int last_col;
	/* warm-up and slope */
	uint64_t warmup_end, window_start;
	bool has_warmup, growth_stopped;
	/* The window ends at the last sample at or above warmup_level, before
	 * the teardown at exit drags the line down; n counts its samples. */
	uint64_t warmup_level, window_end;
	uint64_t n, n_seen;
	/* The highest live bytes in each of GROWTH_SLICES equal slices of the
	 * window: the slope is fitted through these, since a fit through every
	 * sample of a sawtooth (allocate, free, repeat) leans with where it is cut. */
	uint64_t slice_max[GROWTH_SLICES], slice_time[GROWTH_SLICES];
	bool slice_has[GROWTH_SLICES];
	int points; /* slices the line went through: a slope needs 3 */
	double slope, rise;
	bool leak;
	uint64_t *mk_live; /* live bytes at each iteration boundary (markers) */
};

/* Iteration boundaries from markers: the MARKs of the most frequent text,
 * else the starts of the most frequent top-level range (plus the last one's
 * end). GROWTH_MARKER_MIN occurrences at least. */
struct growth_markers {
	const char *source, *name;
	uint64_t *times;
	size_t n, next;
};

struct growth_result {
	struct trace *t;
	struct growth_params p;
	struct growth_dev *devs; /* by ordinal */
	size_t ndevs;
	int ncols;
	uint64_t t0, t1;
	uint64_t process_peak; /* all selected devices together */
	uint64_t process_live;
	struct growth_markers mk;
	/* working state of growth_compute */
	int pass;
	struct replay rp;
};

/* Fills out from t. Returns the read's exit code, or -1 (as trace_replay);
 * on a read error, out holds what the first replay found. Free out with
 * growth_result_free either way. */
int growth_compute(struct trace *t, const struct growth_params *p, struct growth_result *out);
void growth_result_free(struct growth_result *r);

/* Whether d has live bytes at two iteration boundaries or more. */
bool growth_has_markers(const struct growth_result *r, const struct growth_dev *d);
/* The median of the growth between boundaries: a warm-up iteration or one
 * odd step does not move it, a steady leak does. */
int64_t growth_median_per_iteration(const struct growth_markers *mk, const struct growth_dev *d);
/* The allocator's growth policy, guessed from the steps (total: the
 * device's memory, 0 if unknown): "doubling", "preallocation", "fixed
 * blocks", "mixed", or "" without steps; *block the size it names. */
const char *growth_pattern(const struct growth_dev *d, uint64_t total, uint64_t *block);

#endif
