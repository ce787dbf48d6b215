/* model/torchalloc.c: PyTorch's caching allocator rules. Every expected
 * number is worked out from the rules (frameworks.md section 1,
 * CUDACachingAllocator.cpp), as the comments show, never from a run. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/torchalloc.h"

#define MiB (1ull << 20)

/* A device of `cap` bytes: addresses from 1 TiB up, never reused, so a
 * pointer names the segment it came from. */
struct dev {
	uint64_t cap, used, next, mapped;
	char log[4096];
	size_t loglen;
};

static int d_malloc(void *ctx, uint64_t size, uint64_t *ptr)
{
	struct dev *d = ctx;
	if (d->used + size > d->cap)
		return -1;
	d->used += size;
	*ptr = d->next;
	d->next += size + (1ull << 30);
	return 0;
}

static void d_free(void *ctx, uint64_t ptr, uint64_t size)
{
	struct dev *d = ctx;
	(void)ptr;
	d->used -= size;
}

static int d_reserve(void *ctx, uint64_t size, uint64_t *va)
{
	struct dev *d = ctx;
	*va = d->next;
	d->next += size + (1ull << 30);
	return 0;
}

static int d_map(void *ctx, uint64_t va, uint64_t page, uint64_t n)
{
	struct dev *d = ctx;
	(void)va;
	if (d->used + n * page > d->cap)
		return -1;
	d->used += n * page;
	d->mapped += n * page;
	return 0;
}

static void d_unmap(void *ctx, uint64_t va, uint64_t page, uint64_t n)
{
	struct dev *d = ctx;
	(void)va;
	d->used -= n * page;
	d->mapped -= n * page;
}

static uint64_t d_free_bytes(void *ctx)
{
	struct dev *d = ctx;
	return d->cap - d->used;
}

static const char *const names[] = {"",
				    "alloc",
				    "free_requested",
				    "free_completed",
				    "segment_alloc",
				    "segment_free",
				    "segment_map",
				    "segment_unmap",
				    "oom"};

static void d_trace(void *ctx, enum ta_action act, uint64_t addr, uint64_t size, uint64_t stream)
{
	struct dev *d = ctx;
	(void)addr;
	(void)stream;
	if (d->loglen < sizeof d->log - 64)
		d->loglen +=
		    (size_t)snprintf(d->log + d->loglen, sizeof d->log - d->loglen, "%s%s %llu",
				     d->loglen ? ", " : "", names[act], (unsigned long long)size);
}

static struct ta *model(struct dev *d, const char *conf, uint64_t cap)
{
	struct ta_config c;
	char err[128];
	memset(d, 0, sizeof *d);
	d->cap = cap;
	d->next = 1ull << 40;
	ta_config_default(&c);
	c.device_total = cap;
	if (conf && ta_config_parse(&c, conf, err, sizeof err))
		printf("conf: %s\n", err);
	struct ta_backend b = {d,	d_malloc, d_free,	d_reserve, d_map,
			       d_unmap, NULL,	  d_free_bytes, d_trace};
	return ta_new(&c, &b);
}

/* round_size and get_allocation_size (frameworks.md 1.2 table). */
static void test_sizes(void)
{
	struct ta_config c;
	ta_config_default(&c);
	CHECK(ta_round_size(&c, 4) == 512, "4 B rounds to 512");
	CHECK(ta_round_size(&c, 1048577) == 1049088, "1 MiB + 1 to 1,049,088");
	CHECK(ta_round_size(&c, 11000000) == 11000320, "11,000,000 to 11,000,320");
	CHECK(ta_allocation_size(&c, 512) == 2 * MiB, "small: a 2 MiB segment");
	CHECK(ta_allocation_size(&c, 1049088) == 20 * MiB, "1-10 MiB: 20 MiB");
	CHECK(ta_allocation_size(&c, 10485760) == 10485760, "10 MiB: itself");
	CHECK(ta_allocation_size(&c, 11000320) == 12582912, "11,000,320: 12 MiB");
	/* roundup_power2_divisions:4 on 1,258,291 (1.2 MiB): between 1 MiB and
	 * 2 MiB in steps of 256 KiB, so 1,310,720 (1.25 MiB) */
	char err[128];
	CHECK(!ta_config_parse(&c, "roundup_power2_divisions:4", err, sizeof err), "%s", err);
	CHECK(ta_round_size(&c, 1258291) == 1310720, "divisions: %llu",
	      (unsigned long long)ta_round_size(&c, 1258291));
	/* 1,200 B: not above 512 * 4, so plain 512 rounding: 1,536 */
	CHECK(ta_round_size(&c, 1200) == 1536, "small sizes keep 512 rounding");
	/* [1:2,>:8]: the 1 MiB interval halves, the rest eighths.
	 * 1.2 MiB with 2 (1 MiB, 1.5 MiB): 1.5 MiB; 33 MiB (32-64 MiB, 4 MiB
	 * steps) with 8: 36 MiB */
	ta_config_default(&c);
	CHECK(!ta_config_parse(&c, "roundup_power2_divisions:[1:2,>:8]", err, sizeof err), "%s",
	      err);
	CHECK(ta_round_size(&c, 1258291) == 3 * MiB / 2, "[1:2]: %llu",
	      (unsigned long long)ta_round_size(&c, 1258291));
	CHECK(ta_round_size(&c, 33 * MiB) == 36 * MiB, "[>:8]: %llu",
	      (unsigned long long)ta_round_size(&c, 33 * MiB));
	ta_config_default(&c);
	CHECK(ta_config_parse(&c, "max_split_size_mb:10", err, sizeof err) == -1,
	      "max_split_size_mb of 20 or less is refused");
	CHECK(ta_config_parse(&c, "expandable_segments:maybe", err, sizeof err) == -1,
	      "expandable_segments wants True or False");
	CHECK(!ta_config_parse(&c, "backend:native,max_split_size_mb:200", err, sizeof err) &&
		  c.max_split_size == 200 * MiB,
	      "other keys are passed over");
}

/* Splits: frameworks.md 1.2's worked examples, one fresh model each. */
static void test_split(void)
{
	static const struct {
		uint64_t request, segment, remainder; /* remainder 0: not split */
	} ex[] =
	    {
		{4, 2097152, 2096640},	 {1048577, 20971520, 19922432},
		{10485760, 10485760, 0}, {11000000, 12582912, 1582592},
		{12000000, 12582912, 0}, /* 582,656 left: not over 1 MiB, stays in the block */
	    };
	for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
		struct dev d;
		struct ta *a = model(&d, NULL, 1ull << 34);
		uint64_t p;
		CHECK(!ta_malloc(a, ex[i].request, 0, &p), "malloc %llu",
		      (unsigned long long)ex[i].request);
		const struct ta_stats *s = ta_stats(a);
		CHECK(s->reserved == ex[i].segment, "request %llu: segment %llu",
		      (unsigned long long)ex[i].request, (unsigned long long)s->reserved);
		CHECK(s->allocated == ex[i].segment - ex[i].remainder, "request %llu: block %llu",
		      (unsigned long long)ex[i].request, (unsigned long long)s->allocated);
		CHECK(ta_largest_free(a) == ex[i].remainder, "request %llu: free %llu",
		      (unsigned long long)ex[i].request, (unsigned long long)ta_largest_free(a));
		ta_free_model(a);
	}
}

/* The history's entries, in PyTorch's order (record_trace calls). */
static void test_trace_order(void)
{
	struct dev d;
	struct ta *a = model(&d, NULL, 1ull << 34);
	uint64_t p, q;
	ta_malloc(a, 1000, 0, &p);
	ta_malloc(a, 1000, 0, &q);
	ta_free(a, p);
	CHECK(!strcmp(d.log, "segment_alloc 2097152, alloc 1000, alloc 1000, free_requested 1000, "
			     "free_completed 1000"),
	      "trace: %s", d.log);
	/* the freed block is the best fit again (512 B, the smallest free) */
	uint64_t r;
	ta_malloc(a, 500, 0, &r);
	CHECK(r == p, "a freed block is reused");
	CHECK(q == p + 1024, "the second block follows the first (1,000 rounds to 1,024)");
	ta_free_model(a);
}

/* Blocks are reused only on their own stream; best fit by size. */
static void test_streams_best_fit(void)
{
	struct dev d;
	struct ta *a = model(&d, NULL, 1ull << 34);
	uint64_t big, mid, keep, x;
	ta_malloc(a, 40 * MiB, 1, &big); /* segment 40 MiB */
	ta_malloc(a, 30 * MiB, 1, &mid); /* segment 30 MiB */
	ta_malloc(a, 30 * MiB, 2, &keep);
	ta_free(a, big);
	ta_free(a, mid);
	ta_malloc(a, 25 * MiB, 1, &x);
	CHECK(x == mid, "25 MiB takes the 30 MiB block, the best fit");
	uint64_t before = ta_stats(a)->reserved;
	ta_free(a, keep);
	ta_malloc(a, 25 * MiB, 2, &x);
	CHECK(x == keep && ta_stats(a)->reserved == before, "stream 2 reuses its own block");
	ta_malloc(a, 35 * MiB, 2, &x);
	CHECK(ta_stats(a)->reserved == before + 36 * MiB,
	      "stream 2 does not take stream 1's free 40 MiB: a new 36 MiB segment (%llu)",
	      (unsigned long long)ta_stats(a)->reserved);
	ta_free_model(a);
}

/* max_split_size_mb:100: an oversize block (>= 100 MiB) serves only a
 * request >= 100 MiB that is within 20 MiB of it, and is never split. */
static void test_max_split(void)
{
	struct dev d;
	struct ta *a = model(&d, "max_split_size_mb:100", 1ull << 34);
	uint64_t big, x, y;
	ta_malloc(a, 200 * MiB, 0, &big);
	ta_free(a, big);
	ta_malloc(a, 50 * MiB, 0, &x);
	CHECK(x != big, "a 50 MiB request does not take the 200 MiB block");
	ta_malloc(a, 190 * MiB, 0, &y);
	CHECK(y == big, "190 MiB takes it (within 20 MiB)");
	CHECK(ta_stats(a)->allocated == 50 * MiB + 200 * MiB, "not split: %llu",
	      (unsigned long long)ta_stats(a)->allocated);
	ta_free(a, y);
	ta_malloc(a, 150 * MiB, 0, &y);
	CHECK(y != big, "150 MiB does not (50 MiB over)");
	ta_free_model(a);
}

/* The OOM path: cudaMalloc fails, unsplit cached segments go back, the
 * retry succeeds; then a request that cannot fit is an OOM entry. */
static void test_oom_path(void)
{
	struct dev d;
	struct ta *a = model(&d, NULL, 100 * MiB);
	uint64_t p, q, r;
	ta_malloc(a, 60 * MiB, 0, &p);
	ta_free(a, p); /* 60 MiB cached */
	d.loglen = 0;
	d.log[0] = 0;
	CHECK(!ta_malloc(a, 70 * MiB, 0, &q), "70 MiB fits once the cache is freed");
	CHECK(!strcmp(d.log, "segment_free 62914560, segment_alloc 73400320, alloc 73400320"),
	      "trace: %s", d.log);
	CHECK(ta_stats(a)->num_alloc_retries == 1, "one retry");
	d.loglen = 0;
	d.log[0] = 0;
	CHECK(ta_malloc(a, 40 * MiB, 0, &r) == -1, "40 MiB more does not fit in 100 MiB");
	/* the OOM entry: free bytes (100 - 70 MiB), the rounded request */
	CHECK(!strcmp(d.log, "oom 41943040"), "trace: %s", d.log);
	CHECK(ta_stats(a)->num_ooms == 1 && ta_stats(a)->num_alloc_retries == 2, "counters");
	ta_free_model(a);
}

/* A memory fraction refuses without a driver call. */
static void test_fraction(void)
{
	struct dev d;
	struct ta *a = model(&d, NULL, 1ull << 34);
	uint64_t p;
	ta_set_allowed(a, 50 * MiB);
	CHECK(ta_malloc(a, 60 * MiB, 0, &p) == -1 && d.used == 0,
	      "over the fraction: OOM, no cudaMalloc");
	ta_free_model(a);
}

/* Expandable segments: 20 MiB pages for the large pool, the segment grows
 * by the pages a request needs, and freed pages merge back. */
static void test_expandable(void)
{
	struct dev d;
	struct ta *a = model(&d, "expandable_segments:True", 8ull << 30);
	uint64_t p, q;
	ta_malloc(a, 30 * MiB, 0, &p); /* 2 pages mapped */
	CHECK(d.mapped == 40 * MiB, "30 MiB maps 2 pages: %llu", (unsigned long long)d.mapped);
	ta_malloc(a, 5 * MiB, 0, &q); /* fits in the 10 MiB left */
	CHECK(d.mapped == 40 * MiB && q == p + 30 * MiB, "5 MiB fits after it");
	uint64_t r;
	ta_malloc(a, 20 * MiB, 0, &r); /* 5 MiB free at the end + 1 page */
	CHECK(d.mapped == 60 * MiB && r == q + 5 * MiB, "grows by one page at the end: %llu",
	      (unsigned long long)d.mapped);
	CHECK(ta_stats(a)->mapped_ranges == 1 && ta_stats(a)->segments == 0,
	      "one mapped range, no cudaMalloc segment");
	ta_free(a, q); /* [30, 35) free: its page [20, 40) is partly p's, kept */
	ta_free(a, r); /* [35, 60) free with q's: page [40, 60) unmappable */
	ta_empty_cache(a);
	CHECK(d.mapped == 40 * MiB && ta_stats(a)->mapped_ranges == 1, "the tail page unmapped");
	uint64_t s2;
	ta_malloc(a, 5 * MiB, 0, &s2); /* best fit [30, 35) */
	ta_malloc(a, 20 * MiB, 0, &r); /* [35, 40) free + [40, 60) mapped again */
	CHECK(r == s2 + 5 * MiB && d.mapped == 60 * MiB, "r after s2, one page mapped");
	ta_free(a, s2);
	ta_free(a, p);
	ta_empty_cache(a); /* [0, 35) free: page [0, 20) goes; [20, 40) holds r's start */
	CHECK(d.mapped == 40 * MiB && ta_stats(a)->mapped_ranges == 1, "the head unmapped: %llu",
	      (unsigned long long)d.mapped);
	ta_free(a, r);
	ta_empty_cache(a);
	CHECK(d.mapped == 0 && ta_stats(a)->reserved == 0 && ta_stats(a)->mapped_ranges == 0,
	      "empty_cache unmaps every free page");
	/* a page freed between two: two ranges, joined again when remapped */
	uint64_t x[3];
	for (int i = 0; i < 3; i++)
		ta_malloc(a, 20 * MiB, 0, &x[i]);
	ta_free(a, x[1]);
	ta_empty_cache(a);
	CHECK(d.mapped == 40 * MiB && ta_stats(a)->mapped_ranges == 2, "a hole: two ranges (%llu)",
	      (unsigned long long)ta_stats(a)->mapped_ranges);
	ta_malloc(a, 20 * MiB, 0, &x[1]);
	CHECK(ta_stats(a)->mapped_ranges == 1, "the hole mapped: one range");
	ta_free_model(a);
}

/* garbage_collection_threshold:0.5 with a 100 MiB fraction: before a new
 * segment, cached unsplit large blocks go until reserved is under 50 MiB. */
static void test_gc(void)
{
	struct dev d;
	struct ta *a = model(&d, "garbage_collection_threshold:0.5", 1ull << 34);
	ta_set_allowed(a, 100 * MiB);
	uint64_t p, q, r;
	ta_malloc(a, 30 * MiB, 0, &p);
	ta_malloc(a, 30 * MiB, 0, &q);
	ta_free(a, p);
	ta_free(a, q);
	CHECK(ta_stats(a)->reserved == 60 * MiB, "60 MiB cached");
	ta_malloc(a, 40 * MiB, 0, &r); /* no fit: gc frees both (60 > 50), then 40 */
	CHECK(ta_stats(a)->reserved == 40 * MiB, "gc gave the cache back: %llu",
	      (unsigned long long)ta_stats(a)->reserved);
	ta_free_model(a);
}

/* Following a history: choose, take, segments the history made. */
static void test_follow(void)
{
	struct ta_config c;
	ta_config_default(&c);
	struct ta *a = ta_new(&c, NULL);
	uint64_t ptr, seg;
	bool fresh;
	ta_choose(a, 1000, 0, &ptr, &fresh, &seg);
	CHECK(fresh && seg == 2 * MiB, "nothing cached: a new 2 MiB segment");
	CHECK(!ta_add_segment(a, 0x1000000, 2 * MiB, 0, true), "segment");
	CHECK(!ta_take(a, 0x1000000, 1000, 0), "take");
	ta_choose(a, 1000, 0, &ptr, &fresh, &seg);
	CHECK(!fresh && ptr == 0x1000000 + 1024, "the remainder, after the first block");
	CHECK(ta_take(a, 0x1000000, 1000, 0) == -1, "an allocated block cannot be taken");
	CHECK(ta_release_segment(a, 0x1000000) == -1, "a segment in use is not released");
	CHECK(!ta_free(a, 0x1000000), "free");
	CHECK(!ta_release_segment(a, 0x1000000) && ta_stats(a)->reserved == 0,
	      "freed, it merged whole again: released");
	/* a block live before the history: carved out of a fresh segment */
	CHECK(!ta_add_segment(a, 0x9000000, 20 * MiB, 0, false), "segment 2");
	CHECK(!ta_assume_live(a, 0x9000000 + 4 * MiB, 2 * MiB, 2 * MiB - 100), "live before");
	CHECK(ta_stats(a)->allocated == 2 * MiB, "allocated %llu",
	      (unsigned long long)ta_stats(a)->allocated);
	ta_choose(a, 3 * MiB, 0, &ptr, &fresh, &seg);
	CHECK(!fresh && ptr == 0x9000000, "3 MiB: the 4 MiB free before it (best fit)");
	ta_free_model(a);

	/* expandable mappings of a history on a device of unknown size: a
	 * reservation (90 GiB by default) ends where the history's next one
	 * begins */
	ta_config_parse(&c, "expandable_segments:True", NULL, 0);
	a = ta_new(&c, NULL);
	const uint64_t base = 1ull << 44;
	CHECK(!ta_map(a, base, 2 * MiB, 0, true), "the small pool's first page");
	CHECK(!ta_map(a, base + (16ull << 30), 40 * MiB, 0, false), "the large pool's, 16 GiB on");
	CHECK(!ta_map(a, base + (16ull << 30) + 40 * MiB, 20 * MiB, 0, false), "and its next page");
	CHECK(!ta_add_segment(a, base + (8ull << 30), 2 * MiB, 0, true), "a cudaMalloc between");
	CHECK(ta_stats(a)->mapped_ranges == 2 && ta_stats(a)->segments == 1,
	      "two mapped ranges and a segment: %llu",
	      (unsigned long long)ta_stats(a)->mapped_ranges);
	CHECK(!ta_take(a, base + (16ull << 30), 50 * MiB, 0), "a block across both pages");
	ta_free_model(a);
}

int main(void)
{
	test_sizes();
	test_split();
	test_trace_order();
	test_streams_best_fit();
	test_max_split();
	test_oom_path();
	test_fraction();
	test_expandable();
	test_gc();
	test_follow();
	return failures ? 1 : 0;
}
