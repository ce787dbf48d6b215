/* analysis/summary.c, summary's figures, on a trace written by the
 * test-only trace builder: each device's peak and when, live at the end,
 * by kind at the peak and at the end, the sites at the peak ranked, the
 * calls per API with the failed one kept, and the per-process rows and
 * totals. The answers are worked out by hand beside each event. */
#include <inttypes.h>
#include <string.h>

#include "analysis/summary.h"
#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)
#define T0  1000000 /* the first event; times are since the start (0) */

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 1024 * MiB, 9, 0, 12040);
	tb_device(b, 1, "GPU 1", NULL, 0, 1024 * MiB, 9, 0, 12040);
	tb_events_begin(b, 1, T0);
	const struct tb_event ev[] = {
	    /* device 0: 10 MiB (stack 1), 20 MiB (stack 2), 4 MiB stream-ordered
	     * (stack 1): the peak, 34 MiB, at T0 + 300 */
	    {T0 + 100, GMT_API_cudaMalloc, 0, 0, 0x1000000, 10 * MiB, 0, 0, 1},
	    {T0 + 200, GMT_API_cudaMalloc, 0, 0, 0x2000000, 20 * MiB, 0, 0, 2},
	    {T0 + 300, GMT_API_cudaMallocAsync, 0, 0, 0x4000000, 4 * MiB, 0x77, 0, 1},
	    /* the 20 MiB freed: 14 MiB in 2 allocations live at the end */
	    {T0 + 400, GMT_API_cudaFree, 0, 0, 0x2000000, 0, 0, 0, 2},
	    /* a failed 1 GiB: counted, kept, no bytes */
	    {T0 + 500, GMT_API_cudaMalloc, 2, 0, 0, 1024 * MiB, 0, 0, 3},
	    /* device 1: 8 MiB, live at the end */
	    {T0 + 600, GMT_API_cudaMalloc, 0, 1, 0x9000000, 8 * MiB, 0, 0, 1},
	};
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
		tb_event(b, &ev[i]);
	tb_events_end(b);
	tb_trailer(b, T0 + 700, 6, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "summary.gmt");
	tb_free(b);
	return path;
}

static const struct summary_call *call_of(const struct summary *s, uint32_t api)
{
	const struct summary_call *c;
	HASH_FIND(hh, s->calls, &api, sizeof(api), c);
	return c;
}

static void figures(struct summary *s)
{
	CHECK(s->ndevs == 2 && s->devs[0].ordinal == 0 && s->devs[1].ordinal == 1, "%zu devices",
	      s->ndevs);
	const struct summary_dev *d = &s->devs[0];
	CHECK(d->lv.peak == 34 * MiB && summary_rel(s, d->lv.peak_time_ns) == T0 + 300,
	      "dev 0 peak %" PRIu64 " at %" PRId64, d->lv.peak, summary_rel(s, d->lv.peak_time_ns));
	CHECK(d->lv.bytes == 14 * MiB && d->lv.count == 2, "dev 0 end %" PRIu64 " in %" PRIu64,
	      d->lv.bytes, d->lv.count);
	CHECK(d->kind_peak[GMT_KIND_DEVICE] == 30 * MiB && d->kind_peak[GMT_KIND_ASYNC] == 4 * MiB,
	      "dev 0 kinds at the peak");
	CHECK(d->kind_end[GMT_KIND_DEVICE] == 10 * MiB && d->kind_end[GMT_KIND_ASYNC] == 4 * MiB,
	      "dev 0 kinds at the end");
	/* stack 2 holds 20 MiB in one, stack 1 14 MiB in two: by bytes */
	CHECK(d->nsites == 2 && d->distinct_sites == 2, "%zu sites", d->nsites);
	if (d->nsites == 2)
		CHECK(d->sites[0].stack_id == 2 && d->sites[0].bytes == 20 * MiB &&
			  d->sites[1].stack_id == 1 && d->sites[1].bytes == 14 * MiB &&
			  d->sites[1].count == 2,
		      "sites %" PRIu64 " %" PRIu64, d->sites[0].stack_id, d->sites[1].stack_id);
	uint64_t libs = 0;
	for (size_t i = 0; i < d->nlibs; i++)
		libs += d->libs[i].bytes;
	CHECK(libs == 34 * MiB, "by library: %" PRIu64, libs);
	CHECK(s->devs[1].lv.peak == 8 * MiB && s->devs[1].lv.bytes == 8 * MiB, "dev 1");

	const struct summary_call *m = call_of(s, GMT_API_cudaMalloc),
				  *a = call_of(s, GMT_API_cudaMallocAsync),
				  *f = call_of(s, GMT_API_cudaFree);
	CHECK(m && m->count == 4 && m->failed == 1 && m->bytes == 38 * MiB, "cudaMalloc");
	CHECK(a && a->count == 1 && a->bytes == 4 * MiB, "cudaMallocAsync");
	CHECK(f && f->count == 1 && f->failed == 0, "cudaFree");
	CHECK(s->nfailures == 1 && s->nfailures_kept == 1 &&
		  s->failures[0].api == GMT_API_cudaMalloc && s->failures[0].size == 1024 * MiB &&
		  s->failures[0].result == 2,
	      "the failure");
	const char *rn = summary_failure_result(&s->failures[0]);
	CHECK(rn && strcmp(rn, "cudaErrorMemoryAllocation") == 0, "result %s", rn ? rn : "?");

	/* one process: the highest peak (34 MiB), 22 MiB in 3 live at the end */
	struct summary_proc r = summary_proc_row(s);
	CHECK(r.peak == 34 * MiB && r.peak_time == T0 + 300 && r.live_end == 22 * MiB &&
		  r.allocs_end == 3 && r.failures == 1 && r.events == 6 && r.complete,
	      "process row");
	struct summary_proc two[2] = {r, r};
	two[1].complete = false;
	struct summary_proc tot = summary_proc_total(two, 2);
	CHECK(tot.peak == 68 * MiB && tot.live_end == 44 * MiB && tot.allocs_end == 6 &&
		  tot.failures == 2 && tot.events == 12 && !tot.complete,
	      "totals");
}

int main(void)
{
	const char *path = write_trace();
	struct summary s;
	int rc = summary_read(&s, "summary", path, NULL, true);
	CHECK(rc < 0, "summary_read: %d", rc);
	if (rc < 0)
		figures(&s);
	summary_free(&s);
	return failures ? 1 : 0;
}
