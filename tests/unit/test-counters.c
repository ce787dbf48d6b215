/* analysis/counters.c, a framework's own counters as one model, and the
 * fragmentation report's cache_free that reads them, on a trace written by
 * the test-only trace builder: PyTorch on device 0 (three readings written
 * out of time order, one by the OOM observer), JAX on device 1, TF on
 * device 0 too, and a source no build knows. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/counters.h"
#include "analysis/fragmentation.h"
#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)

static void torch(struct tb *b, uint64_t t, uint64_t why, uint64_t alloc, uint64_t reserved,
		  uint64_t split, uint64_t retries, uint64_t ooms)
{
	static const char *const names[] = {"allocated_bytes.all.current",
					    "reserved_bytes.all.current",
					    "inactive_split_bytes.all.current",
					    "allocated_bytes.all.peak",
					    "num_alloc_retries",
					    "num_ooms",
					    "segment.all.current"};
	const uint64_t values[] = {alloc, reserved, split, alloc, retries, ooms, 3};
	tb_counters(b, 7, t, why, "torch", "cuda:0", 0, 7, names, values);
}

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 1024 * MiB, 9, 0, 12040);
	tb_events_begin(b, 7, 1000);
	struct tb_event e1 = {
	    .time_ns = 1000, .api = GMT_API_cudaMalloc, .ptr = 0x100000, .size = 60 * MiB};
	struct tb_event e2 = {.time_ns = 5000,
			      .api = GMT_API_cudaMalloc,
			      .ptr = 0x9000000,
			      .size = 20 * MiB}; /* the device's peak: 80 MiB at 5000 */
	tb_event(b, &e1);
	tb_event(b, &e2);
	tb_events_end(b);
	torch(b, 6000, GMT_COUNTERS_WHY_PERIODIC, 50 * MiB, 80 * MiB, 10 * MiB, 0, 0);
	torch(b, 2000, GMT_COUNTERS_WHY_START, 40 * MiB, 60 * MiB, 0, 0, 0);
	torch(b, 4000, GMT_COUNTERS_WHY_OOM, 55 * MiB, 60 * MiB, 5 * MiB, 1, 1);
	static const char *const jn[] = {"bytes_in_use", "pool_bytes", "bytes_limit",
					 "peak_bytes_in_use"};
	const uint64_t jv[] = {3 * MiB, 48 * MiB, 48 * MiB, 4 * MiB};
	tb_counters(b, 7, 3000, GMT_COUNTERS_WHY_START, "jax", "gpu:1", 1, 4, jn, jv);
	static const char *const tn[] = {"current", "peak"};
	const uint64_t tv[] = {7 * MiB, 9 * MiB};
	tb_counters(b, 7, 3500, GMT_COUNTERS_WHY_PERIODIC, "tensorflow", "gpu:0", 0, 2, tn, tv);
	static const char *const on[] = {"x"};
	const uint64_t ov[] = {1};
	tb_counters(b, 7, 3600, GMT_COUNTERS_WHY_END, "other", "dev", -1, 1, on, ov);
	tb_trailer(b, 9000, 2, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "counters.gmt");
	tb_free(b);
	return path;
}

static void check_torch(const struct counters_series *s)
{
	CHECK(s && !strcmp(s->source, "torch") && !strcmp(s->api, "torch.cuda.memory_stats()") &&
		  !strcmp(s->device_name, "cuda:0") && s->n == 3,
	      "torch: one series of 3 readings");
	if (!s || s->n != 3)
		return;
	/* sorted by time: 2000, 4000, 6000 */
	CHECK(s->pts[0].time_ns == 2000 && s->pts[1].time_ns == 4000 && s->pts[2].time_ns == 6000,
	      "torch: readings in time order");
	unsigned want = CNT_ALLOCATED | CNT_RESERVED | CNT_INACTIVE_SPLIT | CNT_PEAK_ALLOCATED |
			CNT_RETRIES | CNT_OOMS;
	CHECK(s->has == want, "torch: figures 0x%x", s->has);
	/* maxima: allocated 55 (at 4000), reserved 80 (6000), free 80 - 50 = 30 */
	CHECK(s->max_allocated == 55 * MiB && s->max_reserved == 80 * MiB &&
		  s->max_cache_free == 30 * MiB && s->at_max_reserved == 2,
	      "torch: maxima %" PRIu64 " %" PRIu64 " %" PRIu64 " at %zu", s->max_allocated,
	      s->max_reserved, s->max_cache_free, s->at_max_reserved);
	CHECK(s->oom_readings == 1 && s->ooms == 0 && s->alloc_retries == 0,
	      "torch: one OOM reading; the last reading's counts (0: it was written first)");
	const struct counters_point *p = counters_at(s, 4500);
	uint64_t f = 0;
	CHECK(p == &s->pts[1] && counters_cache_free(p, &f) && f == 5 * MiB &&
		  p->inactive_split == 5 * MiB && p->alloc_retries == 1 && p->ooms == 1,
	      "torch: at 4500 the OOM reading: 5 MiB free in the cache");
	CHECK(counters_at(s, 10) == &s->pts[0] && counters_at(s, 99999) == &s->pts[2],
	      "torch: before the first reading, the first; after the last, the last");
	/* the record's own names stay: segment.all.current has no figure */
	CHECK(p->raw && p->raw->n == 7 && !strcmp(p->raw->v[6].name, "segment.all.current"),
	      "torch: raw counters kept");
}

int main(void)
{
	const char *path = write_trace();
	struct trace t;
	CHECK(trace_open(&t, "counters", path) == -1, "trace_open");
	struct counters_set set;
	counters_load(&t, &set);
	/* by device, then source: other (-1), tensorflow and torch (0), jax (1) */
	CHECK(set.n == 4 && set.s[0].device == -1 && !strcmp(set.s[1].source, "tensorflow") &&
		  !strcmp(set.s[2].source, "torch") && !strcmp(set.s[3].source, "jax"),
	      "4 series in order");
	if (set.n == 4) {
		check_torch(&set.s[2]);
		const struct counters_series *j = counters_for_device(&set, 1);
		uint64_t f = 0;
		CHECK(j &&
			  j->has ==
			      (CNT_ALLOCATED | CNT_RESERVED | CNT_LIMIT | CNT_PEAK_ALLOCATED) &&
			  counters_cache_free(&j->pts[0], &f) && f == 45 * MiB &&
			  j->pts[0].limit == 48 * MiB,
		      "jax: bytes_in_use 3 of pool_bytes 48 MiB: 45 MiB free in the pool");
		const struct counters_series *tf = &set.s[1];
		CHECK(tf->has == (CNT_ALLOCATED | CNT_PEAK_ALLOCATED) &&
			  tf->pts[0].allocated == 7 * MiB && !counters_cache_free(&tf->pts[0], &f),
		      "tensorflow: current and peak; no reserved, so no cache free");
		CHECK(set.s[0].has == 0 && !strcmp(set.s[0].api, "other"),
		      "another source: no figure, named by its source");
		CHECK(counters_for_device(&set, 0) == &set.s[2],
		      "device 0: the series that knows reserved (torch), not the first (tf)");
	}
	counters_free(&set);

	/* fragmentation: device 0's peak is at 5000 (60 + 20 MiB); torch's
	 * reading at or before it is the OOM one at 4000 (60 MiB reserved),
	 * taken before the peak's 20 MiB: the next one, at 6000 (80 MiB, no
	 * more than the peak), stands for the peak: 80 - 50 = 30 MiB free, 10
	 * MiB of it split; the most over the 3 readings is 30 MiB. Only device
	 * 0 has events. */
	struct frag_result r;
	CHECK(frag_compute(&t, false, 0, &r) == -1, "frag_compute");
	const struct frag_counters *c = r.ndevs == 1 ? &r.devs[0].counters : NULL;
	CHECK(c && c->known && c->reserved == 80 * MiB && c->allocated == 50 * MiB &&
		  c->time_ns == 6000 && c->has_split && c->inactive_split == 10 * MiB &&
		  c->max_free == 30 * MiB && c->readings == 3 &&
		  !strcmp(c->source, "torch.cuda.memory_stats()") &&
		  !strcmp(c->device_name, "cuda:0"),
	      "frag: cache_free from the reading that stands for the peak");
	frag_free(&r);
	trace_close(&t);
	return failures ? 1 : 0;
}
