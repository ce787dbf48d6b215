/* analysis/peakset.c: what was live at each device's peak, found in the one
 * replay pass, against figures worked out by hand: allocations still live
 * and made by the peak, groups of those freed after it, a new peak making
 * the older groups stale, and the 2 MiB page rounding of device allocations
 * over 1 MiB. Each stage's rows must add up to the device's peak. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/peakset.h"
#include "check.h"

#define MiB (1ull << 20)

struct row {
	uint64_t stack, bytes, count, big, rounding;
	uint32_t api;
};
struct rows {
	struct row r[16];
	size_t n;
};

static void collect(void *ctx, uint64_t stack_id, uint32_t api, uint64_t bytes, uint64_t count,
		    uint64_t big, uint64_t rounding)
{
	struct rows *rs = ctx;
	if (rs->n < 16)
		rs->r[rs->n] = (struct row){stack_id, bytes, count, big, rounding, api};
	rs->n++;
}

static int by_stack(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The rows of a device, sorted by stack (the groups come in hash order). */
static struct rows rows_of(const struct peakset *ps, int64_t dev)
{
	struct rows rs = {.n = 0};
	peakset_each(ps, dev, collect, &rs);
	if (rs.n <= 16)
		qsort(rs.r, rs.n, sizeof(rs.r[0]), by_stack);
	return rs;
}

static void expect_rows(const char *stage, const struct rows *got, const struct row *want, size_t n)
{
	CHECK(got->n == n, "%s: %zu rows, want %zu", stage, got->n, n);
	for (size_t i = 0; i < n && i < got->n; i++) {
		const struct row *g = &got->r[i], *w = &want[i];
		CHECK(g->stack == w->stack && g->api == w->api && g->bytes == w->bytes &&
			  g->count == w->count && g->big == w->big && g->rounding == w->rounding,
		      "%s row %zu: stack %" PRIu64 " api %u %" PRIu64 " bytes in %" PRIu64
		      " (big %" PRIu64 ", rounding %" PRIu64 "), want stack %" PRIu64
		      " api %u %" PRIu64 " in %" PRIu64 " (big %" PRIu64 ", rounding %" PRIu64 ")",
		      stage, i, g->stack, g->api, g->bytes, g->count, g->big, g->rounding, w->stack,
		      w->api, w->bytes, w->count, w->big, w->rounding);
	}
}

static uint64_t sum(const struct rows *rs)
{
	uint64_t s = 0;
	for (size_t i = 0; i < rs->n && i < 16; i++)
		s += rs->r[i].bytes;
	return s;
}

static uint64_t clock_ns;

static void ev(struct replay *rp, uint32_t api, int64_t dev, uint64_t ptr, uint64_t size,
	       uint64_t stack)
{
	clock_ns += 10;
	struct gmt_event e = {.time_ns = clock_ns,
			      .tid = 1,
			      .api = api,
			      .device = dev,
			      .ptr = ptr,
			      .size = size,
			      .stack_id = stack};
	replay_apply(rp, &e);
}

int main(void)
{
	struct replay rp;
	struct peakset ps;
	replay_init(&rp);
	peakset_attach(&ps, &rp);
	const uint32_t M = GMT_API_cudaMalloc, F = GMT_API_cudaFree;

	/* Stage 1. seq: dev0 bytes */
	ev(&rp, M, 0, 0x1000, 3 * MiB, 1);			 /* 1: A, 3 MiB */
	ev(&rp, M, 0, 0x2000, 100, 2);				 /* 2: B */
	ev(&rp, M, 0, 0x3000, 200, 2);				 /* 3: C: 3 MiB + 300, the peak */
	ev(&rp, GMT_API_cudaMallocHost, -1, 0x9000, 1000, 9);	 /* 4: host: not device memory */
	ev(&rp, GMT_API_cudaMallocAsync, 1, 0xa000, 5 * MiB, 5); /* 5: dev1's peak */
	ev(&rp, F, 0, 0x2000, 0, 0);				 /* 6: B freed after the peak */
	ev(&rp, F, 0, 0x3000, 0, 0);				 /* 7: C too */
	ev(&rp, M, 0, 0x4000, 50, 3);				 /* 8: D, after the peak */
	CHECK(rp.devs[0].lv.peak == 3 * MiB + 300 && rp.devs[0].lv.peak_seq == 3,
	      "dev0 peak %" PRIu64 " at seq %" PRIu64, rp.devs[0].lv.peak, rp.devs[0].lv.peak_seq);
	/* A live and made by the peak, alone: 3 MiB rounds up to 4 MiB (1 MiB);
	 * B and C as one group (stack 2, cudaMalloc); D made after the peak. */
	struct rows got = rows_of(&ps, 0);
	const struct row s1[] = {{1, 3 * MiB, 1, 1, MiB, M}, {2, 300, 2, 0, 0, M}};
	expect_rows("stage 1", &got, s1, 2);
	CHECK(sum(&got) == rp.devs[0].lv.peak, "stage 1 adds up to the peak");
	/* dev1: stream-ordered memory is never counted as "big" */
	got = rows_of(&ps, 1);
	const struct row d1[] = {{5, 5 * MiB, 1, 0, 0, GMT_API_cudaMallocAsync}};
	expect_rows("dev1", &got, d1, 1);
	got = rows_of(&ps, 7);
	CHECK(got.n == 0, "a device never seen has no rows (%zu)", got.n);

	/* Stage 2: a new peak; the groups of stage 1 become stale. */
	ev(&rp, GMT_API_cuMemAlloc_v2, 0, 0x5000, 4 * MiB, 4); /* 9: E: 7 MiB + 50, the peak */
	ev(&rp, F, 0, 0x1000, 0, 0);			       /* 10: A freed after it */
	ev(&rp, M, 0, 0x6000, MiB + 1, 6);		       /* 11: F, after it */
	ev(&rp, F, 0, 0x4000, 0, 0);			       /* 12: D (made at 8) freed */
	/* E alone (4 MiB: no rounding); groups A (stack 1) and D (stack 3);
	 * stack 2's group counted for the old peak: left out. */
	got = rows_of(&ps, 0);
	const struct row s2[] = {{1, 3 * MiB, 1, 1, MiB, M},
				 {3, 50, 1, 0, 0, M},
				 {4, 4 * MiB, 1, 1, 0, GMT_API_cuMemAlloc_v2}};
	expect_rows("stage 2", &got, s2, 3);
	CHECK(sum(&got) == 7 * MiB + 50 && rp.devs[0].lv.peak == 7 * MiB + 50,
	      "stage 2 adds up to the peak: %" PRIu64 " of %" PRIu64, sum(&got),
	      rp.devs[0].lv.peak);

	/* Stage 3: a third peak with every group stale: E, F, G live. */
	ev(&rp, M, 0, 0x7000, 8 * MiB, 7); /* 13: G: 13 MiB + 1 */
	got = rows_of(&ps, 0);
	/* F: MiB + 1 rounds up to 2 MiB: MiB - 1 */
	const struct row s3[] = {{4, 4 * MiB, 1, 1, 0, GMT_API_cuMemAlloc_v2},
				 {6, MiB + 1, 1, 1, MiB - 1, M},
				 {7, 8 * MiB, 1, 1, 0, M}};
	expect_rows("stage 3", &got, s3, 3);
	CHECK(sum(&got) == 13 * MiB + 1 && rp.devs[0].lv.peak == 13 * MiB + 1,
	      "stage 3 adds up to the peak");

	peakset_free(&ps);
	replay_free(&rp);
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
