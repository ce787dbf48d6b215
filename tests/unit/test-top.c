/* analysis/top.c, top's one read of the file (top_read_trace: counts kept
 * per stack, the peaks' live sets from peakset) and its two passes
 * (top_add_trace, still used by --tensors and --by range), each on the same
 * answers, on traces written by the test-only trace builder, grouped by API (keys that need no
 * symbols): what each row held at its device's peak and at the end, its total and calls and
 * failures; two traces adding up, with the one holding the most named;
 * and the devices' summed peaks. The answers are worked out beside each
 * event. */
#include <inttypes.h>
#include <string.h>

#include "analysis/top.h"
#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)

/* Device 0: cudaMalloc 10 MiB, cuMemAlloc 20 MiB, cudaMalloc 5 MiB (the
 * peak, 35 MiB at 300), the 20 MiB freed, a failed cudaMalloc; device 1:
 * extra MiB by cudaMalloc. */
static const char *write_trace(const char *name, uint64_t extra)
{
	struct tb *b = tb_new(NULL);
	tb_events_begin(b, 1, 100);
	const struct tb_event ev[] = {
	    {100, GMT_API_cudaMalloc, 0, 0, 0x1000000, 10 * MiB, 0, 0, 1},
	    {200, GMT_API_cuMemAlloc_v2, 0, 0, 0x2000000, 20 * MiB, 0, 0, 2},
	    {300, GMT_API_cudaMalloc, 0, 0, 0x4000000, 5 * MiB, 0, 0, 1},
	    {400, GMT_API_cuMemFree_v2, 0, 0, 0x2000000, 0, 0, 0, 2},
	    {500, GMT_API_cudaMalloc, 2, 0, 0, 1024 * MiB, 0, 0, 1},
	    {600, GMT_API_cudaMalloc, 0, 1, 0x9000000, extra * MiB, 0, 0, 1},
	};
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
		tb_event(b, &ev[i]);
	tb_events_end(b);
	tb_trailer(b, 700, 6, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, name);
	tb_free(b);
	return path;
}

static const struct trace_row *row(struct top *tp, int64_t dev, const char *key)
{
	for (const struct trace_row *r = tp->rows.rows; r; r = r->hh.next)
		if (r->device == dev && strcmp(r->key, key) == 0)
			return r;
	return NULL;
}

static void check_top(char path[2][400], bool one_read)
{
	struct top tp = {0};
	struct top_trace tt[2];
	memset(tt, 0, sizeof(tt));
	trace_rows_init(&tp.rows, GROUP_API, 0);
	for (int i = 0; i < 2; i++) {
		if (one_read) {
			CHECK(top_read_trace(&tp, &tt[i], "top", path[i], NULL, false) < 0,
			      "top_read_trace %d", i);
			continue;
		}
		CHECK(trace_open(&tt[i].t, "top", path[i]) < 0, "open %d", i);
		CHECK(top_add_trace(&tp, &tt[i]) < 0, "top_add_trace %d", i);
	}
	/* each trace: cudaMalloc held 15 MiB in 2 at the peak and the end,
	 * 15 MiB and 2 calls in total (the failure counts apart) */
	const struct trace_row *m = row(&tp, 0, "cudaMalloc"), *c = row(&tp, 0, "cuMemAlloc_v2");
	CHECK(m && m->v[TM_PEAK] == 30 * MiB && m->peak_allocs == 4 && m->v[TM_END] == 30 * MiB &&
		  m->v[TM_TOTAL] == 30 * MiB && m->v[TM_CALLS] == 4 && m->failed == 2 &&
		  m->ntraces == 2,
	      "cudaMalloc on device 0 (one read: %d)", one_read);
	CHECK(c && c->v[TM_PEAK] == 40 * MiB && c->v[TM_END] == 0 && c->v[TM_TOTAL] == 40 * MiB &&
		  c->v[TM_CALLS] == 2,
	      "cuMemAlloc_v2 on device 0 (one read: %d)", one_read);
	/* device 1: 8 MiB in trace 0, 2 MiB in trace 1: the most in trace 0 */
	const struct trace_row *d1 = row(&tp, 1, "cudaMalloc");
	CHECK(d1 && d1->v[TM_PEAK] == 10 * MiB && d1->max[TM_PEAK] == 8 * MiB &&
		  d1->max_trace[TM_PEAK] == 0,
	      "device 1 (one read: %d)", one_read);
	CHECK(tt[0].peak == 35 * MiB && tt[1].peak == 35 * MiB, "each trace's highest peak");
	size_t nd;
	struct top_dev *devs = top_devices(tt, 2, &nd);
	CHECK(nd == 2 && devs[0].ordinal == 0 && devs[0].peak == 70 * MiB && devs[0].ntraces == 2 &&
		  devs[1].ordinal == 1 && devs[1].peak == 10 * MiB,
	      "devices: %zu", nd);
	free(devs);
	for (int i = 0; i < 2; i++) {
		top_trace_free(&tt[i]);
		trace_close(&tt[i].t);
	}
	trace_rows_free(&tp.rows);
}

int main(void)
{
	char path[2][400];
	snprintf(path[0], sizeof(path[0]), "%s", write_trace("a.gmt", 8));
	snprintf(path[1], sizeof(path[1]), "%s", write_trace("b.gmt", 2));
	check_top(path, false);
	check_top(path, true);
	return failures ? 1 : 0;
}
