/* analysis/timeline.c, plot's model, on a trace written by the test-only
 * trace builder: the activity's window, the columns (each keeps its
 * highest point), the layers by kind and their highest, the failed
 * allocation, the device's peak, and the phases from nested ranges. The
 * window is 600 ms over 600 columns: column k is the k-th millisecond. */
#include <inttypes.h>
#include <string.h>

#include "analysis/snapshot.h"
#include "analysis/timeline.h"
#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)
#define MS  1000000ull

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_range(b, 1, 50 * MS, GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_API, "step");
	tb_range(b, 1, 60 * MS, GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_API, "forward");
	tb_range(b, 1, 250 * MS, GMT_RANGE_POP, 0, GMT_RANGE_SRC_API, "");
	tb_range(b, 1, 450 * MS, GMT_RANGE_POP, 0, GMT_RANGE_SRC_API, "");
	tb_events_begin(b, 1, 100 * MS);
	const struct tb_event ev[] = {
	    {100 * MS, GMT_API_cudaMalloc, 0, 0, 0x1000000, 10 * MiB, 0, 0, 1},
	    {200 * MS, GMT_API_cudaMallocAsync, 0, 0, 0x2000000, 4 * MiB, 0x5, 0, 1},
	    /* two changes in one column: it keeps the highest (14 MiB), not the last */
	    {300 * MS, GMT_API_cudaMalloc, 0, 0, 0x3000000, 1 * MiB, 0, 0, 1},
	    {300 * MS + 10, GMT_API_cudaFree, 0, 0, 0x1000000, 0, 0, 0, 1},
	    {400 * MS, GMT_API_cudaMalloc, 2, 0, 0, 1024 * MiB, 0, 0, 1},
	};
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
		tb_event(b, &ev[i]);
	tb_events_end(b);
	tb_trailer(b, 1000 * MS, 5, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "timeline.gmt");
	tb_free(b);
	return path;
}

int main(void)
{
	struct trace t;
	CHECK(trace_open(&t, "plot", write_trace()) < 0, "open");
	/* the events span 100..400 ms: 2% (6 ms) around them */
	uint64_t lo, hi;
	timeline_activity(&t, &lo, &hi);
	CHECK(lo == 94 * MS && hi == 406 * MS, "activity %" PRIu64 "..%" PRIu64, lo, hi);

	struct timeline tl = {.t = &t, .t0 = 0, .span = 600 * MS};
	CHECK(timeline_compute(&tl) < 0, "compute");
	CHECK(tl.npanels == 1 && tl.panels[0].ordinal == 0, "%zu panels", tl.npanels);
	if (tl.npanels == 1) {
		const struct timeline_panel *p = &tl.panels[0];
		CHECK(p->cols[150].total == 10 * MiB && p->cols[150].g[DK_DEVICE] == 10 * MiB,
		      "col 150: %" PRIu64, p->cols[150].total);
		CHECK(p->cols[250].total == 14 * MiB && p->cols[250].g[DK_ASYNC] == 4 * MiB,
		      "col 250: %" PRIu64, p->cols[250].total);
		CHECK(p->cols[300].total == 15 * MiB, "col 300 keeps its highest: %" PRIu64,
		      p->cols[300].total);
		CHECK(p->cols[350].total == 5 * MiB && p->cols[599].total == 5 * MiB,
		      "after: %" PRIu64, p->cols[350].total);
		CHECK(p->group_max[DK_DEVICE] == 11 * MiB && p->group_max[DK_ASYNC] == 4 * MiB,
		      "layers' highest");
		CHECK(p->lv.peak == 15 * MiB && p->lv.peak_time_ns == 300 * MS, "peak %" PRIu64,
		      p->lv.peak);
	}
	CHECK(tl.nooms == 1 && tl.ooms[0].time_ns == 400 * MS && tl.ooms[0].size == 1024 * MiB,
	      "the failure");
	timeline_free(&tl);

	struct timeline_phase *ph;
	size_t n = timeline_phases(&t, &ph);
	CHECK(n == 2 && ph[0].start == 50 * MS && ph[0].end == 450 * MS && ph[0].depth == 0 &&
		  ph[1].start == 60 * MS && ph[1].end == 250 * MS && ph[1].depth == 1 &&
		  strcmp(ph[1].text, "forward") == 0,
	      "%zu phases", n);
	free(ph);
	trace_close(&t);
	return failures ? 1 : 0;
}
