/* The clock's controller (preload/clock.c) on made-up (TSC, CLOCK_MONOTONIC)
 * pairs: the line stays continuous where it is refitted, converges on the
 * clock whatever the refit period, and is re-anchored, with one warning,
 * when the counter jumps or goes back. */
#include <stdio.h>
#include <stdlib.h>

#include "preload/clock.h"
#include "preload/tracer.h"
#include "check.h"

static int warnings, infos;

void gmt_note(int level, const char *text)
{
	if (level)
		warnings++;
	else
		infos++;
	(void)text;
}

static int have_line(void)
{
	return gmt_clock_line.seq >= 2;
}

static uint64_t on_line(uint64_t tsc)
{
	const struct gmt_clock_params *p = &gmt_clock_line.p[gmt_clock_line.seq & 1];
	return gmt_clock_apply(p->base_tsc, p->base_ns, p->mult, tsc);
}

/* A 2.1 GHz counter and a clock at `ppm` from its nominal rate. */
#define TICKS_PER_S 2100000000.0
static uint64_t mono_at(uint64_t tsc, double ppm, int64_t skew_ns)
{
	return 1000000000000ull + (uint64_t)((double)tsc / TICKS_PER_S * 1e9 * (1 + ppm * 1e-6)) +
	       (uint64_t)skew_ns;
}

/* Steps every `period_s` for `steps`; returns the largest distance between
 * line and clock over the last quarter, and checks continuity. */
static int64_t run(double period_s, int steps, double ppm, uint64_t *tsc)
{
	int64_t worst = 0;
	for (int i = 0; i < steps; i++) {
		*tsc += (uint64_t)(period_s * TICKS_PER_S);
		uint64_t mono = mono_at(*tsc, ppm, 0);
		uint64_t before = have_line() ? on_line(*tsc) : 0;
		int had = have_line();
		gmt_clock_step(*tsc, mono);
		if (had) {
			int64_t jump = (int64_t)(on_line(*tsc) - before);
			CHECK(jump >= -1 && jump <= 1, "refit %d moved the line by %lld ns", i,
			      (long long)jump);
		}
		if (i >= steps * 3 / 4 && have_line()) {
			int64_t d = (int64_t)(mono_at(*tsc, ppm, 0) - on_line(*tsc));
			d = d < 0 ? -d : d;
			worst = d > worst ? d : worst;
		}
	}
	return worst;
}

int main(void)
{
	uint64_t tsc;

	/* Refits every 100 ms, the first pair 30 ns off: within 50 ns after a
	 * minute, no warning. */
	tsc = 1000;
	gmt_clock_test_start(tsc, mono_at(tsc, 20, 30));
	warnings = infos = 0;
	int64_t worst = run(0.1, 600, 20, &tsc);
	CHECK(have_line(), "no line after a minute");
	CHECK(infos == 1, "%d info notes, want 1 (the fit)", infos);
	CHECK(warnings == 0, "%d warnings at 100 ms refits", warnings);
	CHECK(worst <= 50, "line %lld ns from the clock at 100 ms refits", (long long)worst);

	/* Refits a minute apart (GPUMEMTRACE_FLUSH_MS=60000), the same 30 ns:
	 * a 1 s horizon made each refit overshoot and re-anchor every few
	 * minutes; the horizon now spans twice the period. */
	tsc = 1000;
	gmt_clock_test_start(tsc, mono_at(tsc, 20, 30));
	gmt_clock_step(tsc + (uint64_t)(0.03 * TICKS_PER_S),
		       mono_at(tsc + (uint64_t)(0.03 * TICKS_PER_S), 20, 0));
	tsc += (uint64_t)(0.03 * TICKS_PER_S);
	warnings = 0;
	worst = run(60, 300, 20, &tsc);
	CHECK(warnings == 0, "%d warnings at 60 s refits", warnings);
	CHECK(worst <= 1000, "line %lld ns from the clock at 60 s refits", (long long)worst);

	/* The counter jumps 2 s ahead of the clock: one warning, the line put
	 * back on the clock at once, and then it holds without more. */
	tsc = 1000;
	gmt_clock_test_start(tsc, mono_at(tsc, 0, 0));
	warnings = 0;
	run(0.1, 100, 0, &tsc);
	uint64_t jump = (uint64_t)(2 * TICKS_PER_S);
	uint64_t mono = mono_at(tsc, 0, 0) + 100000000; /* 100 ms on the clock */
	tsc += (uint64_t)(0.1 * TICKS_PER_S) + jump;
	gmt_clock_step(tsc, mono);
	CHECK(warnings == 1, "%d warnings after a jump, want 1", warnings);
	CHECK(on_line(tsc) == mono, "after the jump the line is %lld ns from the clock",
	      (long long)(on_line(tsc) - mono));
	for (int i = 0; i < 100; i++) {
		tsc += (uint64_t)(0.1 * TICKS_PER_S);
		mono += 100000000;
		uint64_t before = on_line(tsc);
		gmt_clock_step(tsc, mono);
		int64_t moved = (int64_t)(on_line(tsc) - before);
		/* A rate still measured from before the jump would put the
		 * line off again and again: each re-anchor is a jump here. */
		CHECK(moved >= -1 && moved <= 1,
		      "refit %d after the jump moved the line by %lld ns", i, (long long)moved);
	}
	int64_t d = (int64_t)(mono - on_line(tsc));
	CHECK(d >= -50 && d <= 50, "10 s after the jump the line is %lld ns off", (long long)d);
	CHECK(warnings == 1, "%d warnings after the jump settled, want 1", warnings);

	/* The counter goes back: re-anchored, stamps from the new counter
	 * value are on the clock again. */
	tsc = 1000000000000ull;
	gmt_clock_test_start(tsc, mono_at(tsc, 0, 0));
	warnings = 0;
	run(0.1, 50, 0, &tsc);
	mono = mono_at(tsc, 0, 0) + 100000000;
	tsc = 5000;
	gmt_clock_step(tsc, mono);
	CHECK(warnings == 1, "%d warnings after the counter went back, want 1", warnings);
	CHECK(on_line(tsc) == mono, "after going back the line is %lld ns off",
	      (long long)(on_line(tsc) - mono));

	/* Going back before there is a line: after three, the TSC is given up
	 * (no line, no early wake-ups for the fit). */
	tsc = 1000000000;
	gmt_clock_test_start(tsc, mono_at(tsc, 0, 0));
	infos = 0;
	for (int i = 0; i < 3; i++) {
		tsc -= 1000;
		gmt_clock_step(tsc, mono_at(1000000000, 0, 0) + (uint64_t)i + 1);
	}
	CHECK(!have_line(), "a line from a counter that went back");
	CHECK(gmt_clock_wait_ms() == 0, "still waking up early for a fit");
	CHECK(infos == 1, "%d info notes after giving up, want 1", infos);

	/* The arithmetic: a counter just behind the base, and a product far
	 * beyond 64 bits. */
	CHECK(gmt_clock_apply(1000, 5000, 1ull << 32, 990) == 4990, "behind the base");
	CHECK(gmt_clock_apply(0, 0, 1ull << 33, 1ull << 62) == 1ull << 63, "a 95-bit product");

	if (failures)
		return 1;
	printf("ok\n");
	return 0;
}
