/* analysis/fwtensors.c: the tensors inside the framework's segments at a
 * driver moment. The framework stamps its entries a little after the
 * driver call they follow: the moment of a peak made by a segment's
 * cudaMalloc is right after the tensor that segment was made for; a peak
 * that is not the framework's is before its next entry. fwt_split charges
 * a segment's bytes to its tensors and the rest. */
#include <inttypes.h>
#include <string.h>

#include "analysis/fwtensors.h"
#include "analysis/trace.h"
#include "check.h"
#include "trace-file.h"

#define MiB    (1ull << 20)
#define S1     0x7f0000000000ull
#define S2     0x7f0010000000ull
#define WALL   1700000000000000000ull
#define MONO   1000000000ull /* entry time_us t: MONO + (t - WALL / 1000) * 1000 */
#define US(ns) (WALL / 1000 + ((ns)-MONO) / 1000)

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", NULL, 0, 1024 * MiB, 9, 0, 12040);
	tb_events_begin(b, 7, MONO);
	struct tb_event e1 = {MONO + 10000, GMT_API_cudaMalloc, 0, 0, S1, 20 * MiB, 0, 0, 0};
	struct tb_event e2 = {MONO + 50000, GMT_API_cudaMalloc, 0, 0, S2, 20 * MiB, 0, 0, 0};
	tb_event(b, &e1);
	tb_event(b, &e2);
	tb_events_end(b);
	tb_fwsnap(b, 7, MONO + 90000, WALL + 90000, 1, GMT_FWSNAP_WHY_EXIT, "torch", 3, 1000, 0,
		  NULL, NULL);
	const struct tb_fw_entry e[] = {
	    {GMT_FW_SEGMENT_ALLOC, S1, 20 * MiB, 0, US(MONO + 12000), 0},
	    {GMT_FW_ALLOC, S1, 5 * MiB, 0, US(MONO + 13000), 2},
	    {GMT_FW_ALLOC, S1 + 5 * MiB, 6 * MiB, 0, US(MONO + 20000), 3},
	    {GMT_FW_FREE_REQUESTED, S1, 5 * MiB, 0, US(MONO + 30000), 2},
	    {GMT_FW_FREE_COMPLETED, S1, 5 * MiB, 0, US(MONO + 30000), 2},
	    {GMT_FW_SEGMENT_ALLOC, S2, 20 * MiB, 0, US(MONO + 52000), 0},
	    {GMT_FW_ALLOC, S2, 15 * MiB, 0, US(MONO + 53000), 4},
	    {GMT_FW_ALLOC, S1, 1 * MiB, 0, US(MONO + 60000), 5},
	};
	tb_fwtrace(b, 1, 0, 0, 8, e);
	tb_trailer(b, MONO + 100000, 2, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "fwt.gmt");
	tb_free(b);
	return path;
}

struct sum {
	uint64_t bytes;
	int n;
};
static void add(void *ctx, const struct fwt_tensor *x)
{
	struct sum *s = ctx;
	s->bytes += x->size;
	s->n++;
}

int main(void)
{
	struct trace t;
	CHECK(trace_open(&t, "test", write_trace()) == -1, "opens");
	/* the peak made by S2's cudaMalloc at +50 us: S2's tensor is in it,
	 * the 1 MiB one of +60 us is not */
	int64_t dev = 0;
	uint64_t when = MONO + 50000, addr = S2;
	struct fwt_set s;
	CHECK(fwt_capture(&t, 1, &dev, &when, &addr, &s) == -1, "capture");
	const struct fwt_dev *d = fwt_dev(&s, 0);
	CHECK(d && d->n == 2 && d->bytes == 21 * MiB && d->reserved == 40 * MiB && !d->early,
	      "at the peak: 2 tensors, 21 MiB, 40 MiB of segments (%zu, %" PRIu64 ")", d ? d->n : 0,
	      d ? d->bytes : 0);
	struct sum sum = {0};
	uint64_t rest = 0;
	CHECK(fwt_split(&s, 0, S1, 20 * MiB, add, &sum, &rest) && sum.n == 1 &&
		  sum.bytes == 6 * MiB && rest == 14 * MiB,
	      "S1: its 6 MiB tensor and 14 MiB free");
	CHECK(!fwt_split(&s, 0, 0x1000, 4096, add, &sum, &rest), "not a segment: not split");
	CHECK(d && d->peak_allocated == 22 * MiB && d->end_allocated == 22 * MiB &&
		  d->end_tensors == 3 && d->peak_reserved == 40 * MiB,
	      "the history's own peaks and end");
	fwt_free(&s);
	/* a moment that is not the framework's (+25 us, no address): before
	 * the next entry, so the 5 MiB tensor is still live */
	when = MONO + 25000;
	CHECK(fwt_capture(&t, 1, &dev, &when, NULL, &s) == -1, "capture 2");
	d = fwt_dev(&s, 0);
	CHECK(d && d->n == 2 && d->bytes == 11 * MiB && d->reserved == 20 * MiB,
	      "at +25.0 us: 11 MiB in 2 tensors");
	fwt_free(&s);
	/* at the end */
	when = UINT64_MAX;
	CHECK(fwt_capture(&t, 1, &dev, &when, NULL, &s) == -1, "capture 3");
	d = fwt_dev(&s, 0);
	CHECK(d && d->n == 3 && d->bytes == 22 * MiB, "at the end: 3 tensors");
	fwt_free(&s);
	/* before the history: the tensors as it begins, said */
	when = MONO + 1000;
	CHECK(fwt_capture(&t, 1, &dev, &when, NULL, &s) == -1, "capture 4");
	d = fwt_dev(&s, 0);
	CHECK(d && d->n == 0 && d->early, "before the history's first entry: early");
	fwt_free(&s);
	trace_close(&t);
	return failures ? 1 : 0;
}
