/* The live view (analysis/live.h) over a trace written a piece at a time,
 * as `gpumemtrace watch` reads one. Times are seconds (S) since the start.
 *
 *   0.5 s  tid 1 ("main")   +64 MiB at load (train.py:10), kept
 *   step k = 1..9, at k s:  tid 1 marks "step k" (a MARK), then
 *     k.1 s  tid 2 ("worker")  +1 MiB at leak (train.py:20), kept
 *     k.2 s  tid 1             +8 MiB at load (train.py:10), freed at k.3 s
 *   a PUSH "train" at depth 0 before them (not a step: no "step" in it),
 *   and a PUSH "optimizer.step" inside it (depth 1: not a boundary).
 * Chunk 1 holds up to step 4, chunk 2 steps 5..20, chunk 3 two threads'
 * batches out of time order: tid 1 frees P at 21.1 s, then tid 2's batch
 * allocates P (4 MiB) at 21.05 s.
 *
 * Worked out: after chunk 1, live = 64 + 4 = 68 MiB, peak 64 + 4 + 8 = 76
 * MiB (at 4.2 s), 4 boundaries, the last at 4 s when 67 MiB were live: +1
 * MiB since the step. The baseline is set there. After chunk 2: 84 MiB live,
 * +16 MiB since the start; boundaries 1..20 saw 64 + (k - 1) MiB, so the
 * last sixteen (steps 5..20) rose in all 15 steps, +15 MiB, all at leak.
 * After chunk 3: P allocated then freed, in time order: 84 MiB, no
 * unmatched free.
 *
 * Then the leak rule on traces of 20 steps with a given growth per step:
 * a cache that warms up in the first steps is no suspect, a staircase (a
 * segment every 3 steps) is, and so is any fall-free rise in both halves. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumemtrace/format.h>

#include "analysis/live.h"
#include "check.h"
#include "trace-file.h"

#define MiB ((uint64_t)1 << 20)
#define S   ((uint64_t)1000000000)
enum { MALLOC = 40, FREE = 43 };

static void ev(struct tb *b, uint64_t tid, uint64_t t, uint32_t api, uint64_t ptr, uint64_t size,
	       uint64_t stack)
{
	struct tb_event e = {
	    .time_ns = t, .api = api, .device = 0, .ptr = ptr, .size = size, .stack_id = stack};
	tb_events_begin(b, tid, t);
	tb_event(b, &e);
	tb_events_end(b);
}

static void step(struct tb *b, uint64_t k)
{
	char text[32];
	snprintf(text, sizeof(text), "step %" PRIu64, k);
	tb_range(b, 1, k * S, GMT_RANGE_MARK, 0, GMT_RANGE_SRC_API, text);
	ev(b, 2, k * S + S / 10, MALLOC, 0x100000 + k, MiB, 2);
	ev(b, 1, k * S + 2 * S / 10, MALLOC, 0x9000, 8 * MiB, 1);
	ev(b, 1, k * S + 3 * S / 10, FREE, 0x9000, 0, 1);
}

static void write_prefix(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(data, 1, len, f) == len && fclose(f) == 0, "write %s", path);
}

static const struct live_row *row(struct live *lv, enum live_group g, const char *key)
{
	size_t n;
	struct live_row **v = live_rows(lv, 0, g, LIVE_SORT_LIVE, &n);
	const struct live_row *r = NULL;
	for (size_t i = 0; i < n && !r; i++)
		if (!strcmp(v[i]->key, key))
			r = v[i];
	free(v);
	return r;
}

/* Two polls: the second finds nothing new and applies what the hold-back kept. */
static void poll2(struct live *lv)
{
	live_poll(lv);
	CHECK(!live_poll(lv), "a second poll reads nothing new");
}

/* 20 steps; before step k's mark, grow[k - 1] MiB more is allocated and kept. */
static bool suspect_of(const int *grow)
{
	struct tb *b = tb_new(NULL);
	uint64_t parents[] = {0}, ip[] = {GMT_PYFRAME_IP(1)};
	tb_pyframe(b, 1, "grow", "g.py", 1);
	tb_stack(b, 1, parents, ip);
	for (uint64_t k = 1; k <= 20; k++) {
		if (grow[k - 1])
			ev(b, 1, k * S - S / 10, MALLOC, 0x100000 * k, (uint64_t)grow[k - 1] * MiB,
			   1);
		tb_range(b, 1, k * S, GMT_RANGE_MARK, 0, GMT_RANGE_SRC_API, "step");
	}
	const char *path = trace_file(b, "rule.gmt");
	struct live lv;
	CHECK(live_open(&lv, "watch", path, NULL) == -1, "open rule.gmt");
	poll2(&lv);
	struct live_leak lk;
	bool yes = live_dev(&lv, 0) && live_leak(&lv, live_dev(&lv, 0), &lk);
	live_close(&lv);
	tb_free(b);
	return yes;
}

int main(void)
{
	struct tb *b = tb_new(NULL);
	static const uint8_t uuid[16] = {1, 2, 3};
	tb_device(b, 0, "Simulated GPU 0", uuid, 16, 16384 * MiB, 9, 0, 13000);
	tb_pyframe(b, 1, "load", "train.py", 10);
	tb_pyframe(b, 2, "leak", "train.py", 20);
	uint64_t parents[] = {0}, ip1[] = {GMT_PYFRAME_IP(1)}, ip2[] = {GMT_PYFRAME_IP(2)};
	tb_stack(b, 1, parents, ip1);
	tb_stack(b, 1, parents, ip2);
	tb_thread(b, 1, "main");
	tb_thread(b, 2, "worker");
	tb_range(b, 1, S / 10, GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_API, "train");
	tb_range(b, 1, S / 5, GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_NVTX, "optimizer.step");
	tb_range(b, 1, S / 4, GMT_RANGE_POP, 0, GMT_RANGE_SRC_NVTX, NULL);
	ev(b, 1, S / 2, MALLOC, 0x1000, 64 * MiB, 1);
	for (uint64_t k = 1; k <= 4; k++)
		step(b, k);
	static const char *const names[] = {"reserved_bytes.all.current",
					    "allocated_bytes.all.current"};
	static const uint64_t values[] = {100 * MiB, 70 * MiB};
	tb_counters(b, 1, 4 * S + S / 2, 0, "torch", "cuda:0", 0, 2, names, values);
	tb_sample(b, 4 * S + S / 2, 0, uuid, 16, 200 * MiB, 16384 * MiB, GMT_SAMPLE_PROCESS_KNOWN,
		  150 * MiB, 0);
	tb_chunk(b);
	for (uint64_t k = 5; k <= 20; k++)
		step(b, k);
	tb_chunk(b);
	ev(b, 1, 21 * S + S / 10, FREE, 0x5000, 0, 1);
	ev(b, 2, 21 * S + S / 20, MALLOC, 0x5000, 4 * MiB, 2);
	tb_chunk(b);
	tb_trailer(b, 22 * S, 63, 0, 2, 0);
	const char *path = trace_file(b, "live.gmt");
	size_t len;
	const uint8_t *data = tb_data(b, &len);
	size_t c1 = tb_chunk_offset(b, 1), c2 = tb_chunk_offset(b, 2), c3 = tb_chunk_offset(b, 3);

	write_prefix(path, data, c1);
	struct live lv;
	CHECK(live_open(&lv, "watch", path, NULL) == -1, "open");
	poll2(&lv);
	const struct live_dev *d = live_dev(&lv, 0);
	CHECK(d && d->live == 68 * MiB && d->peak == 76 * MiB && d->count == 5,
	      "after chunk 1: live %" PRIu64 " peak %" PRIu64 " count %" PRIu64, d ? d->live : 0,
	      d ? d->peak : 0, d ? d->count : 0);
	CHECK(d->total == 16384 * MiB, "total from DEVICE");
	CHECK(lv.steps == 4 && lv.step_text && !strcmp(lv.step_text, "step 4"), "4 steps, last %s",
	      lv.step_text ? lv.step_text : "none");
	CHECK(live_dev_since_step(&lv, d) == (int64_t)MiB, "device +1 MiB since the step");
	CHECK(d->has_reserved && d->reserved == 100 * MiB && !strcmp(d->source, "torch"),
	      "framework reserved");
	CHECK(d->has_nvml && d->nvml_process_known && d->nvml_process == 150 * MiB &&
		  d->nvml_used == 200 * MiB,
	      "NVML sample");
	const struct live_row *leak = row(&lv, LIVE_BY_SITE, "leak (train.py:20)");
	CHECK(leak && leak->live == 4 * MiB && leak->count == 4, "leak row: %" PRIu64,
	      leak ? leak->live : 0);
	CHECK(live_row_since_step(&lv, leak) == (int64_t)MiB, "leak row +1 MiB since the step");
	const struct live_row *load = row(&lv, LIVE_BY_SITE, "load (train.py:10)");
	CHECK(load && load->live == 64 * MiB && live_row_since_step(&lv, load) == 0, "load row");
	const struct live_row *tid2 = row(&lv, LIVE_BY_THREAD, "tid 2");
	CHECK(tid2 && tid2->live == 4 * MiB, "thread row");
	CHECK(live_thread_name(&lv, 2) && !strcmp(live_thread_name(&lv, 2), "worker"), "name");
	CHECK(row(&lv, LIVE_BY_LIBRARY, "python") &&
		  row(&lv, LIVE_BY_LIBRARY, "python")->live == 68 * MiB,
	      "library row");
	struct live_leak lk;
	CHECK(!live_leak(&lv, d, &lk), "4 steps: too few for a verdict");
	/* history: seconds 0..4, the most live in each */
	uint64_t cols[5], span;
	size_t empty;
	live_history(&lv, d, cols, 5, &span, &empty);
	CHECK(span == 1 && empty == 0, "span %" PRIu64 " empty %zu", span, empty);
	CHECK(cols[0] == 64 * MiB && cols[1] == 73 * MiB && cols[4] == 76 * MiB,
	      "history %" PRIu64 " %" PRIu64 " %" PRIu64, cols[0] / MiB, cols[1] / MiB,
	      cols[4] / MiB);
	live_set_start(&lv);

	/* half of chunk 2: a torn tail adds nothing */
	write_prefix(path, data, c1 + (c2 - c1) / 2);
	CHECK(!live_poll(&lv), "a torn tail adds nothing");
	write_prefix(path, data, c2);
	poll2(&lv);
	d = live_dev(&lv, 0);
	CHECK(d->live == 84 * MiB && lv.steps == 20,
	      "after chunk 2: %" PRIu64 ", %" PRIu64 " steps", d->live / MiB, lv.steps);
	leak = row(&lv, LIVE_BY_SITE, "leak (train.py:20)");
	CHECK(live_row_since_start(leak) == (int64_t)(16 * MiB), "leak +16 MiB since the start");
	CHECK(live_row_since_start(row(&lv, LIVE_BY_SITE, "load (train.py:10)")) == 0, "load +0");
	CHECK(live_leak(&lv, d, &lk) && lk.rises == 15 && lk.steps == 15 && lk.grew == 15 * MiB &&
		  lk.site == leak && lk.site_grew == 15 * MiB,
	      "leak suspect: rises %" PRIu64 " grew %" PRIu64, lk.rises, lk.grew);
	size_t n;
	struct live_row **v = live_rows(&lv, 0, LIVE_BY_SITE, LIVE_SORT_START, &n);
	CHECK(n == 2 && v[0] == leak, "sorted by the change since the start: leak first");
	free(v);
	/* a wider view than the trace is long: the early columns are empty */
	uint64_t wide[40];
	live_history(&lv, d, wide, 40, &span, &empty);
	CHECK(span == 1 && empty == 19 && wide[39] == 92 * MiB, "wide: empty %zu last %" PRIu64,
	      empty, wide[39] / MiB);

	/* chunk 3: out of time order in the file, applied in order */
	write_prefix(path, data, c3);
	poll2(&lv);
	CHECK(lv.rp.unmatched_frees == 0 && live_dev(&lv, 0)->live == 84 * MiB &&
		  live_dev(&lv, 0)->peak == 92 * MiB,
	      "reordered: unmatched %" PRIu64, lv.rp.unmatched_frees);
	write_prefix(path, data, len);
	poll2(&lv);
	CHECK(lv.t.has_trailer && lv.t.complete, "the trailer ends it");
	live_close(&lv);

	/* the rule */
	static const int warmup[20] = {64, 32, 16, 8},
			 stairs[20] = {0, 0,  20, 0, 0,	 20, 0, 0,  20, 0,
				       0, 20, 0,  0, 20, 0,  0, 20, 0,	0};
	static const int late[20] = {[18] = 5},
			 every[20] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	CHECK(!suspect_of(warmup), "a cache warming up is no leak suspect");
	CHECK(suspect_of(stairs), "a staircase is");
	CHECK(suspect_of(every), "a rise every step is");
	CHECK(!suspect_of(late), "one late rise is not");

	/* a bad step expression: one usage line */
	struct live_opts o = {.step_regex = "("};
	CHECK(live_open(&lv, "watch", path, &o) == 2, "bad --step");
	tb_free(b);
	return failures ? 1 : 0;
}
