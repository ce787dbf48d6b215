/* Phases: which range (NVTX or gpumemtrace_range_*) an event happened in.
 *
 * An event's phase is the innermost PUSH range open on its own thread, named
 * with the enclosing ones ("train_step/forward"); else the most recently
 * started START/END range still open (any thread); else "(no phase)".
 * Ranges at or before an event's time apply before it. The tracker advances
 * with the replay: call phase_advance before looking at an event. */
#ifndef GMT_ANALYSIS_PHASE_H
#define GMT_ANALYSIS_PHASE_H

#include <stdbool.h>
#include <stdint.h>

#include <uthash.h>

#include "analysis/trace.h"

#define PHASE_NONE "(no phase)"

struct phase {
	UT_hash_handle hh;
	char *name;
	size_t order; /* first seen: the tables list phases in this order */
	/* summary's figures; the tracker keeps only peak */
	uint64_t allocs, bytes_allocated, frees, bytes_freed;
	uint64_t peak; /* highest device bytes (all devices) while open */
	bool seen_open;
};

struct phase_thread;
struct phase_open;
struct phase_mem;

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
};

void phase_init(struct phase_tracker *pt, struct trace *t);
void phase_free(struct phase_tracker *pt);
/* Applies the ranges at or before time_ns; live: the process's device bytes
 * now, the starting peak of a phase that opens. */
void phase_advance(struct phase_tracker *pt, uint64_t time_ns, uint64_t live);
/* The phase of an event on thread tid now (never NULL). */
struct phase *phase_of(struct phase_tracker *pt, uint64_t tid);
/* Raises the peak of every phase open now to live. */
void phase_note_live(struct phase_tracker *pt, uint64_t live);
/* Remembers the phase of a live allocation (by its replay key), and recalls
 * it (PHASE_NONE's entry when unknown). */
void phase_remember(struct phase_tracker *pt, int space, uint64_t key, struct phase *ph);
struct phase *phase_recall(struct phase_tracker *pt, int space, uint64_t key);
/* The phases, in first-seen order (malloc'd). */
struct phase **phase_list(struct phase_tracker *pt, size_t *n);

/* Process device bytes: the sum over rp's devices. */
uint64_t phase_device_bytes(const struct replay *rp);

#endif
