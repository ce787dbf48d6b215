/* Growth at the tensors' level, from a framework's own history (run
 * --framework-history): how much memory the program's tensors keep from
 * one iteration to the next, which a caching allocator's segments only
 * approximate (a 1 MiB-per-step leak under PyTorch's cache shows as a
 * 20 MiB segment every so many steps).
 *
 * Iterations: the trace's own (growth's marks, ranges or repeating driver
 * allocation), else the tensors' repeating allocation (the (line, size) most
 * often allocated while none of it is live, GROWTH_PATTERN_MIN times at
 * least). Each iteration's level is its lowest tensor bytes (as requested),
 * the levels next to its boundaries included (FWG_CLOCK_SLACK_NS), and the verdict is growth's own
 * rules (growth_decide) on those levels: a leak's rate is what the tensors keep per iteration. */
#ifndef GMT_ANALYSIS_FWGROWTH_H
#define GMT_ANALYSIS_FWGROWTH_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/growth.h"

#define FWG_SITES 5

/* How far a history entry's time may stand from the driver's moment it
 * belongs to: the framework stamps whole microseconds of the wall clock
 * (truncated: up to 1 us early), mapped through a pair of stamps read one
 * after the other. The levels within this of an iteration boundary count
 * for the iterations on both sides of it. */
#define FWG_CLOCK_SLACK_NS 2000ull

/* A line that keeps tensors: its tensors live at the end, allocated in how
 * many distinct iterations. */
struct fwg_site {
	uint64_t stack_id, bytes, count, iterations;
};
/* A leak's lines are those whose live tensors come from this many
 * iterations at least (a state made once, like an optimizer's, is not a
 * leak's line); all of them if none does. */
#define FWG_SITE_ITERATIONS 3

struct fwg_dev {
	int64_t device;
	uint64_t *floor; /* per iteration: the lowest tensor bytes in it */
	size_t nfloor;
	struct growth_verdict v; /* rate: bytes per iteration */
	/* tensors live at the end, allocated in the verdict's growth: by line,
	 * the lines that keep them (FWG_SITE_ITERATIONS) */
	struct fwg_site sites[FWG_SITES];
	size_t nsites;
	uint64_t held_bytes, held_count;
};

struct fwg_result {
	const char *source; /* "the trace's iterations", "the tensors' repeating allocation" */
	uint64_t pattern_stack, pattern_size;
	uint64_t *times; /* iteration boundaries: n boundaries, n - 1 iterations */
	size_t ntimes;
	struct fwg_dev *devs;
	size_t ndevs;
};

/* From t's history, with the iterations of g where it has some (g may be
 * NULL). Returns -1, or the exit code when reading failed; out is filled
 * either way (fwg_free it). out->ntimes < 3: no iterations, no verdict. */
int fwg_compute(struct trace *t, const struct growth_result *g, struct fwg_result *out);
void fwg_free(struct fwg_result *r);

#endif
