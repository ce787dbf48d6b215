/* analysis/phase.c: which phase an event on a thread falls in as the ranges
 * of a trace are applied in time order, each phase's peak, unmatched pops
 * and ends, the allocations' remembered phases and the first-seen order.
 * The ranges are set on a struct trace by hand (phase.c reads only
 * t->ranges); the answers are worked out in the comments. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/phase.h"
#include "check.h"

#define R(t, tid, op, id, text)                                                                    \
	{                                                                                          \
		t, tid, GMT_RANGE_##op, id, GMT_RANGE_SRC_NVTX, (char *)text                       \
	}

static struct trace_range ranges[] = {
    R(10, 1, PUSH, 0, "train_step"),
    R(20, 1, PUSH, 0, "forward"),
    R(30, 2, START, 7, "load"),
    R(40, 1, POP, 0, ""),
    R(50, 3, END, 99, ""),
    R(60, 1, POP, 0, ""),
    R(70, 1, POP, 0, ""),
    R(80, 2, END, 7, ""),
    R(85, 4, MARK, 0, "a mark"),
    R(90, 1, PUSH, 0, "train_step"),
    R(100, 5, START, 1, "eval"),
    R(110, 6, START, 2, "save"),
    R(120, 5, END, 1, ""),
    R(130, 6, END, 2, ""),
};

static struct phase_tracker pt;

/* The phase of thread tid after the ranges up to time t. */
static void expect(uint64_t t, uint64_t tid, const char *want)
{
	const char *got = phase_of(&pt, tid)->name;
	CHECK(strcmp(got, want) == 0, "at %" PRIu64 ", thread %" PRIu64 ": '%s', want '%s'", t, tid,
	      got, want);
}

static struct phase *named(const char *name)
{
	size_t n;
	struct phase **all = phase_list(&pt, &n), *ph = NULL;
	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i]->name, name) == 0)
			ph = all[i];
	free(all);
	return ph;
}

static uint64_t peak_of(const char *name)
{
	struct phase *ph = named(name);
	return ph ? ph->peak : UINT64_MAX;
}

int main(void)
{
	struct trace t;
	memset(&t, 0, sizeof(t));
	t.ranges = ranges;
	t.nranges = sizeof(ranges) / sizeof(ranges[0]);
	phase_init(&pt, &t);

	phase_advance(&pt, 5, 0);
	expect(5, 1, PHASE_NONE);
	phase_advance(&pt, 10, 100); /* at its time: applies; opens at 100 */
	expect(10, 1, "train_step");
	expect(10, 2, PHASE_NONE); /* PUSH ranges are per thread */
	phase_advance(&pt, 25, 150);
	expect(25, 1, "train_step/forward");
	phase_note_live(&pt, 500); /* both open: both 500 */
	phase_advance(&pt, 35, 80);
	expect(35, 1, "train_step/forward"); /* its own PUSH first */
	expect(35, 2, "load");		     /* START ranges: any thread */
	expect(35, 3, "load");
	phase_note_live(&pt, 90); /* load 80 -> 90; the others stay 500 */
	phase_advance(&pt, 45, 0);
	expect(45, 1, "train_step");
	phase_advance(&pt, 55, 0); /* END of an id never started */
	CHECK(pt.unmatched_ends == 1, "unmatched ends %" PRIu64, pt.unmatched_ends);
	expect(55, 2, "load");
	phase_advance(&pt, 65, 0);
	expect(65, 1, "load"); /* no PUSH left on thread 1 */
	phase_advance(&pt, 75, 0);
	CHECK(pt.unmatched_pops == 1, "unmatched pops %" PRIu64, pt.unmatched_pops);
	phase_advance(&pt, 85, 0); /* load ends; a MARK is no phase */
	expect(85, 1, PHASE_NONE);
	expect(85, 2, PHASE_NONE);
	phase_advance(&pt, 90, 50); /* train_step again: its peak stays 500 */
	expect(90, 1, "train_step");
	phase_note_live(&pt, 700); /* train_step 700; the closed ones keep theirs */
	phase_advance(&pt, 110, 10);
	expect(110, 5, "save"); /* the most recently started */
	expect(110, 1, "train_step");
	phase_advance(&pt, 120, 0); /* eval ends, under save */
	expect(120, 5, "save");
	phase_advance(&pt, 1000, 0);
	expect(1000, 5, PHASE_NONE);
	CHECK(pt.unmatched_pops == 1 && pt.unmatched_ends == 1, "unmatched: %" PRIu64 " %" PRIu64,
	      pt.unmatched_pops, pt.unmatched_ends);

	size_t n;
	struct phase **all = phase_list(&pt, &n);
	const char *order[] = {PHASE_NONE, "train_step", "train_step/forward",
			       "load",	   "eval",	 "save"};
	CHECK(n == 6, "%zu phases, want 6", n);
	for (size_t i = 0; i < n && i < 6; i++)
		CHECK(strcmp(all[i]->name, order[i]) == 0, "phase %zu: '%s', want '%s'", i,
		      all[i]->name, order[i]);
	free(all);
	CHECK(peak_of(PHASE_NONE) == 0, "no phase: peak %" PRIu64, peak_of(PHASE_NONE));
	CHECK(peak_of("train_step") == 700, "train_step peak %" PRIu64, peak_of("train_step"));
	CHECK(peak_of("train_step/forward") == 500, "forward peak %" PRIu64,
	      peak_of("train_step/forward"));
	CHECK(peak_of("load") == 90, "load peak %" PRIu64, peak_of("load"));
	CHECK(peak_of("eval") == 10 && peak_of("save") == 10, "eval %" PRIu64 ", save %" PRIu64,
	      peak_of("eval"), peak_of("save"));

	/* Allocations keep the phase they were made in, per (space, key). */
	struct phase *fw = named("train_step/forward");
	phase_remember(&pt, GMT_SPACE_ADDR, 0x1000, fw);
	phase_remember(&pt, GMT_SPACE_ADDR, 0x2000, named("load"));
	phase_remember(&pt, GMT_SPACE_ADDR, 0x2000, named("eval")); /* replaced */
	CHECK(phase_recall(&pt, GMT_SPACE_ADDR, 0x1000) == fw, "0x1000: forward");
	CHECK(phase_recall(&pt, GMT_SPACE_ADDR, 0x2000) == named("eval"), "0x2000: eval");
	CHECK(phase_recall(&pt, GMT_SPACE_VMM_HANDLE, 0x1000) == pt.none, "other space: none");
	CHECK(phase_recall(&pt, GMT_SPACE_ADDR, 0x3000) == pt.none, "unknown: none");

	/* Device bytes of the process: every device, not host memory. */
	struct replay rp;
	replay_init(&rp);
	struct gmt_event e[] = {
	    {.api = GMT_API_cudaMalloc, .device = 0, .ptr = 0x10, .size = 100},
	    {.api = GMT_API_cudaMalloc, .device = 3, .ptr = 0x20, .size = 20},
	    {.api = GMT_API_cudaMallocHost, .device = -1, .ptr = 0x30, .size = 5000},
	};
	for (size_t i = 0; i < 3; i++)
		replay_apply(&rp, &e[i]);
	CHECK(phase_device_bytes(&rp) == 120, "device bytes %" PRIu64, phase_device_bytes(&rp));
	replay_free(&rp);

	phase_free(&pt);
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
