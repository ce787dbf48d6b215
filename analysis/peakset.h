/* What was live at each device's peak, found in the same replay pass that
 * finds the peak (no second pass up to it).
 *
 * Live at the peak P = (live at the end, allocated at or before P) +
 * (allocated at or before P, freed after P). The second part is kept per
 * (device, stack, api) group, tagged with the peak it belongs to: a new
 * peak makes every older tag stale, so resetting costs nothing even when
 * every event is a peak. Memory: one entry per group, never per event. */
#ifndef GMT_ANALYSIS_PEAKSET_H
#define GMT_ANALYSIS_PEAKSET_H

#include <stdint.h>

#include "reader/hash.h"

#include "analysis/replay.h"

/* nvidia-smi counts whole 2 MiB pages for allocations over 1 MiB. */
#define PK_BIG	(1ull << 20)
#define PK_PAGE (2ull << 20)

struct pk_key {
	int64_t device;
	uint64_t stack_id;
	uint64_t api;
};

struct pk_group {
	UT_hash_handle hh;
	struct pk_key key;
	uint64_t epoch; /* the peak_seq it counts for */
	uint64_t bytes, count;
	uint64_t big, rounding; /* device-kind allocations over PK_BIG; their page rounding */
};

struct peakset {
	struct replay *rp;
	struct pk_group *groups;
	struct pk_group *last; /* frees come in runs from the same group */
};

/* Hooks rp's on_change (which must be free); rp must outlive ps. */
void peakset_attach(struct peakset *ps, struct replay *rp);
void peakset_free(struct peakset *ps);

/* What was live on `ordinal` at its peak, after the pass: fn is called per
 * allocation or per group of them (big, rounding: see pk_group). */
typedef void (*peakset_fn)(void *ctx, uint64_t stack_id, uint32_t api, uint64_t bytes,
			   uint64_t count, uint64_t big, uint64_t rounding);
void peakset_each(const struct peakset *ps, int64_t ordinal, peakset_fn fn, void *ctx);

#endif
