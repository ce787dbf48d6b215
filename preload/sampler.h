/* The sampling thread (gmt-sample, preload/sampler.c): NVML readings of
 * every device as SAMPLE records, every GPUMEMTRACE_SAMPLE_MS, after a
 * failed allocation, at a new peak of traced device bytes, at its start and
 * at the end of the trace. What asks it for one: preload/peakwatch.c. */
#ifndef GMT_SAMPLER_H
#define GMT_SAMPLER_H

#include "gpumemtrace/format.h"
#include "preload/ring.h"

/* The trace just became active: start the thread (once per process image).
 * sample_ms 0: no periodic samples, the others still. */
void gmt_sampler_start(int sample_ms);

/* The requests, shared by the thread and those who poke it. */
struct gmt_sample_asks {
	uint32_t wake;	  /* futex word: bumped by pokes and stop */
	uint32_t pending; /* 1 << GMT_SAMPLE_WHY_* requested by pokes */
	int running;	  /* the thread was started and has not been joined */
	int idle;	  /* NVML is unavailable: nothing to poke or watch */
};
extern struct gmt_sample_asks gmt_sample_asks;
/* Bumps the wake word and wakes the thread (peakwatch.c). */
void gmt_sampler_wake(void);

/* Asks for a sample now (GMT_SAMPLE_WHY_OOM or _PEAK): an atomic and a
 * futex wake, safe on any thread's hot path. Requests coalesce. */
void gmt_sampler_poke(enum gmt_sample_why why);

/* The flush thread shows every drained record here (flush_lock held): it
 * keeps live device bytes per device and pokes a PEAK sample on a new high. */
void gmt_sampler_observe(const struct gmt_ring_hdr *h);
/* ... and says when a flush cycle is over: at most one PEAK poke per cycle. */
void gmt_sampler_cycle_done(void);
/* The child of fork: the parent's live allocations are not its own. */
void gmt_peakwatch_fork_child(void);

/* Stops the thread (waits at most a bounded time) and, with take_end, takes
 * the END sample on the calling thread. Idempotent. */
void gmt_sampler_stop(int take_end);

/* fork waits until the thread is between samples (not in NVML, which has
 * locks of its own, nor in an allocator) and holds it there; the child of
 * fork has no sampler until its own trace starts. */
void gmt_sampler_fork_prepare(void);
void gmt_sampler_fork_parent(void);
void gmt_sampler_fork_child(void);

#endif
