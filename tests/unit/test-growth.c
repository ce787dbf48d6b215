/* analysis/growth.c, the growth aggregator, on traces written by the
 * test-only trace builder: a flat sawtooth (no leak), a steady staircase
 * (a leak: slope and rise worked out by hand below), a warm-up then flat
 * (no leak), and two devices in one trace kept apart (and --device). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/growth.h"
#include "check.h"
#include "trace-file.h"

#define S   1000000000ull /* ns */
#define MiB (1ull << 20)

static void ev(struct tb *b, uint64_t t, uint32_t api, int64_t dev, uint64_t ptr, uint64_t size)
{
	struct tb_event e = {
	    .time_ns = t, .api = api, .device = dev, .ptr = ptr, .size = size, .stack_id = 0};
	tb_event(b, &e);
}

/* On dev: 100 MiB at 1 s, then 1 MiB allocated at 2..101 s and freed half
 * a second later (last event 101.5 s). */
static void flat(struct tb *b, int64_t dev, uint64_t base)
{
	ev(b, 1 * S, GMT_API_cudaMalloc, dev, base, 100 * MiB);
	for (uint64_t i = 1; i <= 100; i++) {
		ev(b, (1 + i) * S, GMT_API_cudaMalloc, dev, base + 0x1000000, MiB);
		ev(b, (1 + i) * S + S / 2, GMT_API_cudaFree, dev, base + 0x1000000, 0);
	}
}

/* On dev: 100 MiB at 1 s, then 1 MiB at each of 2..101 s, never freed. */
static void staircase(struct tb *b, int64_t dev, uint64_t base)
{
	ev(b, 1 * S, GMT_API_cudaMalloc, dev, base, 100 * MiB);
	for (uint64_t i = 1; i <= 100; i++)
		ev(b, (1 + i) * S, GMT_API_cudaMalloc, dev, base + i * 0x1000000, MiB);
}

/* Steps 100, 200, 400 MiB at 1, 2, 3 s, then the flat sawtooth of 1 MiB at
 * 4..100 s (last event 100.5 s). */
static void warmup(struct tb *b, int64_t dev, uint64_t base)
{
	for (uint64_t i = 0; i < 3; i++)
		ev(b, (1 + i) * S, GMT_API_cudaMalloc, dev, base + i * 0x40000000,
		   (100 * MiB) << i);
	for (uint64_t i = 4; i <= 100; i++) {
		ev(b, i * S, GMT_API_cudaMalloc, dev, base + 0x100000000, MiB);
		ev(b, i * S + S / 2, GMT_API_cudaFree, dev, base + 0x100000000, 0);
	}
}

enum shape { FLAT, STAIRCASE, WARMUP, BOTH };

static const char *write(enum shape s, const char *name)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 1ull << 30, 9, 0, 12040);
	tb_device(b, 1, "GPU 1", NULL, 0, 1ull << 30, 9, 0, 12040);
	static const uint64_t events[] = {201, 101, 197, 302};
	if (s == BOTH) { /* a thread each, replayed in time order */
		tb_events_begin(b, 1, 1 * S);
		staircase(b, 0, 0x10000000000);
		tb_events_end(b);
		tb_events_begin(b, 2, 1 * S);
		flat(b, 1, 0x20000000000);
		tb_events_end(b);
	} else {
		tb_events_begin(b, 1, 1 * S);
		if (s == FLAT)
			flat(b, 0, 0x10000000000);
		else if (s == STAIRCASE)
			staircase(b, 0, 0x10000000000);
		else
			warmup(b, 0, 0x10000000000);
		tb_events_end(b);
	}
	tb_trailer(b, 102 * S, events[s], 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, name);
	tb_free(b);
	return path;
}

static int open_compute(const char *path, struct trace *t, const struct growth_params *p,
			struct growth_result *r)
{
	CHECK(trace_open(t, "growth", path) == -1, "trace_open %s", path);
	int rc = growth_compute(t, p, r);
	CHECK(rc == -1, "growth_compute %s: %d", path, rc);
	return rc;
}

static void done(struct trace *t, struct growth_result *r)
{
	growth_result_free(r);
	CHECK(trace_finish(t) == 0, "trace_finish");
	trace_close(t);
}

/* The flat sawtooth's figures, alone or beside another device: steps at
 * 1 s (100 MiB, warm-up) and 2 s (to 101 MiB: 1% of it, creep); the window
 * runs from 1 s to the last sample at 100 MiB or more (101.5 s), 201
 * samples; every slice's high is 101 MiB, so the line is flat. */
static void expect_flat(const struct growth_dev *d)
{
	CHECK(d->peak == 101 * MiB && d->peak_time == 2 * S && d->last_bytes == 100 * MiB,
	      "flat: peak %" PRIu64 " at %" PRIu64 ", end %" PRIu64, d->peak, d->peak_time,
	      d->last_bytes);
	CHECK(d->steps_total == 2 && d->nsteps == 2 && d->steps[1].step == MiB,
	      "flat: %" PRIu64 " steps", d->steps_total);
	CHECK(d->has_warmup && d->warmup_end == 1 * S && d->warmup_level == 100 * MiB &&
		  d->growth_stopped && d->window_start == 1 * S,
	      "flat: warm-up ends %" PRIu64 " at %" PRIu64, d->warmup_end, d->warmup_level);
	CHECK(d->window_end == 101 * S + S / 2 && d->n == 201 && d->points == 16,
	      "flat: window to %" PRIu64 ", %" PRIu64 " samples, %d points", d->window_end, d->n,
	      d->points);
	CHECK(fabs(d->slope) < 1e-3 && fabs(d->rise) < 1e-1 && !d->leak,
	      "flat: slope %g, rise %g, leak %d", d->slope, d->rise, d->leak);
	/* chunks by bytes raised: 100 MiB once, then 1 MiB once */
	CHECK(d->chunks && d->chunks->size == 100 * MiB && d->chunks->count == 1,
	      "flat: first chunk");
	uint64_t block;
	CHECK(!strcmp(growth_pattern(d, 1ull << 30, &block), "mixed") && block == 0,
	      "flat: pattern");
}

/* The staircase alone: 101 steps (100 MiB, then 1 MiB each: under 5% of
 * the peak each makes), so warm-up ends at 1 s at 100 MiB; the run is
 * 100 s, the window 1..101 s. Slice k of 16 ends just past (k+1) * 6.25 s
 * of the window, so its high is the allocation at j = floor((k+1) * 6.25)
 * s: 6, 12, 18, 25, ... 100, at 100 + j MiB. Those points lie on
 * y = 100 MiB + 1 MiB/s * x: slope 1048576 B/s, rise over the 100 s window
 * 100 MiB, over max(1 MiB, 1% of the 200 MiB peak): a leak. The chart's 10
 * columns each end on the allocation at 10 (c + 1) s: 110 + 10c MiB. */
static void test_staircase(void)
{
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	open_compute(write(STAIRCASE, "stairs.gmt"), &t, &p, &r);
	CHECK(r.ndevs == 1 && r.devs[0].ordinal == 0, "stairs: %zu devices", r.ndevs);
	const struct growth_dev *d = &r.devs[0];
	CHECK(d->peak == 200 * MiB && d->peak_time == 101 * S && d->last_bytes == 200 * MiB &&
		  d->steps_total == 101,
	      "stairs: peak %" PRIu64 ", %" PRIu64 " steps", d->peak, d->steps_total);
	CHECK(d->warmup_end == 1 * S && d->warmup_level == 100 * MiB && d->growth_stopped &&
		  d->window_start == 1 * S && d->window_end == 101 * S && d->n == 101 &&
		  d->points == 16,
	      "stairs: window %" PRIu64 "..%" PRIu64 ", %" PRIu64 " samples", d->window_start,
	      d->window_end, d->n);
	static const int js[16] = {6, 12, 18, 25, 31, 37, 43, 50, 56, 62, 68, 75, 81, 87, 93, 100};
	for (int k = 0; k < 16; k++)
		CHECK(d->slice_has[k] && d->slice_max[k] == (100 + (uint64_t)js[k]) * MiB &&
			  d->slice_time[k] == (1 + (uint64_t)js[k]) * S,
		      "stairs: slice %d high %" PRIu64 " at %" PRIu64, k, d->slice_max[k],
		      d->slice_time[k]);
	CHECK(fabs(d->slope - 1048576.0) < 1e-3, "stairs: slope %.6f", d->slope);
	CHECK(fabs(d->rise - 104857600.0) < 1e-1 && d->leak, "stairs: rise %.3f, leak %d", d->rise,
	      d->leak);
	for (int c = 0; c < 10; c++)
		CHECK(d->cols[c] == (110 + 10 * (uint64_t)c) * MiB, "stairs: column %d: %" PRIu64,
		      c, d->cols[c]);
	/* 100 x 1 MiB and 1 x 100 MiB raised the same bytes: the smaller first */
	CHECK(d->chunks->size == MiB && d->chunks->count == 100, "stairs: first chunk");
	uint64_t block;
	CHECK(!strcmp(growth_pattern(d, 1ull << 30, &block), "fixed blocks") && block == MiB,
	      "stairs: pattern");
	CHECK(r.process_peak == 200 * MiB && r.process_live == 200 * MiB, "stairs: process");
	done(&t, &r);
}

static void test_flat(void)
{
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	open_compute(write(FLAT, "flat.gmt"), &t, &p, &r);
	CHECK(r.ndevs == 1 && r.devs[0].ordinal == 0, "flat: %zu devices", r.ndevs);
	expect_flat(&r.devs[0]);
	for (int c = 0; c < 10; c++)
		CHECK(r.devs[0].cols[c] == 101 * MiB, "flat: column %d", c);
	done(&t, &r);
}

/* Steps of 100, 200 and 400 MiB (each 5% or more of the peak it makes:
 * warm-up, to 700 MiB at 3 s), then one of 1 MiB at 4 s (creep). The run
 * is 99.5 s and the window 3..100.5 s, three quarters of it: growth
 * stopped. Every slice's high is 701 MiB: flat, no leak; the steps double. */
static void test_warmup(void)
{
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	open_compute(write(WARMUP, "warmup.gmt"), &t, &p, &r);
	const struct growth_dev *d = &r.devs[0];
	CHECK(d->peak == 701 * MiB && d->steps_total == 4 && d->last_bytes == 700 * MiB,
	      "warmup: peak %" PRIu64 ", %" PRIu64 " steps", d->peak, d->steps_total);
	CHECK(d->warmup_end == 3 * S && d->warmup_level == 700 * MiB && d->growth_stopped &&
		  d->window_start == 3 * S && d->window_end == 100 * S + S / 2,
	      "warmup: ends %" PRIu64 " at %" PRIu64 ", window to %" PRIu64, d->warmup_end,
	      d->warmup_level, d->window_end);
	CHECK(d->n == 195 && d->points == 16, "warmup: %" PRIu64 " samples, %d points", d->n,
	      d->points);
	CHECK(fabs(d->slope) < 1e-3 && !d->leak, "warmup: slope %g, leak %d", d->slope, d->leak);
	uint64_t block;
	CHECK(!strcmp(growth_pattern(d, 1ull << 30, &block), "doubling"), "warmup: pattern");
	done(&t, &r);
}

/* The staircase on device 0 and the sawtooth on device 1 in one trace, on
 * two threads: each device has its own figures. Device 0's window now runs
 * to 101.5 s (the run's end), but its slice highs stay on the same line:
 * the same slope and rise. Together the peak is 200 + 101 MiB at 101 s. */
static void test_devices(void)
{
	const char *path = write(BOTH, "both.gmt");
	struct trace t;
	struct growth_result r;
	struct growth_params p = {.ncols = 10};
	open_compute(path, &t, &p, &r);
	CHECK(r.ndevs == 2 && r.devs[0].ordinal == 0 && r.devs[1].ordinal == 1, "both: %zu devices",
	      r.ndevs);
	const struct growth_dev *d = &r.devs[0];
	CHECK(d->peak == 200 * MiB && d->steps_total == 101 && d->window_end == 101 * S &&
		  d->n == 101,
	      "both: dev 0 peak %" PRIu64 ", %" PRIu64 " samples", d->peak, d->n);
	CHECK(fabs(d->slope - 1048576.0) < 1e-3 && fabs(d->rise - 104857600.0) < 1e-1 && d->leak,
	      "both: dev 0 slope %.6f, rise %.3f", d->slope, d->rise);
	expect_flat(&r.devs[1]);
	CHECK(r.process_peak == 301 * MiB && r.process_live == 300 * MiB,
	      "both: process peak %" PRIu64 ", end %" PRIu64, r.process_peak, r.process_live);
	done(&t, &r);

	/* --device 1: only it, the same figures; the process is that device */
	p = (struct growth_params){.has_device = true, .device = 1, .ncols = 10};
	open_compute(path, &t, &p, &r);
	CHECK(r.ndevs == 1 && r.devs[0].ordinal == 1, "device 1: %zu devices", r.ndevs);
	expect_flat(&r.devs[0]);
	CHECK(r.process_peak == 101 * MiB && r.process_live == 100 * MiB, "device 1: process");
	done(&t, &r);

	/* --device 5: listed, nothing on it */
	p = (struct growth_params){.has_device = true, .device = 5, .ncols = 10};
	open_compute(path, &t, &p, &r);
	CHECK(r.ndevs == 1 && r.devs[0].ordinal == 5 && r.devs[0].peak == 0 &&
		  r.devs[0].steps_total == 0 && !r.devs[0].has_warmup && r.process_peak == 0,
	      "device 5");
	done(&t, &r);
}

int main(void)
{
	test_flat();
	test_staircase();
	test_warmup();
	test_devices();
	return failures ? 1 : 0;
}
