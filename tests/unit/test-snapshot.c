/* analysis/snapshot.c: the device memory live at the moment all devices
 * together peaked, and at the end, from a trace written by the test-only
 * trace builder, by replaying an open trace and in one read of the file; the kinds device memory is
 * split into; --at parsing. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/snapshot.h"
#include "check.h"
#include "trace-file.h"

struct seen {
	uint64_t key[8], size[8];
	int kind[8];
	int64_t dev[8];
	size_t n;
};

static void collect(void *ctx, const struct rp_live *l)
{
	struct seen *s = ctx;
	if (s->n < 8) {
		s->key[s->n] = l->key;
		s->size[s->n] = l->size;
		s->kind[s->n] = dev_kind_of(l);
		s->dev[s->n] = l->device;
	}
	s->n++;
}

/* (key, size, kind, device) of the i-th allocation seen. */
static void expect_one(const char *what, const struct seen *s, size_t i, uint64_t key,
		       uint64_t size, int kind, int64_t dev)
{
	CHECK(i < s->n && s->key[i] == key && s->size[i] == size && s->kind[i] == kind &&
		  s->dev[i] == dev,
	      "%s %zu: 0x%" PRIx64 " %" PRIu64 " bytes kind %d dev %" PRId64 ", want 0x%" PRIx64
	      " %" PRIu64 " kind %d dev %" PRId64,
	      what, i, s->key[i], s->size[i], s->kind[i], s->dev[i], key, size, kind, dev);
}

int main(void)
{
	struct tb *b = tb_new(NULL);
	tb_events_begin(b, 1, 1000);
	/* all devices together: 100, 300, 700 (the peak, t=3000), then less */
	TB_EVENT(b, .time_ns = 1000, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 100);
	TB_EVENT(b, .time_ns = 2000, .api = GMT_API_cudaMallocAsync, .ptr = 0x2000, .size = 200);
	TB_EVENT(b, .time_ns = 3000, .api = GMT_API_cuMemCreate, .ptr = 0x77, .size = 400,
		 .aux = 1); /* on the device */
	TB_EVENT(b, .time_ns = 3500, .api = GMT_API_cudaMallocManaged, .ptr = 0x8000,
		 .size = 999); /* not device memory */
	TB_EVENT(b, .time_ns = 4000, .api = GMT_API_cudaFree, .ptr = 0x1000); /* 600 */
	TB_EVENT(b, .time_ns = 5000, .api = GMT_API_cudaMalloc, .device = 1, .ptr = 0x3000,
		 .size = 50);						      /* 650 */
	TB_EVENT(b, .time_ns = 6000, .api = GMT_API_cudaFree, .ptr = 0x2000); /* 450 */
	TB_EVENT(b, .time_ns = 6500, .api = GMT_API_cudaMalloc,
		 .ptr = 0x4000); /* 0 bytes: left out */
	tb_events_end(b);
	tb_trailer(b, 9000, 8, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "snap.gmt");

	struct trace t;
	CHECK(trace_open(&t, "snapshot", path) == -1, "trace_open");
	struct seen s = {.n = 0};
	uint64_t when = 0;
	CHECK(snapshot_live(&t, false, collect, &s, &when) == -1, "snapshot at the peak");
	CHECK(when == 3000, "peak at %" PRIu64 ", want 3000", when);
	CHECK(s.n == 3, "%zu live at the peak, want 3", s.n);
	expect_one("peak", &s, 0, 0x1000, 100, DK_DEVICE, 0);
	expect_one("peak", &s, 1, 0x2000, 200, DK_ASYNC, 0);
	expect_one("peak", &s, 2, 0x77, 400, DK_VMM, 0);

	memset(&s, 0, sizeof(s));
	CHECK(snapshot_live(&t, true, collect, &s, &when) == -1, "snapshot at the end");
	CHECK(when == 9000, "end at %" PRIu64 ", want 9000 (the trailer's)", when);
	CHECK(s.n == 2, "%zu live at the end, want 2", s.n);
	/* the address space's list first, then the VMM handles' */
	expect_one("end", &s, 0, 0x3000, 50, DK_DEVICE, 1);
	expect_one("end", &s, 1, 0x77, 400, DK_VMM, 0);
	CHECK(trace_finish(&t) == 0, "trace_finish");
	trace_close(&t);

	/* The same in one read of the file (snapshot_live_read: flamegraph):
	 * what was live at the end first, then what was freed after the peak,
	 * summed per (device, stack, api) with no address. */
	memset(&s, 0, sizeof(s));
	CHECK(snapshot_live_read(&t, "snapshot", path, false, collect, &s, &when) == -1,
	      "one read at the peak");
	CHECK(when == 3000, "one read: peak at %" PRIu64 ", want 3000", when);
	CHECK(s.n == 3, "one read: %zu live at the peak, want 3", s.n);
	expect_one("one read, peak", &s, 0, 0x77, 400, DK_VMM, 0);
	expect_one("one read, peak", &s, 1, 0, 100, DK_DEVICE, 0);
	expect_one("one read, peak", &s, 2, 0, 200, DK_ASYNC, 0);
	trace_close(&t);
	memset(&s, 0, sizeof(s));
	CHECK(snapshot_live_read(&t, "snapshot", path, true, collect, &s, &when) == -1,
	      "one read at the end");
	CHECK(when == 9000 && s.n == 2, "one read, end: %" PRIu64 ", %zu", when, s.n);
	expect_one("one read, end", &s, 0, 0x3000, 50, DK_DEVICE, 1);
	expect_one("one read, end", &s, 1, 0x77, 400, DK_VMM, 0);
	trace_close(&t);

	/* kinds */
	struct rp_live l = {.bucket = BK_MANAGED, .api = GMT_API_cudaMallocManaged};
	CHECK(dev_kind_of(&l) == -1, "managed memory is no device kind");
	l = (struct rp_live){.bucket = BK_DEVICE, .api = 39};
	CHECK(dev_kind_of(&l) == DK_DEVICE, "an unknown id counts as plain device memory");
	CHECK(strcmp(dev_kind_key[DK_ASYNC], "stream_ordered") == 0, "key of DK_ASYNC");

	tb_free(b);
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
