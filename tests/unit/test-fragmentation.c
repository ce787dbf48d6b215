/* analysis/fragmentation.c, the fragmentation report's figures, on a trace
 * written by the test-only trace builder: the size histogram, requested
 * against rounded bytes (512 B grains, 2 MiB pages above 1 MiB; a pitched
 * allocation counts its pitch * height), the address span at the peak and
 * at the end, the samples over time, VMM reserved/mapped/physical, stream-
 * ordered allocations, and --device. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/fragmentation.h"
#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)

static void add(struct tb *b, uint64_t t, uint32_t api, int64_t dev, uint64_t ptr, uint64_t size,
		uint64_t aux, uint64_t result)
{
	struct tb_event e = {.time_ns = t,
			     .api = api,
			     .result = result,
			     .device = dev,
			     .ptr = ptr,
			     .size = size,
			     .aux = aux};
	tb_event(b, &e);
}

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 64 * MiB, 9, 0, 12040);
	tb_events_begin(b, 1, 1000);
	/* device 0, addresses: [1 MiB, +1000) [2 MiB, 5 MiB) [8 MiB, +1024) */
	add(b, 1000, GMT_API_cudaMalloc, 0, 0x100000, 1000, 0, 0);
	add(b, 2000, GMT_API_cudaMalloc, 0, 0x200000, 3 * MiB, 0, 0);
	add(b, 3000, GMT_API_cudaMallocPitch, 0, 0x800000, 1024, 512, 0); /* pitch 512 * 2 rows */
	add(b, 3500, GMT_API_cudaMalloc, 0, 0, 999999, 0, 2);		  /* failed: not counted */
	add(b, 4000, GMT_API_cudaFree, 0, 0x200000, 0, 0, 0);
	/* VMM: 8 MiB reserved, 2 MiB of device memory created, mapped, unmapped, released */
	add(b, 5000, GMT_API_cuMemAddressReserve, 0, 0x7f0000000000, 8 * MiB, 0, 0);
	add(b, 6000, GMT_API_cuMemCreate, 0, 0x77, 2 * MiB, 1, 0);
	add(b, 7000, GMT_API_cuMemMap, 0, 0x7f0000000000, 2 * MiB, 0x77, 0);
	add(b, 8000, GMT_API_cuMemUnmap, 0, 0x7f0000000000, 2 * MiB, 0, 0);
	add(b, 8500, GMT_API_cudaMallocAsync, 1, 0x5000, 4096, 0, 0);
	add(b, 9000, GMT_API_cuMemRelease, 0, 0x77, 0, 0, 0);
	tb_events_end(b);
	tb_trailer(b, 9500, 11, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "frag.gmt");
	tb_free(b);
	return path;
}

static void expect_snap(const char *what, const struct frag_snap *s, uint64_t time, uint64_t live,
			uint64_t count, uint64_t span, uint64_t free_in_span, uint64_t largest,
			uint64_t gaps, uint64_t live_rounded)
{
	CHECK(s->taken && s->time_ns == time && s->live == live && s->count == count &&
		  s->span == span && s->free_in_span == free_in_span && s->largest_gap == largest &&
		  s->gaps == gaps && s->live_rounded == live_rounded,
	      "%s: t %" PRIu64 " live %" PRIu64 " in %" PRIu64 ", span %" PRIu64 ", free %" PRIu64
	      ", largest %" PRIu64 " of %" PRIu64 " gaps, rounded %" PRIu64,
	      what, s->time_ns, s->live, s->count, s->span, s->free_in_span, s->largest_gap,
	      s->gaps, s->live_rounded);
}

static void device0(const struct frag_dev *d)
{
	/* 1000 and 1024 are in [512, 1024) and [1024, 2048); 3 MiB and the
	 * 2 MiB cuMemCreate (device location) in [2 MiB, 4 MiB). */
	CHECK(d->ordinal == 0 && d->allocs == 4, "device %" PRId64 ": %" PRIu64 " allocations",
	      d->ordinal, d->allocs);
	CHECK(d->hist_count[9] == 1 && d->hist_bytes[9] == 1000, "[512, 1K)");
	CHECK(d->hist_count[10] == 1 && d->hist_bytes[10] == 1024, "[1K, 2K)");
	CHECK(d->hist_count[21] == 2 && d->hist_bytes[21] == 5 * MiB, "[2M, 4M)");
	/* requested 1000 + 3 MiB + 1024 + 2 MiB = 5244904; rounded 1024 (512 B
	 * grains) + 4 MiB (2 MiB pages) + 1024 + 2 MiB = 6293504: 1048600 wasted */
	CHECK(d->requested == 5244904 && d->rounded == 6293504,
	      "requested %" PRIu64 ", rounded %" PRIu64, d->requested, d->rounded);
	/* the peak, after t3000: 1000 + 3145728 + 1024 = 3147752 live over
	 * [0x100000, 0x800400): span 7341056; gaps [0x1003e8, 0x200000) =
	 * 1047576 and [0x500000, 0x800000) = 3145728: 4193304 free */
	CHECK(d->peak == 3147752, "peak %" PRIu64, d->peak);
	expect_snap("at the peak", &d->at_peak, 3000, 3147752, 3, 7341056, 4193304, 3145728, 2,
		    1024 + 4 * MiB + 1024);
	/* the end (the last event, t9000): 1000 + 1024 over the same span, one
	 * gap of 7341056 - 2024;
	 * the cuMemCreate handle has no address: not in the span */
	expect_snap("at the end", &d->at_end, 9000, 2024, 2, 7341056, 7339032, 7339032, 1, 2048);
	/* samples: each event whose (t - 1000) * 20 / 8001 rises: all 11 */
	CHECK(d->nsamples == 11, "%d samples", d->nsamples);
	expect_snap("sample 0", &d->samples[0], 1000, 1000, 1, 1000, 0, 0, 0, 1024);
	expect_snap("sample 3 (the failure)", &d->samples[3], 3500, 3147752, 3, 7341056, 4193304,
		    3145728, 2, 1024 + 4 * MiB + 1024);
}

int main(void)
{
	CHECK(frag_rounded(0) == 0 && frag_rounded(1) == 512 && frag_rounded(512) == 512 &&
		  frag_rounded(513) == 1024 && frag_rounded(MiB) == MiB &&
		  frag_rounded(MiB + 1) == 2 * MiB && frag_rounded(3 * MiB) == 4 * MiB,
	      "frag_rounded");
	const char *path = write_trace();
	struct trace t;
	CHECK(trace_open(&t, "fragmentation", path) == -1, "trace_open");
	struct frag_result r;
	CHECK(frag_compute(&t, false, 0, &r) == -1, "frag_compute");
	CHECK(r.ndevs == 2, "%zu devices", r.ndevs);
	device0(&r.devs[0]);
	const struct frag_dev *d1 = &r.devs[1];
	CHECK(d1->ordinal == 1 && d1->allocs == 1 && d1->requested == 4096 && d1->rounded == 4096 &&
		  d1->peak == 4096,
	      "device 1");
	expect_snap("device 1 at the peak", &d1->at_peak, 8500, 4096, 1, 4096, 0, 0, 0, 4096);
	/* VMM peaks: 8 MiB reserved, 2 MiB mapped, 2 MiB created; at the end
	 * the reservation stays, the rest is unmapped and released */
	const struct frag_vmm *v = &r.vmm;
	CHECK(v->used && v->reserved_peak == 8 * MiB && v->mapped_peak == 2 * MiB &&
		  v->physical_peak == 2 * MiB && v->reserved == 8 * MiB && v->mapped == 0 &&
		  v->physical == 0,
	      "vmm: reserved %" PRIu64 "/%" PRIu64 ", mapped %" PRIu64 "/%" PRIu64
	      ", physical %" PRIu64 "/%" PRIu64,
	      v->reserved_peak, v->reserved, v->mapped_peak, v->mapped, v->physical_peak,
	      v->physical);
	CHECK(r.async_peak == 4096 && r.async_live == 4096 && r.pools_created == 0 &&
		  r.pool_trims == 0,
	      "stream-ordered: peak %" PRIu64 ", end %" PRIu64, r.async_peak, r.async_live);
	/* totals: 3147752 + 4096 live at the peaks, 4193304 free in the span,
	 * waste 1048600 + 0; worst 4193304 / 7341056 */
	struct frag_total tot = {0};
	frag_totals(&r, &tot);
	CHECK(tot.peak_live == 3151848 && tot.peak_free == 4193304 && tot.waste == 1048600 &&
		  tot.worst == 4193304.0 / 7341056.0,
	      "totals: %" PRIu64 " %" PRIu64 " %" PRIu64 " %g", tot.peak_live, tot.peak_free,
	      tot.waste, tot.worst);
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
