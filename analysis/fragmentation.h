/* The fragmentation report's figures for one trace: per device the size
 * histogram, rounding waste and snapshots of the live address span (evenly
 * in time, at the device's peak, at the end); per process VMM reserved/
 * mapped/physical and stream-ordered allocations against pools. */
#ifndef GMT_ANALYSIS_FRAGMENTATION_H
#define GMT_ANALYSIS_FRAGMENTATION_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/trace.h"

#define FRAG_NSAMPLES 20

/* The live device allocations of one device at one moment. */
struct frag_snap {
	bool taken;
	uint64_t time_ns, live, covered, count, span, free_in_span, largest_gap, gaps, live_rounded;
};

struct frag_dev {
	int64_t ordinal;
	/* power-of-two buckets: [b] holds sizes in [2^b, 2^(b+1)); [64] size 0 */
	uint64_t hist_count[65], hist_bytes[65];
	uint64_t allocs, requested, rounded;
	uint64_t peak, peak_seq;
	struct frag_snap at_peak, at_end;
	struct frag_snap samples[FRAG_NSAMPLES];
	int nsamples;
};

struct frag_vmm {
	uint64_t reserved, mapped, physical; /* at the end */
	uint64_t reserved_peak, mapped_peak, physical_peak;
	bool used;
};

struct frag_result {
	struct frag_dev *devs; /* by ordinal */
	size_t ndevs;
	struct frag_vmm vmm;
	uint64_t async_live, async_peak, pools_created, pool_trims;
};

/* A process's figures at each device's peak, for the totals. */
struct frag_total {
	uint64_t peak_live, peak_free, waste;
	double worst; /* the worst external fragmentation */
};

/* Two replays of `t` (only device `device` when has_device). Returns the
 * trace's exit code, or -1; `out` is filled either way (frag_free it). */
int frag_compute(struct trace *t, bool has_device, int64_t device, struct frag_result *out);
void frag_free(struct frag_result *r);
void frag_totals(const struct frag_result *r, struct frag_total *tot);

/* The size rounded up to the allocation granularity (2 MiB above 1 MiB,
 * 512 B otherwise). */
uint64_t frag_rounded(uint64_t size);
/* a / b, 0 when b is 0. */
double frag_ratio(uint64_t a, uint64_t b);

#endif
