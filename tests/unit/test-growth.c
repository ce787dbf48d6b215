/* analysis/growth.c and growth-verdict.c, the growth aggregator, with
 * known answers: the verdict's rules on synthetic series (a caching
 * allocator's staircase, a warm-up then a plateau, a late warm-up, a short
 * run, a staircase that stopped, a ramp), then whole traces from the
 * test-only trace builder (a leak with ranges, a leak without, a plateau
 * found from a repeating allocation, two devices apart, --device). Each
 * answer is worked out in the comment above its check. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/growth.h"
#include "check.h"
#include "trace-file.h"

#define S   1000000000ull /* ns */
#define MiB (1ull << 20)

/* ---- the rules, on series ---------------------------------------------- */

/* A series of iterations 0..xend from base, rising by `step` at each x. */
static void decide(const uint64_t *xs, size_t n, uint64_t xend, uint64_t step,
		   struct growth_verdict *v)
{
	struct growth_rise r[64];
	uint64_t level = 100 * MiB;
	for (size_t i = 0; i < n; i++) {
		level += step;
		r[i] = (struct growth_rise){xs[i], level};
	}
	struct growth_series s = {r, n, 0, xend, xend, 100 * MiB, 2, 8};
	growth_decide(&s, v);
}

/* PyTorch's cache, 1 MiB kept per step: a 20 MiB segment every 20
 * iterations. Warm-up at 1, 2, 3 (one step: within 2 of each other), then
 * 20, 40, ..., 280 of 0..299: 15 steps. The last four start at 220, 240,
 * 260, 280: gaps of 20, regular, spanning 60 >= 8; the run ended 19 after
 * the last, within two intervals (40): a leak. Rate: from the level after
 * 220 to after 280, 3 x 20 MiB over 60 iterations = 1 MiB per iteration. */
static void test_rule_staircase(void)
{
	uint64_t xs[20] = {1, 2, 3};
	size_t n = 3;
	for (uint64_t x = 20; x <= 280; x += 20)
		xs[n++] = x;
	struct growth_verdict v;
	decide(xs, n, 299, 20 * MiB, &v);
	CHECK(v.kind == GV_LEAK && v.shape == GV_STAIRS && v.steps == 15 && v.period == 20,
	      "staircase: kind %d shape %d, %zu steps every %" PRIu64, v.kind, v.shape, v.steps,
	      v.period);
	CHECK(v.start_x == 220 && v.from_x == 220 && v.to_x == 280 && v.steady == 19 &&
		  v.rate == (double)MiB,
	      "staircase: %" PRIu64 "..%" PRIu64 ", rate %g", v.from_x, v.to_x, v.rate);
	/* the level: 100 MiB + 17 rises of 20 MiB, never more */
	CHECK(v.level == 100 * MiB + 17 * 20 * MiB && v.to_level == v.level, "staircase: level");
}

/* A staircase behind a warm-up: the cache's warm-up reserve absorbs the
 * first kept tensors, so rises come at 1..4 (one step), then 140, 168,
 * 196 of 0..199 (the emulated PyTorch's torch.leak-mid). The last four
 * steps are not regular (139, 28, 28), the last three are (28, 28,
 * spanning 56 >= 8), and the run ended 3 after: a leak, 2 x 40 MiB over
 * 56 iterations. */
static void test_rule_staircase3(void)
{
	uint64_t xs[] = {1, 2, 3, 4, 140, 168, 196};
	struct growth_verdict v;
	decide(xs, 7, 199, 40 * MiB, &v);
	CHECK(v.kind == GV_LEAK && v.shape == GV_STAIRS && v.period == 28 && v.from_x == 140 &&
		  v.rate == 80.0 * MiB / 56,
	      "staircase of 3: kind %d shape %d period %" PRIu64, v.kind, v.shape, v.period);
}

/* Rises at 10, 13, 20, 23, ..., 60 of 0..60 (gaps of 3 and 7: no step of
 * 3 rises, no regular staircase: 7 > 2 x 3): a ramp with pauses. Each of
 * the 3 stretches of 8 before the last rise, (36, 44], (44, 52], (52, 60],
 * has a rise, and so do those before, back to 10: a leak, its rate over
 * the 3 stretches: from the level after 33 to after 60, 5 rises of 1 MiB
 * over 24 iterations. */
static void test_rule_dense(void)
{
	uint64_t xs[11];
	for (size_t i = 0; i < 11; i++)
		xs[i] = 10 + 10 * (i / 2) + 3 * (i % 2);
	struct growth_verdict v;
	decide(xs, 11, 60, MiB, &v);
	CHECK(v.kind == GV_LEAK && v.shape == GV_RAMP && v.from_x == 36 && v.to_x == 60 &&
		  v.rate == 5.0 * MiB / 24 && v.start_x == 10 && v.grew_steps == 11,
	      "dense: kind %d shape %d from %" PRIu64 " rate %g", v.kind, v.shape, v.from_x,
	      v.rate);
}

/* A pool that doubles (TF's BFC with allow_growth) keeping a leak, in time
 * (positions in ms): 288 MiB of regions at 1, then 256 MiB at 170 and 512
 * MiB at 250; the last driver call is at 250, the trace ends at 310; merge
 * 5, steady 25. Intervals 169 and 80 are not regular (169 > 160), but the
 * bytes last as long at one rate: 288 / 169 = 1.70 and 256 / 80 = 3.2 MiB
 * per ms (within 2x). At the mean rate, 544 MiB over 249, the last 512 MiB
 * last 234: the trace ended 60 after it, within two of those: a leak,
 * 768 MiB over 249. */
static void test_rule_doubling(void)
{
	static const uint64_t xs[] = {1, 1, 1, 1, 170, 250};
	static const uint64_t ups[] = {32, 64, 64, 128, 256, 512};
	struct growth_rise r[6];
	uint64_t level = 0;
	for (size_t i = 0; i < 6; i++) {
		level += ups[i] * MiB;
		r[i] = (struct growth_rise){xs[i], level};
	}
	struct growth_series s = {r, 6, 1, 310, 250, 0, 5, 25};
	struct growth_verdict v;
	growth_decide(&s, &v);
	CHECK(v.kind == GV_LEAK && v.shape == GV_STAIRS && v.period == 234 && v.steps == 3 &&
		  v.rate == 768.0 * MiB / 249,
	      "doubling: kind %d shape %d period %" PRIu64, v.kind, v.shape, v.period);
}

/* Warm-up then a plateau: rises at 1, 2, 3 (one step), then nothing to
 * 299: 296 iterations without a rise, >= 8: no leak, settled. */
static void test_rule_plateau(void)
{
	uint64_t xs[] = {1, 2, 3};
	struct growth_verdict v;
	decide(xs, 3, 299, 50 * MiB, &v);
	CHECK(v.kind == GV_NO_LEAK && v.shape == GV_SETTLED && v.steady == 296 &&
		  v.last_rise == 3 && v.level == 250 * MiB,
	      "plateau: kind %d shape %d steady %" PRIu64, v.kind, v.shape, v.steady);
}

/* A late warm-up: 1, 2, 3, then once more at 250 (a bigger batch), then
 * flat. Two steps, no staircase; the flat stretch between them is 247
 * (3 to 250), so a steady state needs 2 x 247 = 494 flat. Ending at 299
 * (49 flat): undetermined, the next step may just not have come yet;
 * ending at 799 (549 flat >= 494): no leak, however late it ended. */
static void test_rule_late_warmup(void)
{
	uint64_t xs[] = {1, 2, 3, 250};
	struct growth_verdict v;
	decide(xs, 4, 299, 50 * MiB, &v);
	CHECK(v.kind == GV_UNDETERMINED && v.steps == 2 && v.steady == 49 && v.max_gap == 247 &&
		  v.need == 494,
	      "late warm-up, short: kind %d, %zu steps, steady %" PRIu64 " need %" PRIu64, v.kind,
	      v.steps, v.steady, v.need);
	decide(xs, 4, 799, 50 * MiB, &v);
	CHECK(v.kind == GV_NO_LEAK && v.steps == 2 && v.steady == 549 && v.last_rise == 250,
	      "late warm-up: kind %d, %zu steps, steady %" PRIu64, v.kind, v.steps, v.steady);
}

/* torch.leak-mid cut at 90%: warm-up 1..4, then 140 and 168 (a 20 MiB
 * segment pair every 28 iterations), run ends at 181. The last three
 * steps are not regular (136, 28) and two are too few for a staircase,
 * so no leak is seen; 13 flat >= 8 used to read "no leak". The longest
 * flat stretch between steps is 136 (4 to 140): a steady state needs
 * 272. 13 < 272: undetermined. */
static void test_rule_between_steps(void)
{
	/* the trace's levels, MiB: 18, then 160, 256, 384, 544, 584, 624 */
	static const uint64_t xs[] = {1, 2, 3, 4, 140, 168}, ls[] = {160, 256, 384, 544, 584, 624};
	struct growth_rise r[6];
	for (size_t i = 0; i < 6; i++)
		r[i] = (struct growth_rise){xs[i], ls[i] * MiB};
	struct growth_series s = {r, 6, 0, 181, 181, 18 * MiB, 2, 8};
	struct growth_verdict v;
	growth_decide(&s, &v);
	CHECK(v.kind == GV_UNDETERMINED && v.steady == 13 && v.max_gap == 136 && v.need == 272,
	      "between steps: kind %d steady %" PRIu64 " gap %" PRIu64, v.kind, v.steady,
	      v.max_gap);
}

/* Short runs: rises at 1, 2, 3 of 0..6 leave 3 flat iterations (< 8), no
 * staircase: undetermined. No rise in 0..5: 5 flat, < 8: undetermined
 * too; in 0..8: 8 flat: no leak. */
static void test_rule_short(void)
{
	uint64_t xs[] = {1, 2, 3};
	struct growth_verdict v;
	decide(xs, 3, 6, MiB, &v);
	CHECK(v.kind == GV_UNDETERMINED && v.shape == GV_SHORT && v.steady == 3,
	      "short: kind %d shape %d", v.kind, v.shape);
	decide(NULL, 0, 5, MiB, &v);
	CHECK(v.kind == GV_UNDETERMINED && v.shape == GV_FLAT && v.steady == 5, "short flat: %d",
	      v.kind);
	decide(NULL, 0, 8, MiB, &v);
	CHECK(v.kind == GV_NO_LEAK && v.shape == GV_FLAT && v.level == 100 * MiB, "flat: %d",
	      v.kind);
}

/* A staircase that stopped: 20, 40, ..., 140 (period 20), then flat to
 * 299: 159 flat iterations, over two intervals (40), 8, and the 120 it grew
 * for (20..140): no leak. Were the run to end at 170 (30 flat, within 40),
 * it could be the next step coming: a leak; at 250 (110 flat, under 120):
 * undetermined. */
static void test_rule_stopped(void)
{
	uint64_t xs[7];
	for (size_t i = 0; i < 7; i++)
		xs[i] = 20 * (i + 1);
	struct growth_verdict v;
	decide(xs, 7, 299, 20 * MiB, &v);
	CHECK(v.kind == GV_NO_LEAK && v.shape == GV_STOPPED && v.steady == 159 && v.period == 20,
	      "stopped: kind %d shape %d", v.kind, v.shape);
	decide(xs, 7, 170, 20 * MiB, &v);
	CHECK(v.kind == GV_LEAK && v.shape == GV_STAIRS, "stopped, short: kind %d", v.kind);
	decide(xs, 7, 250, 20 * MiB, &v);
	CHECK(v.kind == GV_UNDETERMINED && v.shape == GV_STOPPED && v.grew_for == 120,
	      "stopped, not long enough: kind %d, grew for %" PRIu64, v.kind, v.grew_for);
}

/* No cache, 1 MiB kept per step: a rise in every iteration 5..60 of
 * 0..60: one step (gaps of 1) spanning 55 >= 8, reaching the end: a ramp.
 * Its rate over its second half: from the rise at 5 + 55 / 2 = 32 (the
 * 28th: level 128 MiB) to 60 (156 MiB): 28 MiB over 28 = 1 MiB. */
static void test_rule_ramp(void)
{
	uint64_t xs[56];
	for (size_t i = 0; i < 56; i++)
		xs[i] = 5 + i;
	struct growth_verdict v;
	decide(xs, 56, 60, MiB, &v);
	CHECK(v.kind == GV_LEAK && v.shape == GV_RAMP && v.start_x == 5 && v.from_x == 32 &&
		  v.to_x == 60 && v.from_level == 128 * MiB && v.rate == (double)MiB,
	      "ramp: kind %d shape %d from %" PRIu64 " rate %g", v.kind, v.shape, v.from_x, v.rate);
	/* 6 iterations of a ramp (5..10 of 0..10) span 5 < 8: undetermined */
	decide(xs, 6, 10, MiB, &v);
	CHECK(v.kind == GV_UNDETERMINED, "short ramp: kind %d", v.kind);
}

/* ---- whole traces ------------------------------------------------------ */

static uint64_t nevents; /* written to the trace being built: its trailer's count */

static void ev(struct tb *b, uint64_t t, uint32_t api, int64_t dev, uint64_t ptr, uint64_t size,
	       uint64_t stack)
{
	struct tb_event e = {
	    .time_ns = t, .api = api, .device = dev, .ptr = ptr, .size = size, .stack_id = stack};
	tb_event(b, &e);
	nevents++;
}

#define TEMP 1 /* stack ids: a step's temporary */
#define KEPT 2 /* what a leaking step keeps */

/* 100 MiB of weights at 1 s; then steps 0..n-1 at 2 + i s: a 10 MiB
 * temporary for half a second, and with `leak` 1 MiB kept after it. */
static void steps(struct tb *b, int64_t dev, uint64_t base, int n, int leak)
{
	ev(b, 1 * S, GMT_API_cudaMalloc, dev, base, 100 * MiB, 0);
	for (uint64_t i = 0; i < (uint64_t)n; i++) {
		uint64_t t = (2 + i) * S;
		ev(b, t, GMT_API_cudaMalloc, dev, base + 0x10000000, 10 * MiB, TEMP);
		ev(b, t + S / 2, GMT_API_cudaFree, dev, base + 0x10000000, 0, 0);
		if (leak)
			ev(b, t + S / 2 + 1, GMT_API_cudaMalloc, dev, base + 0x20000000 + i * MiB,
			   MiB, KEPT);
	}
}

/* 200 MiB of warm-up segments at 1 s, then a 20 MiB segment at 21, 41,
 * ... (n of them; never freed: a cache), nothing else. */
static void segments(struct tb *b, uint64_t base, uint64_t n)
{
	ev(b, 1 * S, GMT_API_cudaMalloc, 0, base, 200 * MiB, 0);
	for (uint64_t i = 0; i < n; i++)
		ev(b, (21 + 20 * i) * S, GMT_API_cudaMalloc, 0, base + (1 + i) * 0x10000000,
		   20 * MiB, KEPT);
}

/* The segments' staircase (14), then how the run ends: an allocation
 * that fails out of memory at 285 s; or a free at 285 s of the warm-up's
 * 200 MiB and 4 segments; or regions that double (2 MiB at 21 s, 4 at 41,
 * ... 256 at 161: TF's allow_growth keeping memory). */
static void ending(struct tb *b, uint64_t base, int how)
{
	if (how == 1) {
		struct tb_event e = {.time_ns = 285 * S,
				     .api = GMT_API_cudaMalloc,
				     .size = 8ull << 30,
				     .stack_id = KEPT,
				     .result = 2 /* cudaErrorMemoryAllocation */};
		tb_event(b, &e);
		nevents++;
	} else if (how == 2) {
		ev(b, 285 * S, GMT_API_cudaFree, 0, base, 0, 0);
		for (uint64_t i = 0; i < 4; i++)
			ev(b, 285 * S + 1 + i, GMT_API_cudaFree, 0, base + (1 + i) * 0x10000000, 0,
			   0);
	}
}

static void doubling(struct tb *b, uint64_t base)
{
	for (uint64_t i = 0; i < 8; i++)
		ev(b, (21 + 20 * i) * S, GMT_API_cuMemAlloc_v2, 0, base + i * 0x100000000,
		   (2 * MiB) << i, KEPT);
}

enum shape {
	MANY_LEAK,
	RANGES_LEAK,
	RANGES_SHORT,
	SEGMENTS,
	WARM,
	PLATEAU,
	BOTH,
	SEG_OOM,
	SEG_FELL,
	SEG_CUT,
	DOUBLING
};

/* The trace of shape s, ending (its trailer) at end. */
static const char *write(enum shape s, const char *name, uint64_t end)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 1ull << 30, 9, 0, 12040);
	tb_device(b, 1, "GPU 1", NULL, 0, 1ull << 30, 9, 0, 12040);
	int n = s == RANGES_SHORT ? 5 : s == MANY_LEAK ? 200001 : 30;
	nevents = 0;
	tb_events_begin(b, 1, 1 * S);
	if (s == RANGES_LEAK || s == RANGES_SHORT || s == MANY_LEAK)
		steps(b, 0, 0x10000000000, n, 1);
	else if (s == SEGMENTS || s == WARM)
		segments(b, 0x10000000000, s == WARM ? 3 : 14);
	else if (s == SEG_OOM || s == SEG_FELL || s == SEG_CUT) {
		segments(b, 0x10000000000, 14);
		ending(b, 0x10000000000, s == SEG_OOM ? 1 : s == SEG_FELL ? 2 : 0);
	} else if (s == DOUBLING)
		doubling(b, 0x10000000000);
	else if (s == PLATEAU)
		steps(b, 0, 0x10000000000, 100, 0);
	else
		steps(b, 0, 0x10000000000, 30, 1);
	tb_events_end(b);
	if (s == BOTH) { /* another thread, replayed in time order */
		tb_events_begin(b, 2, 1 * S);
		steps(b, 1, 0x20000000000, 30, 0);
		tb_events_end(b);
	}
	if (s == RANGES_LEAK || s == RANGES_SHORT)
		for (uint64_t i = 0; i < (uint64_t)n; i++) {
			tb_range(b, 1, (2 + i) * S, GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_NVTX, "step");
			tb_range(b, 1, (2 + i) * S + S * 3 / 4, GMT_RANGE_POP, 0,
				 GMT_RANGE_SRC_NVTX, "");
		}
	if (s != SEG_CUT) /* a killed run's trace has no trailer */
		tb_trailer(b, end, nevents, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, name);
	tb_free(b);
	return path;
}

static void compute(const char *path, struct trace *t, const struct growth_params *p,
		    struct growth_result *r)
{
	CHECK(trace_open(t, "growth", path) == -1, "trace_open %s", path);
	int rc = growth_compute(t, p, r);
	CHECK(rc == -1, "growth_compute %s: %d", path, rc);
}

static void done(struct trace *t, struct growth_result *r)
{
	growth_result_free(r);
	CHECK(trace_finish(t) == 0, "trace_finish");
	trace_close(t);
}

/* A leak with ranges: 30 "step" ranges at 2..31 s, each keeping 1 MiB.
 * Boundaries: the 30 starts and the last one's end (31.75 s): 30
 * iterations. Iteration i's floor is the live bytes at its start, 100 + i
 * MiB (the temporary only adds; the kept MiB comes after its free), so the
 * level rises in every iteration 1..29 of 0..29: a ramp of 28 >= 8 to the
 * end. Rate over its second half, from 1 + 28 / 2 = 15 (115 MiB) to 29
 * (129 MiB): 14 MiB in 14 iterations, 1 MiB each; the iterations start a
 * second apart, so 1 MiB/s. The site: the kept allocations made from
 * iteration 0 (the ramp starts at 1; what raised it came in 0) to the
 * last iteration's start (31 s), live at its end: 29 of 1 MiB at KEPT. */
static void test_ranges_leak(void)
{
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	compute(write(RANGES_LEAK, "ranges.gmt", 400 * S), &t, &p, &r);
	const struct growth_dev *d = &r.devs[0];
	CHECK(growth_iterations(&r) == 30 && !strcmp(growth_iteration_source(&r), "ranges") &&
		  !strcmp(r.mk.name, "step"),
	      "ranges: %zu iterations from %s", growth_iterations(&r), growth_iteration_source(&r));
	CHECK(d->floor[0] == 100 * MiB && d->floor[29] == 129 * MiB, "ranges: floors %" PRIu64,
	      d->floor[29]);
	double step;
	CHECK(d->v.kind == GV_LEAK && d->v.shape == GV_RAMP && growth_rate_per_step(&r, d, &step) &&
		  step == (double)MiB && growth_rate_per_s(&r, d) == (double)MiB,
	      "ranges: kind %d, %g per step, %g/s", d->v.kind, step, growth_rate_per_s(&r, d));
	CHECK(d->site_stack == KEPT && d->site_bytes == 29 * MiB && d->site_count == 29,
	      "ranges: site %" PRIu64 ", %" PRIu64 " bytes", d->site_stack, d->site_bytes);
	char buf[256];
	growth_reason(&r, d, buf, sizeof(buf));
	CHECK(!strcmp(buf, "grew in every iteration from 2 to 30 of 30"), "ranges: reason %s", buf);
	done(&t, &r);
}

/* The same leak over 5 steps: the level rises in iterations 1..4 of 0..4,
 * a ramp spanning 3 < 8, and no flat stretch: undetermined. */
static void test_ranges_short(void)
{
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	compute(write(RANGES_SHORT, "short.gmt", 400 * S), &t, &p, &r);
	CHECK(growth_iterations(&r) == 5 && r.devs[0].v.kind == GV_UNDETERMINED,
	      "short: %zu iterations, kind %d", growth_iterations(&r), r.devs[0].v.kind);
	done(&t, &r);
}

/* A cache's staircase and no ranges: nothing is ever freed, so no
 * allocation repeats after a free: no iterations, the high-water mark over
 * time, to the trace's end (the process's exit), 290 s. Rises at 1 s, then
 * 21, 41, ..., 281 s; the active run (to the last call) is 280 s: steps
 * merge within 5.6 s (2%), a steady state needs 28 s (10%). The last four
 * start at 221, 241, 261, 281 s: regular, and so back to 1 s (280 s >=
 * 28 s); the last call is the last rise, and the trace ends 9 s after it,
 * within two intervals (40 s): a leak, 3 x 20
 * MiB over 60 s = 1 MiB/s, no rate per step. The site: what was never
 * freed, made from 221 s on: 4 segments of 20 MiB at KEPT.
 *
 * The same staircase in a process that lives on to 400 s without a driver
 * call (a long exit): the staircase ran up to the last call (281 s), and
 * 119 s without a rise is over two intervals but shorter than the 280 s
 * it kept its interval (back to 1 s): still a leak. To 700 s: 419 s >=
 * 280 s, > 40 s and >= 28 s: steady, but after 15 regular steps (5 or
 * more) to the last call: a leak cut short by the exit, or a cache that
 * settled: undetermined.
 *
 * A warm-up of 4 steps (1, 21, 41, 61 s) to the last call, then nothing to
 * 400 s: the active run is 60 s (merge 1.2 s, steady 6 s); a regular
 * staircase back to 1 s, 60 s long; 339 s without a rise is longer: it
 * stopped, and 4 steps are a warm-up's few: no leak. */
static void test_segments(void)
{
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	compute(write(SEGMENTS, "segments.gmt", 290 * S), &t, &p, &r);
	const struct growth_dev *d = &r.devs[0];
	double step;
	CHECK(growth_iterations(&r) == 0 && !strcmp(growth_iteration_source(&r), "none"),
	      "segments: %zu iterations", growth_iterations(&r));
	CHECK(d->v.kind == GV_LEAK && d->v.shape == GV_STAIRS && d->v.period == 20 * S &&
		  d->v.steady == 9 * S && !growth_rate_per_step(&r, d, &step) &&
		  growth_rate_per_s(&r, d) == (double)MiB,
	      "segments: kind %d shape %d, %g/s", d->v.kind, d->v.shape, growth_rate_per_s(&r, d));
	CHECK(d->site_stack == KEPT && d->site_bytes == 80 * MiB && d->site_count == 4,
	      "segments: site %" PRIu64 ", %" PRIu64, d->site_stack, d->site_bytes);
	/* the peak and its steps: 200 + 14 x 20 MiB, never a rise above it */
	CHECK(d->peak == 480 * MiB && d->steps_total == 15 && d->v.level == d->peak,
	      "segments: peak %" PRIu64, d->peak);
	done(&t, &r);

	compute(write(SEGMENTS, "segments-exit.gmt", 400 * S), &t, &p, &r);
	d = &r.devs[0];
	CHECK(d->v.kind == GV_LEAK && d->v.shape == GV_STAIRS && d->v.steady == 119 * S &&
		  d->v.grew_for == 280 * S,
	      "segments, long exit: kind %d shape %d, grew for %" PRIu64, d->v.kind, d->v.shape,
	      d->v.grew_for);
	done(&t, &r);

	compute(write(SEGMENTS, "segments-settled.gmt", 700 * S), &t, &p, &r);
	d = &r.devs[0];
	CHECK(d->v.kind == GV_UNDETERMINED && d->v.shape == GV_CUT && d->v.steady == 419 * S &&
		  d->v.grew_steps == 15,
	      "segments, cut: kind %d shape %d", d->v.kind, d->v.shape);
	done(&t, &r);

	/* The same staircase, the exit at 900 s: 619 s without a call is more
	 * than twice the 280 s it grew for, so its loop had settled. */
	compute(write(SEGMENTS, "segments-long.gmt", 900 * S), &t, &p, &r);
	d = &r.devs[0];
	CHECK(d->v.kind == GV_NO_LEAK && d->v.shape == GV_STOPPED && d->v.steady == 619 * S &&
		  d->v.grew_for == 280 * S,
	      "segments, long silence: kind %d shape %d, steady %" PRIu64, d->v.kind, d->v.shape,
	      d->v.steady);
	done(&t, &r);

	compute(write(WARM, "warm.gmt", 400 * S), &t, &p, &r);
	d = &r.devs[0];
	CHECK(d->v.kind == GV_NO_LEAK && d->v.shape == GV_STOPPED && d->v.steady == 339 * S &&
		  d->v.grew_for == 60 * S && d->v.grew_steps == 4,
	      "warm: kind %d shape %d, grew for %" PRIu64 " in %zu", d->v.kind, d->v.shape,
	      d->v.grew_for, d->v.grew_steps);
	done(&t, &r);
}

/* The segments' staircase (a leak, above, to 290 s) and how the run
 * ends; each is still a leak's shape, but the end makes it doubtful:
 *  - an allocation fails out of memory at 285 s: growth before an OOM is
 *    the working set as much as what is kept: undetermined (GV_OOM);
 *  - at 285 s the 200 MiB of warm-up and 4 segments (80 MiB) are freed:
 *    200 MiB live at the end of a 480 MiB level, under half: not kept,
 *    undetermined (GV_FELL);
 *  - no trailer (a killed run): the staircase reaches the trace's cut,
 *    its last event at 281 s: undetermined (GV_CUTOFF).
 * Regions that double, 2 MiB at 21 s to 256 MiB at 161 s, then nothing
 * to 170 s: steps every 20 s, regular, 9 s after the last: a staircase to
 * the end; but a doubling pool's next region comes ever later (here at
 * 181 s at the same pace, 2 x 256 MiB at one rate: later still), so
 * undetermined (GV_DOUBLING), and its rate unknown. */
static void test_endings(void)
{
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	static const struct {
		enum shape s;
		const char *name;
		enum growth_shape want;
		uint64_t end;
	} cases[] = {{SEG_OOM, "seg-oom.gmt", GV_OOM, 290 * S},
		     {SEG_FELL, "seg-fell.gmt", GV_FELL, 290 * S},
		     {SEG_CUT, "seg-cut.gmt", GV_CUTOFF, 290 * S},
		     {DOUBLING, "doubling.gmt", GV_DOUBLING, 170 * S}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		compute(write(cases[i].s, cases[i].name, cases[i].end), &t, &p, &r);
		const struct growth_dev *d = &r.devs[0];
		CHECK(d->v.kind == GV_UNDETERMINED && d->v.shape == cases[i].want &&
			  growth_rate_per_s(&r, d) == 0,
		      "%s: kind %d shape %d", cases[i].name, d->v.kind, d->v.shape);
		if (cases[i].s == DOUBLING)
			CHECK(d->v.rate_hidden, "doubling: rate shown");
		done(&t, &r);
	}
}

/* A plateau without ranges: the 10 MiB temporary is freed before it comes
 * again, 100 times (>= 8): iterations from that pattern, 99 of them
 * (boundaries at 2..101 s). Every floor is the 100 MiB of weights: flat,
 * no leak. The steps: 100 MiB at 1 s, 110 MiB at 2 s. */
static void test_plateau(void)
{
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	compute(write(PLATEAU, "plateau.gmt", 400 * S), &t, &p, &r);
	const struct growth_dev *d = &r.devs[0];
	CHECK(growth_iterations(&r) == 99 && !strcmp(growth_iteration_source(&r), "pattern") &&
		  r.mk.pattern_stack == TEMP && r.mk.pattern_size == 10 * MiB,
	      "plateau: %zu iterations", growth_iterations(&r));
	CHECK(d->v.kind == GV_NO_LEAK && d->v.shape == GV_FLAT && d->v.level == 100 * MiB &&
		  d->peak == 110 * MiB && d->steps_total == 2,
	      "plateau: kind %d level %" PRIu64, d->v.kind, d->v.level);
	done(&t, &r);
}

/* Two devices: device 0 leaks 1 MiB per step, device 1 does not. The
 * pattern: device 0's temporary (seen first; 30 cycles each), 29
 * iterations; device 0's floors rise in 1..28 of 0..28: a leak of 1 MiB
 * per step; device 1 flat at 100 MiB: no leak. Together the peak is at
 * 31 s, both temporaries live: 100 + 29 + 10 and 100 + 10 MiB = 249 MiB.
 * --device 1: only it. */
static void test_devices(void)
{
	const char *path = write(BOTH, "both.gmt", 400 * S);
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	compute(path, &t, &p, &r);
	CHECK(r.ndevs == 2 && growth_iterations(&r) == 29, "both: %zu devices, %zu iterations",
	      r.ndevs, growth_iterations(&r));
	double step;
	CHECK(r.devs[0].v.kind == GV_LEAK && growth_rate_per_step(&r, &r.devs[0], &step) &&
		  step == (double)MiB,
	      "both: dev 0 kind %d, %g", r.devs[0].v.kind, step);
	CHECK(r.devs[1].v.kind == GV_NO_LEAK && r.devs[1].v.level == 100 * MiB,
	      "both: dev 1 kind %d", r.devs[1].v.kind);
	CHECK(r.process_peak == 249 * MiB, "both: process peak %" PRIu64, r.process_peak);
	done(&t, &r);

	p = (struct growth_params){.has_device = true, .device = 1, .ncols = 10};
	compute(path, &t, &p, &r);
	CHECK(r.ndevs == 1 && r.devs[0].ordinal == 1 && r.devs[0].v.kind == GV_NO_LEAK &&
		  r.process_peak == 110 * MiB,
	      "device 1: %zu devices", r.ndevs);
	done(&t, &r);
}

/* More iterations than GROWTH_MAX_ITERATIONS: 200,001 cycles of the
 * temporary, each step keeping 1 MiB. Memory stays bounded: every second
 * boundary is kept (stride 2: 0, 2, ..., 200,000, the last one among
 * them), 100,001 of them, 100,000 iterations of two steps each, each
 * keeping 2 MiB: a leak of 2 MiB per iteration. The boundaries are the
 * kept cycles' starts, 2 + 2k s; the last at 200,002 s. */
static void test_many_iterations(void)
{
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	compute(write(MANY_LEAK, "many.gmt", 300000 * S), &t, &p, &r);
	CHECK(growth_iterations(&r) == GROWTH_MAX_ITERATIONS && r.mk.stride == 2 &&
		  r.mk.found == 200001 && !strcmp(growth_iteration_source(&r), "pattern"),
	      "many: %zu iterations, stride %zu of %zu", growth_iterations(&r), r.mk.stride,
	      r.mk.found);
	size_t bad = 0;
	for (size_t k = 0; k < r.mk.n; k++)
		bad += r.mk.times[k] != (2 + 2 * k) * S;
	CHECK(!bad && r.mk.n == 100001, "many: %zu boundaries at the wrong time", bad);
	double step;
	CHECK(r.devs[0].v.kind == GV_LEAK && growth_rate_per_step(&r, &r.devs[0], &step) &&
		  step == 2.0 * MiB,
	      "many: kind %d, %g per iteration", r.devs[0].v.kind, step);
	done(&t, &r);
}

int main(void)
{
	test_rule_staircase();
	test_rule_staircase3();
	test_rule_dense();
	test_rule_doubling();
	test_rule_plateau();
	test_rule_late_warmup();
	test_rule_between_steps();
	test_endings();
	test_rule_short();
	test_rule_stopped();
	test_rule_ramp();
	test_ranges_leak();
	test_ranges_short();
	test_segments();
	test_plateau();
	test_devices();
	test_many_iterations();
	return failures ? 1 : 0;
}
