/* Phases: which range (NVTX or gpumemtrace_range_*) an event happened in.
 *
 * An event's phase is the innermost PUSH range open on its own thread, named
 * with the enclosing ones ("train_step/forward"); else the innermost range
 * open in the process: the most recently opened of the START/END ranges and
 * of the other threads' PUSH ranges, "inherited" when it is another thread's
 * PUSH (PyTorch runs backward on its autograd thread, which opens no range,
 * while the main thread's "backward" is open); else "(no phase)".
 *
 * A range never closed in the trace (its pop or end is not in it: lost, or
 * the program ended inside it) stays its own thread's phase to the end, since
 * the trace cannot say when it ended, but no other thread inherits it: NCCL
 * pushes "ncclCommInitRankConfig" and never pops it (H100 traces,
 * docs/validation), and it would swallow every other thread's events. Such
 * ranges are listed in unclosed, for the reports to say so.
 *
 * Ranges at or before an event's time apply before it. The tracker advances
 * with the replay: call phase_advance before looking at an event. */
#ifndef GMT_ANALYSIS_PHASE_H
#define GMT_ANALYSIS_PHASE_H

#include <stdbool.h>
#include <stdint.h>

#include "reader/hash.h"

#include "analysis/replay.h"
#include "analysis/trace.h"

#define PHASE_NONE "(no phase)"

struct phase {
	UT_hash_handle hh;
	char *name;
	size_t order; /* first seen: the tables list phases in this order */
	/* summary's figures; the tracker keeps only peak */
	uint64_t allocs, bytes_allocated, frees, bytes_freed;
	uint64_t peak; /* highest device bytes (all devices) while open */
	/* of allocs/bytes_allocated, those made on a thread with no range of
	 * its own open (phase_charge) */
	uint64_t inherited_allocs, inherited_bytes;
	bool seen_open;
};

struct phase_thread;
struct phase_open;
struct phase_mem;
struct phase_pending;

/* A range open at the end of the trace; ph: its phase once applied. */
struct phase_unclosed {
	const struct trace_range *r;
	struct phase *ph;
};

struct phase_tracker {
	struct trace *t;
	size_t next; /* t->ranges[next] is the next to apply */
	struct phase *phases;
	size_t nphases;
	struct phase *none;
	struct phase_thread *threads;
	size_t nthreads, threads_cap;
	struct phase_open *open; /* START ranges not yet ended, in start order */
	size_t nopen, open_cap;
	struct phase_mem *mem; /* (space, key) -> phase of the allocation */
	uint64_t unmatched_pops, unmatched_ends;
	bool *closed;			 /* by index in t->ranges: a PUSH popped, a START ended */
	struct phase_unclosed *unclosed; /* PUSH and START ranges never closed */
	size_t nunclosed;
	/* the process's innermost inheritable range: recomputed after ranges
	 * apply (dirty), not per event */
	struct phase *inherit;
	bool inherit_pushed, dirty;
	struct phase_pending *pending; /* phase_attach: allocations to charge */
	size_t npending, pending_cap;
};

void phase_init(struct phase_tracker *pt, struct trace *t);
void phase_free(struct phase_tracker *pt);
/* Applies the ranges at or before time_ns; live: the process's device bytes
 * now, the starting peak of a phase that opens. */
void phase_advance(struct phase_tracker *pt, uint64_t time_ns, uint64_t live);
/* The phase of an event on thread tid now (never NULL). */
struct phase *phase_of(struct phase_tracker *pt, uint64_t tid);
/* phase_of, and whether it is inherited from another thread's PUSH range. */
struct phase *phase_lookup(struct phase_tracker *pt, uint64_t tid, bool *inherited);
/* Raises the peak of every phase open now to live. */
void phase_note_live(struct phase_tracker *pt, uint64_t live);
/* Remembers the phase of a live allocation (by its replay key), and recalls
 * it (PHASE_NONE's entry when unknown). */
void phase_remember(struct phase_tracker *pt, int space, uint64_t key, struct phase *ph);
struct phase *phase_recall(struct phase_tracker *pt, int space, uint64_t key);
/* Charges device memory to phases by allocation (summary's table): each
 * allocation that starts counting in rp goes to the phase of the event that
 * made it (phase_charge, after the event's replay_apply), and its bytes,
 * when freed in whatever phase, come off that phase's own. So a phase's
 * allocated - freed is what its allocations still hold, never more than it
 * allocated nor than the device holds. rp's on_change must be free. */
void phase_attach(struct phase_tracker *pt, struct replay *rp);
void phase_charge(struct phase_tracker *pt, uint64_t tid);
/* The phases, in first-seen order (malloc'd). */
struct phase **phase_list(struct phase_tracker *pt, size_t *n);

/* Process device bytes: the sum over rp's devices. */
uint64_t phase_device_bytes(const struct replay *rp);

#endif
