/* analysis/fragmentation.c, the fragmentation report's figures, on a trace
 * written by the test-only trace builder: the size histogram; requested
 * against granted (pitch padding, the estimated driver pages, cuMemCreate
 * handles, stream-ordered requests); the segment inventory (count, bytes,
 * size classes, oldest and median age) at the peak, at the end and at the
 * first OOM, with the failing thread's frees after it; VMM reserved/mapped/
 * physical; stream-ordered allocations; the totals; --device. No figure
 * comes from addresses: the allocations below sit far apart on purpose. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/fragmentation.h"
#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 64 * MiB, 9, 0, 12040);
	tb_events_begin(b, 1, 1000);
	TB_EVENT(b, .time_ns = 1000, .api = GMT_API_cudaMalloc, .ptr = 0x100000, .size = 1000);
	TB_EVENT(b, .time_ns = 2000, .api = GMT_API_cudaMalloc, .ptr = 0x200000000,
		 .size = 3 * MiB);
	/* pitch 1024, width 1000, 2 rows */
	TB_EVENT(b, .time_ns = 3000, .api = GMT_API_cudaMallocPitch, .ptr = 0x7000000000,
		 .size = 2048, .aux = 1024, .aux2 = 1000);
	TB_EVENT(b, .time_ns = 3100, .api = GMT_API_cudaMalloc, .ptr = 0x7100000000,
		 .size = 2 * MiB);
	TB_EVENT(b, .time_ns = 3200, .api = GMT_API_cudaMalloc, .ptr = 0x7200000000,
		 .size = 20 * MiB);
	TB_EVENT(b, .time_ns = 3500, .api = GMT_API_cudaMalloc, .size = 999999,
		 .result = 2); /* the first OOM */
	TB_EVENT(b, .time_ns = 3600, .api = GMT_API_cudaMalloc, .size = 999999,
		 .result = 2); /* its retry fails too */
	TB_EVENT(b, .time_ns = 4000, .api = GMT_API_cudaFree,
		 .ptr = 0x200000000); /* freed after it */
	TB_EVENT(b, .time_ns = 4100, .api = GMT_API_cudaMalloc, .ptr = 0x7300000000,
		 .size = 40 * MiB); /* the peak */
	TB_EVENT(b, .time_ns = 4200, .api = GMT_API_cudaFree,
		 .ptr = 0x7300000000); /* not counted */
	/* VMM: 8 MiB reserved, 2 MiB of device memory created, mapped, unmapped, released */
	TB_EVENT(b, .time_ns = 5000, .api = GMT_API_cuMemAddressReserve, .ptr = 0x7f0000000000,
		 .size = 8 * MiB);
	TB_EVENT(b, .time_ns = 6000, .api = GMT_API_cuMemCreate, .ptr = 0x77, .size = 2 * MiB,
		 .aux = 1);
	TB_EVENT(b, .time_ns = 7000, .api = GMT_API_cuMemMap, .ptr = 0x7f0000000000,
		 .size = 2 * MiB, .aux = 0x77);
	TB_EVENT(b, .time_ns = 8000, .api = GMT_API_cuMemUnmap, .ptr = 0x7f0000000000,
		 .size = 2 * MiB);
	TB_EVENT(b, .time_ns = 8500, .api = GMT_API_cudaMallocAsync, .device = 1, .ptr = 0x5000,
		 .size = 4096);
	TB_EVENT(b, .time_ns = 9000, .api = GMT_API_cuMemRelease, .ptr = 0x77);
	tb_events_end(b);
	tb_trailer(b, 9500, 16, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "frag.gmt");
	tb_free(b);
	return path;
}

static void expect_segs(const char *what, const struct frag_segs *s, uint64_t time, uint64_t count,
			uint64_t bytes, uint64_t oldest, uint64_t median,
			const uint64_t classes[FRAG_NCLASSES])
{
	CHECK(s->taken && s->time_ns == time && s->count == count && s->bytes == bytes &&
		  s->oldest_ns == oldest && s->median_age_ns == median,
	      "%s: t %" PRIu64 ", %" PRIu64 " segments, %" PRIu64 " bytes, oldest %" PRIu64
	      ", median %" PRIu64,
	      what, s->time_ns, s->count, s->bytes, s->oldest_ns, s->median_age_ns);
	for (int c = 0; c < FRAG_NCLASSES; c++)
		CHECK(s->class_count[c] == classes[c], "%s: class %s: %" PRIu64, what,
		      frag_class_key[c], s->class_count[c]);
}

static void device0(const struct frag_dev *d)
{
	/* 7 allocations (the two failures are not): 1000 in [512, 1K); 2048 in
	 * [2K, 4K); 3 MiB, 2 MiB and the 2 MiB handle in [2M, 4M); 20 MiB in
	 * [16M, 32M); 40 MiB in [32M, 64M) */
	CHECK(d->ordinal == 0 && d->allocs == 7, "device 0: %" PRIu64 " allocations", d->allocs);
	CHECK(d->hist_count[9] == 1 && d->hist_count[11] == 1 && d->hist_count[21] == 3 &&
		  d->hist_bytes[21] == 7 * MiB && d->hist_count[24] == 1 && d->hist_count[25] == 1,
	      "histogram");
	/* pitched: 1000 wide * 2 rows asked, 1024 * 2 granted: 48 of padding */
	CHECK(d->pitched.count == 1 && d->pitched.requested == 2000 && d->pitched.granted == 2048,
	      "pitched: %" PRIu64 " -> %" PRIu64, d->pitched.requested, d->pitched.granted);
	/* pages: 1000 -> 1024; 3 MiB -> 4 MiB; 2, 20, 40 MiB as they are:
	 * 68158440 asked, 69207040 granted, 1048600 more */
	CHECK(d->pages.count == 5 && d->pages.requested == 68158440 && d->pages.granted == 69207040,
	      "pages: %" PRIu64 " -> %" PRIu64, d->pages.requested, d->pages.granted);
	CHECK(frag_waste(d) == 48 + 1048600, "waste %" PRIu64, frag_waste(d));
	CHECK(d->handles.count == 1 && d->handles.granted == 2 * MiB && d->handles_2m == 1,
	      "handles");
	CHECK(d->async.count == 0, "no stream-ordered allocation on device 0");
	/* the peak, t4100: 1000 + 2048 + 2 + 20 + 40 MiB; ages 3100, 1100,
	 * 1000, 900, 0: oldest 3100, median 1000; the 3 MiB one is gone */
	CHECK(d->peak == 3048 + 62 * MiB, "peak %" PRIu64, d->peak);
	const uint64_t at_peak[] = {1, 1, 1, 2};
	expect_segs("at the peak", &d->at_peak, 4100, 5, 3048 + 62 * MiB, 3100, 1000, at_peak);
	/* the end (the trailer, t9500, the instant every report's "at the end"
	 * names; the last event is at t9000): 1000, 2048, 2 MiB, 20 MiB; ages
	 * 8500, 6500, 6400, 6300: median the second smallest, 6400 */
	const uint64_t at_end[] = {1, 1, 0, 2};
	expect_segs("at the end", &d->at_end, 9500, 4, 3048 + 22 * MiB, 8500, 6400, at_end);
	/* the first OOM, t3500: 1000, 3 MiB, 2048, 2 MiB, 20 MiB; ages 2500,
	 * 1500, 500, 400, 300: median 500. Then thread 1 freed the 3 MiB before
	 * its next device allocation (t4100; the free at t4200 is after it) */
	const uint64_t at_oom[] = {1, 1, 0, 3};
	expect_segs("at the OOM", &d->at_oom, 3500, 5, 3048 + 25 * MiB, 2500, 500, at_oom);
	CHECK(d->oom_frees == 1 && d->oom_freed == 3 * MiB, "freed after the OOM: %" PRIu64,
	      d->oom_freed);
	CHECK(!d->counters.known, "no framework counters");
}

static void pytorch_like(void)
{
	/* 9 of 10 are 2 MiB multiples, 5 exactly 2 MiB: PyTorch's sizes */
	struct frag_segs s = {.count = 10, .class_count = {5, 0, 4, 1}};
	CHECK(frag_pytorch_like(&s), "90%% 2 MiB multiples");
	s.class_count[2] = 3; /* 8 of 10 */
	s.class_count[3] = 2;
	CHECK(!frag_pytorch_like(&s), "80%% is not enough");
	struct frag_segs big = {.count = 3, .class_count = {0, 0, 3, 0}};
	CHECK(!frag_pytorch_like(&big), "no 2 or 20 MiB segment");
	struct frag_segs none = {0};
	CHECK(!frag_pytorch_like(&none), "nothing live");
}

int main(void)
{
	CHECK(frag_rounded(0) == 0 && frag_rounded(1) == 512 && frag_rounded(512) == 512 &&
		  frag_rounded(513) == 1024 && frag_rounded(MiB) == MiB &&
		  frag_rounded(MiB + 1) == 2 * MiB && frag_rounded(3 * MiB) == 4 * MiB,
	      "frag_rounded");
	pytorch_like();
	const char *path = write_trace();
	struct trace t;
	CHECK(trace_open(&t, "fragmentation", path) == -1, "trace_open");
	struct frag_result r;
	CHECK(frag_compute(&t, false, 0, &r) == -1, "frag_compute");
	CHECK(r.ndevs == 2, "%zu devices", r.ndevs);
	device0(&r.devs[0]);
	/* device 1: one stream-ordered 4096, not a segment */
	const struct frag_dev *d1 = &r.devs[1];
	CHECK(d1->ordinal == 1 && d1->allocs == 1 && d1->async.count == 1 &&
		  d1->async.requested == 4096 && d1->peak == 4096 && d1->at_peak.taken &&
		  d1->at_peak.count == 0 && !d1->at_oom.taken,
	      "device 1");
	/* VMM peaks: 8 MiB reserved, 2 MiB mapped, 2 MiB created; at the end
	 * the reservation stays, the rest is unmapped and released */
	const struct frag_vmm *v = &r.vmm;
	CHECK(v->used && v->reserved_peak == 8 * MiB && v->mapped_peak == 2 * MiB &&
		  v->physical_peak == 2 * MiB && v->reserved == 8 * MiB && v->mapped == 0 &&
		  v->physical == 0,
	      "vmm");
	CHECK(r.async_peak == 4096 && r.async_live == 4096 && r.pools_created == 0 &&
		  r.pool_trims == 0,
	      "stream-ordered: peak %" PRIu64 ", end %" PRIu64, r.async_peak, r.async_live);
	/* totals: the peaks 3048 + 62 MiB and 4096; 5 segments at them */
	struct frag_total tot = {0};
	frag_totals(&r, &tot);
	CHECK(tot.peak_live == 3048 + 62 * MiB + 4096 && tot.waste == 1048648 &&
		  tot.segments == 5 && tot.segment_bytes == 3048 + 62 * MiB,
	      "totals: %" PRIu64 " %" PRIu64 " %" PRIu64, tot.peak_live, tot.waste, tot.segments);
	frag_free(&r);

	/* --device 1: device 0 is left out */
	CHECK(frag_compute(&t, true, 1, &r) == -1, "frag_compute, device 1");
	CHECK(r.ndevs == 1 && r.devs[0].ordinal == 1 && r.devs[0].allocs == 1, "device 1 only");
	frag_free(&r);
	/* --device 5: a device with nothing */
	CHECK(frag_compute(&t, true, 5, &r) == -1, "frag_compute, device 5");
	CHECK(r.ndevs == 1 && r.devs[0].allocs == 0 && !r.devs[0].at_end.count &&
		  r.devs[0].at_end.taken,
	      "device 5: nothing");
	frag_free(&r);
	CHECK(trace_finish(&t) == 0, "trace_finish");
	trace_close(&t);
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
