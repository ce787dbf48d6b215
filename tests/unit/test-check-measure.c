/* analysis/check-measure.c, the figures check and diff compare, from a
 * trace written by the test-only trace builder: levels per device, calls
 * per API, the sites live at each device's peak (by API and by library),
 * --ignore-library, and two threads' batches replayed in time order (a
 * free written before its allocation still matches it). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/check-measure.h"
#include "check.h"
#include "trace-file.h"

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_module(b, 1, 0, 0x10000, 0x20000, "/opt/x/libnccl.so.2", NULL, 0);
	tb_module(b, 2, 0, 0x400000, 0x500000, "/work/app", NULL, 0);
	tb_device(b, 0, "GPU 0", NULL, 0, 1 << 20, 9, 0, 12040);
	tb_device(b, 2, "GPU 2", NULL, 0, 1 << 20, 9, 0, 12040);
	const uint64_t parents[] = {0, 0}, ips[] = {0x10010, 0x400100};
	tb_stack(b, 2, parents, ips); /* stack 1: in libnccl; stack 2: in the program */
	/* Thread 1, written first. time: dev0 bytes (dev1) */
	tb_events_begin(b, 1, 1000);
	TB_EVENT(b, .time_ns = 1000, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 100,
		 .stack_id = 2); /* 100 */
	TB_EVENT(b, .time_ns = 1500, .api = GMT_API_cudaMalloc, .ptr = 0x5000, .size = 1000,
		 .stack_id = 1); /* libnccl's */
	TB_EVENT(b, .time_ns = 2000, .api = GMT_API_cudaMallocAsync, .ptr = 0x2000, .size = 200,
		 .stack_id = 2); /* 300 */
	TB_EVENT(b, .time_ns = 2500, .api = GMT_API_cudaMalloc, .ptr = 0x6000, .size = 5000,
		 .result = 2, .stack_id = 2);				      /* failed */
	TB_EVENT(b, .time_ns = 3000, .api = GMT_API_cudaFree, .ptr = 0x1000); /* 200 */
	TB_EVENT(b, .time_ns = 7000, .api = GMT_API_cudaFree, .device = 1,
		 .ptr = 0x3000); /* (0): thread 2's */
	/* Thread 2, written after, earlier in time. */
	tb_events_begin(b, 2, 4000);
	TB_EVENT(b, .time_ns = 4000, .api = GMT_API_cudaMalloc, .device = 1, .ptr = 0x3000,
		 .size = 50, .stack_id = 2); /* (50) */
	TB_EVENT(b, .time_ns = 5000, .api = GMT_API_cudaMalloc, .ptr = 0x4000, .size = 300,
		 .stack_id = 2);					      /* 500: the peak */
	TB_EVENT(b, .time_ns = 6000, .api = GMT_API_cudaFree, .ptr = 0x4000); /* 200 */
	tb_events_end(b);
	tb_trailer(b, 8000, 9, 0, 2, GMT_END_EXIT);
	const char *path = trace_file(b, "measure.gmt");
	tb_free(b);
	return path;
}

static void expect_level(const char *what, struct rp_level lv, uint64_t bytes, uint64_t count,
			 uint64_t peak, uint64_t peak_time, uint64_t peak_seq)
{
	CHECK(lv.bytes == bytes && lv.count == count && lv.peak == peak &&
		  lv.peak_time_ns == peak_time && lv.peak_seq == peak_seq,
	      "%s: %" PRIu64 " bytes in %" PRIu64 ", peak %" PRIu64 " at %" PRIu64 " (seq %" PRIu64
	      "); want %" PRIu64 " in %" PRIu64 ", %" PRIu64 " at %" PRIu64 " (seq %" PRIu64 ")",
	      what, lv.bytes, lv.count, lv.peak, lv.peak_time_ns, lv.peak_seq, bytes, count, peak,
	      peak_time, peak_seq);
}

static void expect_site(const struct measure *m, int64_t dev, const char *key, uint64_t bytes,
			uint64_t count)
{
	char id[128];
	snprintf(id, sizeof(id), "%" PRId64 "\x1f%s", dev, key);
	struct cm_site *s = NULL;
	HASH_FIND_STR(m->sites, id, s);
	CHECK(s && s->bytes == bytes && s->count == count,
	      "site %s on device %" PRId64 ": %" PRIu64 " bytes in %" PRIu64 ", want %" PRIu64
	      " in %" PRIu64,
	      key, dev, s ? s->bytes : 0, s ? s->count : 0, bytes, count);
}

static void expect_call(const struct cm_call *c, uint32_t api, uint64_t count, uint64_t failed,
			uint64_t bytes)
{
	CHECK(c && c->api == api && c->count == count && c->failed == failed && c->bytes == bytes,
	      "calls of %u: %" PRIu64 " (%" PRIu64 " failed), %" PRIu64 " bytes; want %" PRIu64
	      " (%" PRIu64 "), %" PRIu64,
	      api, c ? c->count : 0, c ? c->failed : 0, c ? c->bytes : 0, count, failed, bytes);
}

int main(void)
{
	const char *path = write_trace();
	const char *const ignore[] = {"libnccl*"};
	struct cm_options opt = {.ignore = ignore, .nignore = 1, .sites = true, .by = GROUP_API};
	struct measure m;
	CHECK(check_measure(&m, "check", path, &opt) == -1, "check_measure");
	/* applied in time order (libnccl's left out): seq 1 t1000, 2 t2000,
	 * 3 the failure, 4 t3000, 5 t4000 (dev1), 6 t5000, 7 t6000, 8 t7000 */
	expect_level("dev0", check_measure_dev(&m, 0), 200, 1, 500, 5000, 6);
	expect_level("dev1", check_measure_dev(&m, 1), 0, 0, 50, 4000, 5);
	expect_level("dev2", check_measure_dev(&m, 2), 0, 0, 0, 0, 0);
	CHECK(m.rp.unmatched_frees == 0, "the free written first matched: %" PRIu64,
	      m.rp.unmatched_frees);
	CHECK(m.ignored_allocs == 1 && m.ignored_bytes == 1000, "ignored: %" PRIu64 ", %" PRIu64,
	      m.ignored_allocs, m.ignored_bytes);
	/* calls, sorted by id; bytes of every call that succeeded, ignored or not */
	CHECK(HASH_COUNT(m.calls) == 3, "%u APIs called", HASH_COUNT(m.calls));
	const struct cm_call *c = m.calls;
	expect_call(c, GMT_API_cudaMalloc, 5, 1, 1450);
	expect_call(c ? c->hh.next : NULL, GMT_API_cudaFree, 3, 0, 0);
	expect_call(c && c->hh.next ? ((struct cm_call *)c->hh.next)->hh.next : NULL,
		    GMT_API_cudaMallocAsync, 1, 0, 200);
	/* live at dev0's peak (t5000): 0x2000 and 0x4000; at dev1's: 0x3000 */
	CHECK(HASH_COUNT(m.sites) == 3, "%u sites", HASH_COUNT(m.sites));
	expect_site(&m, 0, "cudaMalloc", 300, 1);
	expect_site(&m, 0, "cudaMallocAsync", 200, 1);
	expect_site(&m, 1, "cudaMalloc", 50, 1);
	CHECK(check_measure_has_dev(&m, 0) && check_measure_has_dev(&m, 1) &&
		  check_measure_has_dev(&m, 2) && !check_measure_has_dev(&m, 3),
	      "devices known: 0, 1 (an event), 2 (a DEVICE record)");
	int64_t *devs;
	size_t n = check_measure_devs(&m, &devs);
	CHECK(n == 3 && devs[0] == 0 && devs[1] == 1 && devs[2] == 2, "%zu devices", n);
	free(devs);
	CHECK(trace_finish(&m.t) == 0, "trace_finish");
	check_measure_free(&m);

	/* Nothing ignored, by library: libnccl's 1000 bytes count. dev0:
	 * 100, 1100, 1300, (failed), 1200, (dev1), 1500 at t5000 (seq 7). */
	struct cm_options all = {.sites = true, .by = GROUP_LIBRARY};
	CHECK(check_measure(&m, "check", path, &all) == -1, "check_measure, nothing ignored");
	expect_level("dev0, all", check_measure_dev(&m, 0), 1200, 2, 1500, 5000, 7);
	CHECK(m.ignored_allocs == 0, "nothing ignored");
	expect_site(&m, 0, "libnccl.so.2", 1000, 1);
	expect_site(&m, 0, "app", 500, 2);
	expect_site(&m, 1, "app", 50, 1);
	CHECK(HASH_COUNT(m.sites) == 3, "%u sites", HASH_COUNT(m.sites));
	check_measure_free(&m);

	/* Without sites: no second pass. */
	struct cm_options nosites = {.by = GROUP_API};
	CHECK(check_measure(&m, "check", path, &nosites) == -1 && m.sites == NULL, "no sites");
	check_measure_free(&m);
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
