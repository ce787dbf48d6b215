/* Following a trace as it is written: gmt_reader_follow (reader/) under
 * trace_follow (analysis/) under gmtr_follow_* (capi/follow.c). A trace of
 * three chunks is written out a piece at a time: the first chunk, then the
 * second cut in half (a torn tail: a chunk being written), then the rest.
 * Each poll reads only what was added, stack ids and counters carry on, and
 * each window's figures are its own allocations':
 *   window "a" (tid 1, 100..200): +10 MiB @110, +5 MiB @120, -10 MiB @130,
 *     and a free @140 of 7 MiB allocated before it (at 50, no window):
 *     peak 15 MiB, 5 MiB left, 2 allocs;
 *   window "b" (tid 1, 300..400): +4 MiB @310 by tid 1, +6 MiB @320 by
 *     tid 2 (any thread counts), -4 MiB @330, one failed 1 GiB alloc @340
 *     (an OOM): peak 10 MiB, 6 MiB left, 2 allocs, 1 failed, 1 OOM.
 * PyTorch's counters (reserved, its peak) read at 60 (before any window:
 * 20, 20 MiB), in a at 101 and 199 (16, 20: memory was freed inside a and
 * the peak counter did not move, so 16 MiB is a floor and 20 a ceiling),
 * in b at 301, 335 and 399 (16/20, 30/30, 24/30: the peak counter rose
 * inside b, so 30 MiB is exact). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumemtrace/format.h>
#include <gpumemtrace/trace-reader.h>

#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)
#define EV(t, a, p, n, stk)                                                                        \
	(struct tb_event)                                                                          \
	{                                                                                          \
		.time_ns = (t), .api = (a), .device = 0, .ptr = (p), .size = (n),                  \
		.stack_id = (stk)                                                                  \
	}
enum { MALLOC = 40, FREE = 43 };

static void ev(struct tb *b, uint64_t tid, struct tb_event e)
{
	tb_events_begin(b, tid, e.time_ns);
	tb_event(b, &e);
	tb_events_end(b);
}

static void torch_reading(struct tb *b, uint64_t t, uint64_t reserved, uint64_t peak)
{
	const char *names[] = {"reserved_bytes.all.current", "reserved_bytes.all.peak"};
	uint64_t values[] = {reserved * MiB, peak * MiB};
	tb_counters(b, 9, t, GMT_COUNTERS_WHY_PERIODIC, "torch", "cuda:0", 0, 2, names, values);
}

static void write_prefix(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(data, 1, len, f) == len && fclose(f) == 0, "write %s", path);
}

int main(void)
{
	struct tb *b = tb_new(NULL);
	uint64_t parents[] = {0}, ips[] = {0x1000};
	tb_stack(b, 1, parents, ips);
	ev(b, 1, EV(50, MALLOC, 0x7000, 7 * MiB, 1));
	torch_reading(b, 60, 20, 20);
	tb_range(b, 1, 100, GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_API, "pytest a");
	torch_reading(b, 101, 16, 20);
	torch_reading(b, 199, 16, 20);
	tb_range(b, 1, 105, GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_NVTX, "forward"); /* not a window */
	ev(b, 1, EV(110, MALLOC, 0x1000, 10 * MiB, 1));
	ev(b, 1, EV(120, MALLOC, 0x2000, 5 * MiB, 1));
	ev(b, 1, EV(130, FREE, 0x1000, 0, 1));
	ev(b, 1, EV(140, FREE, 0x7000, 0, 1));
	tb_range(b, 1, 150, GMT_RANGE_POP, 0, GMT_RANGE_SRC_NVTX, NULL);
	tb_range(b, 1, 200, GMT_RANGE_POP, 0, GMT_RANGE_SRC_API, NULL);
	tb_chunk(b);
	tb_range(b, 1, 300, GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_API, "pytest b");
	torch_reading(b, 301, 16, 20);
	torch_reading(b, 335, 30, 30);
	torch_reading(b, 399, 24, 30);
	ev(b, 1, EV(310, MALLOC, 0x3000, 4 * MiB, 1));
	ev(b, 2, EV(320, MALLOC, 0x4000, 6 * MiB, 1));
	ev(b, 1, EV(330, FREE, 0x3000, 0, 1));
	struct tb_event oom = EV(340, MALLOC, 0, 1024 * MiB, 1);
	oom.result = 2;
	ev(b, 1, oom);
	tb_chunk(b);
	tb_range(b, 1, 400, GMT_RANGE_POP, 0, GMT_RANGE_SRC_API, NULL);
	tb_trailer(b, 500, 9, 0, 1, 0);
	const char *path = trace_file(b, "follow.gmt");
	size_t len;
	const uint8_t *data = tb_data(b, &len);
	size_t c1 = tb_chunk_offset(b, 1), c2 = tb_chunk_offset(b, 2);

	/* the first chunk alone: window a closes */
	write_prefix(path, data, c1);
	char err[256];
	struct gmtr_follow *f = gmtr_follow_open(path, "pytest ", err, sizeof(err));
	CHECK(f, "open: %s", err);
	CHECK(gmtr_follow_poll(f) == 1, "one window after the first chunk");
	struct gmtr_window w;
	CHECK(gmtr_follow_window(f, 0, &w) == 0 && w.closed && strcmp(w.name, "a") == 0, "a");
	CHECK(w.start_ns == 100 - 0 && w.end_ns == 200, "a: %" PRId64 "..%" PRId64, w.start_ns,
	      w.end_ns);
	CHECK(w.peak_bytes == 15 * MiB && w.live_bytes == 5 * MiB && w.allocs == 2 && !w.failed,
	      "a: peak %" PRIu64 " live %" PRIu64 " allocs %" PRIu64, w.peak_bytes, w.live_bytes,
	      w.allocs);
	CHECK(strstr(w.sites_json, "\"bytes\": 15728640, \"allocs\": 2"), "a sites: %s",
	      w.sites_json);
	const char *fw = gmtr_follow_framework_json(f, 0);
	CHECK(fw && strcmp(fw, "[{\"source\": \"torch\", \"device\": \"cuda:0\", "
			       "\"reserved_peak\": 16777216, \"reserved_at_start\": 16777216, "
			       "\"exact\": false, \"at_most\": 20971520}]") == 0,
	      "a framework: %s", fw ? fw : "(null)");

	/* half of the second chunk: a torn tail, nothing new yet */
	write_prefix(path, data, c1 + (c2 - c1) / 2);
	CHECK(gmtr_follow_poll(f) == 1, "a torn tail adds nothing");
	/* the whole second chunk: b opened, not closed (its pop is in chunk 3) */
	write_prefix(path, data, c2);
	CHECK(gmtr_follow_poll(f) == 2, "b opened");
	CHECK(gmtr_follow_window(f, 1, &w) == 0 && !w.closed && w.end_ns == -1, "b still open");
	/* the rest */
	write_prefix(path, data, len);
	CHECK(gmtr_follow_poll(f) == 2, "two windows");
	CHECK(gmtr_follow_window(f, 1, &w) == 0 && w.closed && strcmp(w.name, "b") == 0, "b");
	CHECK(w.peak_bytes == 10 * MiB && w.live_bytes == 6 * MiB && w.allocs == 2 &&
		  w.failed == 1 && w.ooms == 1,
	      "b: peak %" PRIu64 " live %" PRIu64 " allocs %" PRIu64 " failed %" PRIu64,
	      w.peak_bytes, w.live_bytes, w.allocs, w.failed);
	fw = gmtr_follow_framework_json(f, 1);
	CHECK(fw && strcmp(fw, "[{\"source\": \"torch\", \"device\": \"cuda:0\", "
			       "\"reserved_peak\": 31457280, \"reserved_at_start\": 16777216, "
			       "\"exact\": true, \"at_most\": null}]") == 0,
	      "b framework: %s", fw ? fw : "(null)");
	CHECK(!gmtr_follow_framework_json(f, 2), "no third window's");
	CHECK(strstr(gmtr_follow_status_json(f), "\"events\": 9"), "status: %s",
	      gmtr_follow_status_json(f));
	CHECK(gmtr_follow_window(f, 2, &w) == -1, "no third window");
	CHECK(gmtr_follow_poll(f) == 2, "nothing new");
	gmtr_follow_close(f);

	/* not a trace: one line */
	write_prefix(path, (const uint8_t *)"junk junk junk junk", 19);
	CHECK(!gmtr_follow_open(path, "pytest ", err, sizeof(err)) && err[0], "junk refused");
	tb_free(b);
	return failures ? 1 : 0;
}
