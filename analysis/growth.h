/* How device memory grew, per device, for gpumemtrace growth: every step of
 * the high-water mark, the sizes that raised it, the chart's column highs,
 * and the verdict: leak, no leak, or undetermined (growth-verdict.c).
 *
 * The verdict follows the memory a run keeps from one iteration to the
 * next. Iterations come from repeating ranges or marks, else from a
 * repeating allocation (one freed before it comes again); each iteration's
 * level is the lowest live bytes inside it, never lowered (a running
 * maximum). Without iterations the level is the high-water mark over time.
 * A leak is that level still rising at the end: every iteration (a ramp),
 * or in regular steps (a caching allocator's segments: a staircase).
 *
 * Two replays per trace: the first finds the steps, the chart and the
 * repeating allocation; the second measures each iteration. */
#ifndef GMT_ANALYSIS_GROWTH_H
#define GMT_ANALYSIS_GROWTH_H

#include <stdbool.h>
#include <stdint.h>

#include "reader/hash.h"

#include "analysis/replay.h"
#include "analysis/trace.h"

#define GROWTH_MAX_STEPS 100000 /* kept for the output; all are counted */
/* Memory bounded whatever the trace's length: at most this many
 * iterations (a run with more has them merged: growth_markers.stride),
 * and at most this many (site, size) keys followed in search of a
 * repeating allocation (keys first seen later are not candidates). */
#define GROWTH_MAX_ITERATIONS 100000
#define GROWTH_MAX_KEYS	      (1u << 18)
#define GROWTH_MARKER_MIN     3
#define GROWTH_PATTERN_MIN    8 /* a repeating allocation needs 8 cycles to make iterations */

struct growth_params {
	bool has_device; /* only device `device` (listed even without events) */
	int64_t device;
	int ncols; /* chart columns between the first and last event */
};

struct growth_step {
	uint64_t time_ns, peak, step, size, stack_id;
	uint32_t api;
};

/* The verdict's input: the rises of a level over positions (iteration
 * indices, or ns), in order, each to a higher level. */
struct growth_rise {
	uint64_t x, level;
};

struct growth_series {
	const struct growth_rise *rises;
	size_t n;
	uint64_t x0, xend; /* the first and the last position */
	/* the last activity (<= xend): growth that reaches it is still going
	 * on; without iterations, the last driver call (the process may run
	 * on without one, as a settled cache does) */
	uint64_t xlast;
	uint64_t base; /* the level at x0 before any rise */
	/* rises closer than merge make one step; a steady state needs
	 * min_steady positions without a rise */
	uint64_t merge, min_steady;
};

enum growth_kind { GV_UNDETERMINED, GV_NO_LEAK, GV_LEAK };
/* flat: no rise; settled: rises, then steady; stopped: a staircase, then
 * flat (long enough or not); cut: many regular steps up to the last call,
 * then none to the exit; short: too little steady to tell; blind: one
 * preallocation holds the device's memory, whose use makes no driver call */
enum growth_shape {
	GV_FLAT,
	GV_SETTLED,
	GV_RAMP,
	GV_STAIRS,
	GV_STOPPED,
	GV_CUT,
	GV_SHORT,
	GV_BLIND,
	GV_OOM,	    /* a leak's shape, but the run ended in an out-of-memory error */
	GV_FELL,    /* a leak's shape, but live bytes fell well below the level */
	GV_CUTOFF,  /* a leak's shape up to where the trace was cut (no trailer) */
	GV_DOUBLING /* a pool that doubles, not flat for the next doubling's time */
};

struct growth_verdict {
	enum growth_kind kind;
	enum growth_shape shape;
	size_t steps;	       /* clusters of rises */
	uint64_t last_rise;    /* position of the last rise (x0 without one) */
	uint64_t steady;       /* xend - the last step's end */
	uint64_t max_gap;      /* the longest flat stretch between two steps */
	uint64_t need;	       /* the flat stretch a steady state needs at least */
	uint64_t period;       /* a staircase's mean step interval */
	uint64_t grew_for;     /* how long a ramp or staircase grew */
	size_t grew_steps;     /* in how many steps */
	uint64_t start_x;      /* a leak's first step */
	uint64_t from_x, to_x; /* a leak's measured stretch */
	uint64_t from_level, to_level, level;
	double rate;	  /* level per position over that stretch */
	bool rate_hidden; /* a doubling pool: the growth per step is not in its calls */
};

/* The verdict on a series: see growth-verdict.c for the rules. */
void growth_decide(const struct growth_series *s, struct growth_verdict *v);

struct growth_held {
	uint64_t time_ns, stack_id, size;
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
	/* per iteration (markers or pattern): live bytes at each boundary,
	 * the lowest live bytes inside each iteration */
	uint64_t *floor;
	uint64_t cur_min;
	struct growth_verdict v;
	/* allocations live at the end of the verdict's window (snap_time):
	 * where a leak's bytes were allocated */
	uint64_t snap_time;
	bool snapped;
	struct growth_held *held;
	size_t nheld, held_cap;
	uint64_t site_stack, site_bytes, site_count; /* a leak's largest site */
	uint64_t prealloc;			     /* GV_BLIND: the preallocation's size */
	uint64_t *mk_live; /* live bytes at each iteration boundary (markers) */
};

/* Iteration boundaries: the MARKs of the most frequent text, else the
 * starts of the most frequent top-level range (plus the last one's end),
 * GROWTH_MARKER_MIN occurrences at least; else the allocations of the most
 * repeated (site, size) made while none of it was live, GROWTH_PATTERN_MIN
 * at least. n boundaries make n - 1 iterations. */
struct growth_markers {
	const char *source; /* "mark", "range", "pattern", NULL */
	const char *name;
	char pattern_name[64];
	uint64_t pattern_stack, pattern_size;
	int64_t pattern_device;
	uint64_t *times;
	size_t n, next;
	/* More than GROWTH_MAX_ITERATIONS + 1 boundaries (found: `found`):
	 * every stride-th is kept, and the last, so one iteration spans stride
	 * of the run's (the last one fewer); 1 otherwise. */
	size_t stride, found;
	/* pass 2 of a pattern: times are filled as its cycles come */
	size_t filled, cycle;
	uint64_t live;
};

struct growth_pat;

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
	uint64_t ooms, last_oom; /* failed allocations: out of memory */
	/* working state of growth_compute */
	int pass;
	struct replay rp;
	struct growth_pat *pats; /* pass 1: (site, size) -> cycles */
};

/* Fills out from t. Returns the read's exit code, or -1 (as trace_replay);
 * on a read error, out holds what the first replay found. Free out with
 * growth_result_free either way. */
int growth_compute(struct trace *t, const struct growth_params *p, struct growth_result *out);
void growth_result_free(struct growth_result *r);

/* After the replays: each device's verdict and a leak's site. */
void growth_verdicts(struct growth_result *r);
/* "leak", "no-leak", "undetermined". */
const char *growth_kind_name(enum growth_kind k);
/* The verdict's reason in a sentence (no final period), in buf. */
const char *growth_reason(const struct growth_result *r, const struct growth_dev *d, char *buf,
			  size_t size);
/* "ranges", "pattern" or "none"; iterations: 0 without. */
const char *growth_iteration_source(const struct growth_result *r);
size_t growth_iterations(const struct growth_result *r);
/* A leak's rate per iteration (false without iterations) and per second. */
bool growth_rate_per_step(const struct growth_result *r, const struct growth_dev *d, double *rate);
double growth_rate_per_s(const struct growth_result *r, const struct growth_dev *d);
/* The time of a verdict position (an iteration's start, or ns as is). */
uint64_t growth_x_time(const struct growth_result *r, uint64_t x);

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
