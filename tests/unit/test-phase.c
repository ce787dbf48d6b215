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

static void expect_inherited(uint64_t tid, bool want)
{
	bool got;
	phase_lookup(&pt, tid, &got);
	CHECK(got == want, "thread %" PRIu64 ": inherited %d, want %d", tid, got, want);
}

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

/* A training step as PyTorch makes it: the main thread (1) opens step,
 * forward, backward; the autograd thread (9) opens none and frees forward's
 * activations. Three steps. A phase is charged what its allocations hold:
 * forward allocates 100 + 50 per step and frees 50 itself; thread 9 frees
 * the 100 in backward, charged back to forward; backward (inherited)
 * allocates 30 and frees it. So forward: 6 allocs, 450 allocated, 450 freed;
 * backward: 3 allocs, 90, 90, all inherited. Charged by phase instead of by
 * allocation, forward would net +300 and backward -300: sums over steps
 * that grow with the run's length and can pass the device's size. */
static struct trace_range step_ranges[] = {
    R(10, 1, PUSH, 0, "step"),	    R(20, 1, PUSH, 0, "forward"),  R(40, 1, POP, 0, ""),
    R(50, 1, PUSH, 0, "backward"),  R(80, 1, POP, 0, ""),	   R(90, 1, POP, 0, ""),
    R(110, 1, PUSH, 0, "step"),	    R(120, 1, PUSH, 0, "forward"), R(140, 1, POP, 0, ""),
    R(150, 1, PUSH, 0, "backward"), R(180, 1, POP, 0, ""),	   R(190, 1, POP, 0, ""),
    R(210, 1, PUSH, 0, "step"),	    R(220, 1, PUSH, 0, "forward"), R(240, 1, POP, 0, ""),
    R(250, 1, PUSH, 0, "backward"), R(280, 1, POP, 0, ""),	   R(290, 1, POP, 0, ""),
};

static void charge_by_allocation(void)
{
	struct trace t;
	memset(&t, 0, sizeof(t));
	t.ranges = step_ranges;
	t.nranges = sizeof(step_ranges) / sizeof(step_ranges[0]);
	phase_init(&pt, &t);
	struct replay rp;
	replay_init(&rp);
	phase_attach(&pt, &rp);
	for (uint64_t base = 0; base < 300; base += 100) {
		struct gmt_event e[] = {
		    {.api = GMT_API_cudaMalloc,
		     .tid = 1,
		     .time_ns = base + 30,
		     .ptr = 0x100,
		     .size = 100},
		    {.api = GMT_API_cudaMalloc,
		     .tid = 1,
		     .time_ns = base + 32,
		     .ptr = 0x200,
		     .size = 50},
		    {.api = GMT_API_cudaFree, .tid = 1, .time_ns = base + 35, .ptr = 0x200},
		    {.api = GMT_API_cudaFree, .tid = 9, .time_ns = base + 60, .ptr = 0x100},
		    {.api = GMT_API_cudaMalloc,
		     .tid = 9,
		     .time_ns = base + 65,
		     .ptr = 0x300,
		     .size = 30},
		    {.api = GMT_API_cudaFree, .tid = 9, .time_ns = base + 70, .ptr = 0x300},
		};
		for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
			replay_apply(&rp, &e[i]);
			phase_advance(&pt, e[i].time_ns, phase_device_bytes(&rp));
			phase_charge(&pt, e[i].tid);
		}
	}
	/* after the last step, kept to the end: (no phase) still holds 70 */
	struct gmt_event kept = {
	    .api = GMT_API_cudaMalloc, .tid = 1, .time_ns = 300, .ptr = 0x400, .size = 70};
	replay_apply(&rp, &kept);
	phase_advance(&pt, kept.time_ns, phase_device_bytes(&rp));
	phase_charge(&pt, kept.tid);
	CHECK(pt.none->bytes_allocated == 70 && pt.none->bytes_freed == 0,
	      "no phase: %" PRIu64 " allocated, %" PRIu64 " freed", pt.none->bytes_allocated,
	      pt.none->bytes_freed);
	struct phase *fw = named("step/forward"), *bw = named("step/backward");
	CHECK(fw && fw->allocs == 6 && fw->bytes_allocated == 450 && fw->bytes_freed == 450,
	      "forward: %" PRIu64 " allocs, %" PRIu64 " allocated, %" PRIu64 " freed",
	      fw ? fw->allocs : 0, fw ? fw->bytes_allocated : 0, fw ? fw->bytes_freed : 0);
	CHECK(bw && bw->allocs == 3 && bw->bytes_allocated == 90 && bw->bytes_freed == 90 &&
		  bw->inherited_allocs == 3 && bw->inherited_bytes == 90,
	      "backward: %" PRIu64 " allocs, %" PRIu64 " allocated, %" PRIu64 " freed, %" PRIu64
	      " inherited",
	      bw ? bw->allocs : 0, bw ? bw->bytes_allocated : 0, bw ? bw->bytes_freed : 0,
	      bw ? bw->inherited_allocs : 0);
	CHECK(pt.nunclosed == 0, "every range closes: %zu unclosed", pt.nunclosed);
	replay_free(&rp);
	phase_free(&pt);
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
	expect(10, 2, "train_step"); /* no range of its own: the process's innermost */
	expect_inherited(2, true);
	expect_inherited(1, false);
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
	expect(110, 5, "save");	    /* the most recently started */
	expect_inherited(5, false); /* START ranges are the process's own */
	expect(110, 1, "train_step");
	expect(110, 9, "save");	    /* not train_step: it is never popped */
	phase_advance(&pt, 120, 0); /* eval ends, under save */
	expect(120, 5, "save");
	phase_advance(&pt, 1000, 0);
	/* train_step (90) is open to the end: its thread keeps it, no other
	 * thread inherits it */
	expect(1000, 5, PHASE_NONE);
	expect(1000, 1, "train_step");
	CHECK(pt.nunclosed == 1 && pt.unclosed[0].r == &ranges[9] &&
		  pt.unclosed[0].ph == named("train_step"),
	      "unclosed: %zu, want the train_step at 90", pt.nunclosed);
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
	charge_by_allocation();
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
