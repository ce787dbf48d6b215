/* analysis/fwgrowth.c: the tensors' own growth per iteration. An
 * iteration's level is its lowest tensor bytes, the level as it begins
 * included: a step whose first tensor is smaller than what the step keeps
 * must not read as a lower level (the emulator's leak-mid cycles batch
 * sizes: its batch-64 steps read 256 KiB low, and the rate 1,051,225 B for
 * 1,048,577 kept). A leak's lines are those that keep tensors from several
 * iterations: a state made once (an optimizer's, at the first step) is
 * live at the end too, and is not one. History stamps are whole
 * microseconds of the wall clock: a step's first tensor may read up to a
 * microsecond before the step's boundary, and must not lift that step's
 * level by a temporary (CI read 1,059,169 and 1,038,091 for 1,048,577). */
#include <inttypes.h>
#include <string.h>

#include "analysis/fwgrowth.h"
#include "analysis/trace.h"
#include "check.h"
#include "trace-file.h"

#define KiB   1024ull
#define MiB   (1ull << 20)
#define S1    0x7f0000000000ull
#define WALL  1700000000000000000ull
#define MONO  1000000000ull
#define STEP  1000000ull /* 1 ms an iteration */
#define ITERS 24
#define KEPT  (MiB + 1)

/* Entry time_us of driver time ns. */
static uint64_t us(uint64_t ns)
{
	return WALL / 1000 + (ns - MONO) / 1000;
}

/* Each iteration: an input whose size cycles (256, 512, 768 KiB, 2 MiB),
 * a kept tensor of 1 MiB + 1 B, the input freed; the fourth also makes a
 * 3 MiB state (stack 4) kept for good. early: every third step's input is
 * stamped 1 us before its boundary, as a truncated stamp of an allocation
 * right after it reads. */
static const char *write_trace(bool early, const char *name)
{
	static struct tb_fw_entry e[ITERS * 4 + 2];
	static const uint64_t input[4] = {256 * KiB, 512 * KiB, 768 * KiB, 2 * MiB};
	size_t n = 0;
	e[n++] = (struct tb_fw_entry){GMT_FW_SEGMENT_ALLOC, S1, 200 * MiB, 0, us(MONO + 100), 0};
	uint64_t at = S1;
	for (int i = 0; i < ITERS; i++) {
		uint64_t t = MONO + STEP * (uint64_t)(i + 1), x = input[i % 4];
		uint64_t xa = S1 + 190 * MiB;
		uint64_t xt = early && i % 3 == 1 ? us(t) - 1 : us(t + 100000);
		e[n++] = (struct tb_fw_entry){GMT_FW_ALLOC, xa, x, 0, xt, 2};
		e[n++] = (struct tb_fw_entry){GMT_FW_ALLOC, at, KEPT, 0, us(t + 200000), 3};
		if (i == 3)
			e[n++] = (struct tb_fw_entry){
			    GMT_FW_ALLOC, S1 + 180 * MiB, 3 * MiB, 0, us(t + 250000), 4};
		e[n++] = (struct tb_fw_entry){GMT_FW_FREE_REQUESTED, xa, x, 0, us(t + 300000), 0};
		e[n++] = (struct tb_fw_entry){GMT_FW_FREE_COMPLETED, xa, x, 0, us(t + 300000), 0};
		at += KEPT + 511;
	}
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 1024 * MiB, 9, 0, 12040);
	tb_events_begin(b, 7, MONO);
	struct tb_event ev = {MONO + 50, GMT_API_cudaMalloc, 0, 0, S1, 200 * MiB, 0, 0, 0};
	tb_event(b, &ev);
	tb_events_end(b);
	uint64_t end = MONO + STEP * (ITERS + 2);
	tb_fwsnap(b, 7, end, WALL + (end - MONO), 1, GMT_FWSNAP_WHY_EXIT, "torch", 3, 100000, 0,
		  NULL, NULL);
	tb_fwtrace(b, 1, 0, 0, n, e);
	tb_trailer(b, end + 1000, 1, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, name);
	tb_free(b);
	return path;
}

static void check_trace(bool early)
{
	struct trace t;
	const char *how = early ? "inputs stamped early" : "on time";
	CHECK(trace_open(&t, "test", write_trace(early, early ? "fwg-early.gmt" : "fwg.gmt")) == -1,
	      "%s: opens", how);
	/* the iterations as growth finds them: one boundary a step */
	uint64_t times[ITERS + 1];
	for (int i = 0; i <= ITERS; i++)
		times[i] = MONO + STEP * (uint64_t)(i + 1);
	struct growth_result g;
	memset(&g, 0, sizeof(g));
	g.mk.times = times;
	g.mk.n = ITERS + 1;
	struct fwg_result r;
	CHECK(fwg_compute(&t, &g, &r) == -1 && r.ndevs == 1, "%s: computed, one device", how);
	const struct fwg_dev *d = r.ndevs ? &r.devs[0] : NULL;
	bool steady = d && d->nfloor == ITERS;
	size_t bad = 0;
	for (size_t i = 1; steady && i < d->nfloor; i++)
		if (d->floor[i] - d->floor[i - 1] != KEPT + (i == 4 ? 3 * MiB : 0))
			steady = false, bad = i;
	CHECK(steady, "%s: each iteration's level is what it began with: +%llu a step (not at %zu)",
	      how, (unsigned long long)KEPT, bad);
	CHECK(d && d->floor[0] == 0, "%s: the first begins with nothing (%" PRIu64 ")", how,
	      d ? d->floor[0] : 0);
	CHECK(d && d->v.kind == GV_LEAK && (uint64_t)(d->v.rate + 0.5) == KEPT,
	      "%s: a leak of 1 MiB + 1 B per iteration (%.1f)", how, d ? d->v.rate : 0.0);
	CHECK(d && d->nsites == 1 && d->sites[0].stack_id == 3 && d->sites[0].iterations == ITERS &&
		  d->held_count == ITERS,
	      "%s: held by the kept tensors' line alone, from each iteration (%zu lines)", how,
	      d ? d->nsites : 0);
	fwg_free(&r);
	trace_close(&t);
}

int main(void)
{
	check_trace(false);
	check_trace(true);
	return failures ? 1 : 0;
}
