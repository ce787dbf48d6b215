/* analysis/oom.c and oom-judge.c, on a trace written by the test-only trace
 * builder: one failure of each case with its figures worked out by hand
 * (the request above the device's total; this process in the way, with its
 * context counted as its own; other processes in the way, from NVML's
 * per-process figure; a cache flush and retry that recovered; a back-off
 * chain; a result that is not out-of-memory; a host allocation; no figures
 * at all), what was live by site and library, the verdict over failures,
 * and the blind spots (PyTorch loaded; an allocation too small for a
 * preallocated pool). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/oom.h"
#include "check.h"
#include "trace-file.h"

#define S 1000000000ull

static const uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_module(b, 1, 0, 0x10000, 0x20000, "/opt/torch/lib/libc10_cuda.so", NULL, 0);
	tb_module(b, 2, 0, 0x400000, 0x500000, "/work/app", NULL, 0);
	tb_device(b, 0, "GPU 0", uuid, 16, 1000, 9, 0, 12040); /* devices 1, 2: no record */
	const uint64_t parents[] = {0, 0}, ips[] = {0x10010, 0x400100};
	tb_stack(b, 2, parents, ips); /* stack 1: in libc10_cuda; stack 2: in the program */
	tb_events_begin(b, 1, 1000);
	TB_EVENT(b, .time_ns = 1000, .api = GMT_API_cuDevicePrimaryCtxRetain, .ptr = 0xc1,
		 .size = 100, .aux = 1); /* context: 100 */
	TB_EVENT(b, .time_ns = 1100, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 600,
		 .stack_id = 1); /* held 600 */
	TB_EVENT(b, .time_ns = 2000, .api = GMT_API_cudaMalloc, .ptr = 0x2000, .size = 200,
		 .stack_id = 2); /* 800 */
	TB_EVENT(b, .time_ns = 3000, .api = GMT_API_cudaMalloc, .size = 5000, .result = 2,
		 .stack_id = 2); /* A */
	TB_EVENT(b, .time_ns = 4000, .api = GMT_API_cudaMalloc, .size = 300, .result = 2,
		 .stack_id = 2); /* B */
	TB_EVENT(b, .time_ns = 4500, .api = GMT_API_cudaMalloc, .ptr = 0x2800, .size = 10,
		 .stack_id = 2); /* 810: unrelated, ends B */
	TB_EVENT(b, .time_ns = 5000, .api = GMT_API_cudaMalloc, .size = 300, .result = 2,
		 .stack_id = 2);					      /* C */
	TB_EVENT(b, .time_ns = 5100, .api = GMT_API_cudaFree, .ptr = 0x2000); /* 610: the flush */
	TB_EVENT(b, .time_ns = 5200, .api = GMT_API_cudaMalloc, .ptr = 0x3000, .size = 300,
		 .stack_id = 2); /* 910: the retry */
	TB_EVENT(b, .time_ns = 6000, .api = GMT_API_cuMemAlloc_v2, .device = 1, .size = 500,
		 .result = 2, .stack_id = 2); /* D1 */
	TB_EVENT(b, .time_ns = 6010, .api = GMT_API_cuMemAlloc_v2, .device = 1, .size = 450,
		 .result = 2, .stack_id = 2); /* D2: 90% of D1 */
	TB_EVENT(b, .time_ns = 6020, .api = GMT_API_cuMemAlloc_v2, .device = 1, .ptr = 0x4000,
		 .size = 405, .stack_id = 2); /* 90% of D2: got it */
	TB_EVENT(b, .time_ns = 6500, .api = GMT_API_cudaFree, .ptr = 0x1000); /* 310 */
	tb_events_begin(b, 2, 7000);
	TB_EVENT(b, .time_ns = 7000, .api = GMT_API_cudaMalloc, .size = 400, .result = 2,
		 .stack_id = 2); /* E */
	TB_EVENT(b, .time_ns = 3 * S, .api = GMT_API_cudaMalloc, .size = 700, .result = 2,
		 .stack_id = 2); /* F */
	TB_EVENT(b, .time_ns = 3 * S + 100, .api = GMT_API_cudaMalloc, .device = 2, .size = 10,
		 .result = 2, .stack_id = 2); /* G */
	TB_EVENT(b, .time_ns = 3 * S + 200, .api = GMT_API_cudaMalloc, .size = 10, .result = 1,
		 .stack_id = 2); /* H: invalid value */
	TB_EVENT(b, .time_ns = 3 * S + 300, .api = GMT_API_cudaMallocHost, .device = -1, .size = 64,
		 .result = 2, .stack_id = 2); /* I: host */
	TB_EVENT(b, .time_ns = 3 * S + 400, .api = GMT_API_cudaFree, .ptr = 0xdead,
		 .result = 1); /* no allocation */
	TB_EVENT(b, .time_ns = 3 * S + 500, .api = GMT_API_cudaMalloc, .size = 50, .result = 2,
		 .stack_id = 2); /* K */
	tb_events_end(b);
	tb_meminfo(b, 1, 3000, 0, 50, 1000, GMT_API_cudaMalloc);	 /* A's */
	tb_meminfo(b, 1, 4000, 0, 50, 1000, GMT_API_cudaMalloc);	 /* B's */
	tb_meminfo(b, 1, 5000, 0, 40, 1000, GMT_API_cudaMalloc);	 /* C's */
	tb_meminfo(b, 2, 7000, 0, 100, 1000, GMT_API_cudaMalloc);	 /* E's */
	tb_meminfo(b, 2, 3 * S + 500, 0, 600, 1000, GMT_API_cudaMalloc); /* K's */
	/* NVML at E: 900 used of 1000, 420 of it this process's */
	tb_sample(b, 7000, 0, uuid, 16, 900, 1000, GMT_SAMPLE_PROCESS_KNOWN, 420,
		  GMT_SAMPLE_WHY_OOM);
	tb_trailer(b, 3 * S + 1000, 20, 0, 2, GMT_END_EXIT);
	const char *path = trace_file(b, "oom.gmt");
	tb_free(b);
	return path;
}

static void expect_fail(const struct oom_failure *o, uint64_t time, enum oom_case kase,
			uint64_t held, uint64_t contexts, uint64_t this_process, uint64_t others,
			const char *why)
{
	CHECK(o->e.time_ns == time && o->kase == kase,
	      "failure at %" PRIu64 " (want %" PRIu64 "): case %s", o->e.time_ns, time,
	      oom_case_name[o->kase]);
	CHECK(o->held == held && o->contexts == contexts && o->this_process == this_process &&
		  o->others == others,
	      "at %" PRIu64 ": held %" PRIu64 ", contexts %" PRIu64 ", this %" PRIu64
	      ", others %" PRIu64,
	      time, o->held, o->contexts, o->this_process, o->others);
	CHECK(!why || strcmp(o->why, why) == 0, "at %" PRIu64 ": '%s'", time, o->why);
}

static void expect_holder(const struct oom_holder *h, const char *name, uint64_t stack_id,
			  uint64_t bytes, uint64_t count)
{
	CHECK((name ? h->name && strcmp(h->name, name) == 0 : h->stack_id == stack_id) &&
		  h->bytes == bytes && h->count == count,
	      "holder %s/%" PRIu64 ": %" PRIu64 " bytes in %" PRIu64, h->name ? h->name : "-",
	      h->stack_id, h->bytes, h->count);
}

static void cases_first(const struct oom_result *r)
{
	/* A: 5000 asked of a 1000 B device: whatever else held memory */
	expect_fail(&r->fails[0], 3000, OOM_EXCEEDS_TOTAL, 800, 100, 900, 50,
		    "the request, 4.88 KiB, is larger than the device's total memory, 1000 B: it "
		    "cannot succeed on this GPU even when it is empty; look at the size asked for "
		    "(a shape or a unit), not at what is using memory");
	/* B: 50 free, 300 asked: 250 short. The NVML sample (420) is below the
	 * 800 traced, so this process is 800 + the 100 context = 900; in use
	 * 950, others 50 < 250: this process, even without the others */
	expect_fail(&r->fails[1], 4000, OOM_THIS_PROCESS, 800, 100, 900, 50,
		    "50 B free of 1000 B, 300 B asked; this process held 900 B: 800 B traced "
		    "allocations + 100 B contexts and module code; the driver's reserve 50 B "
		    "(too little for another process's CUDA context), too little to matter: "
		    "without them it would still not fit");
	const struct oom_failure *o = &r->fails[1];
	CHECK(o->nsites == 2 && o->nlibs == 2, "B: %zu sites, %zu libraries", o->nsites, o->nlibs);
	expect_holder(&o->sites[0], NULL, 1, 600, 1);
	expect_holder(&o->sites[1], NULL, 2, 200, 1);
	expect_holder(&o->libs[0], "libc10_cuda.so", 0, 600, 1);
	expect_holder(&o->libs[1], "app", 0, 200, 1);
	CHECK(o->next.seen && o->next.ok && o->next.size == 10, "B: next is the 10 B allocation");
	/* C: the flush freed 200 in one call, the same 300 succeeded 200 ns after */
	expect_fail(&r->fails[2], 5000, OOM_RECOVERED, 810, 100, 910, 50,
		    "the same 300 B request succeeded 200 ns later, after 1 device free (200 B) on "
		    "this thread: the framework emptied its cache and retried (PyTorch, CuPy); not "
		    "a failure of the program, but each one costs a synchronisation");
	/* D1, D2 (device 1, total unknown): 500 then 450 failed, 405 succeeded */
	expect_fail(&r->fails[3], 6000, OOM_NOT_AN_OOM, 0, 0, 0, 0,
		    "a smaller request, 405 B (81% of 500 B), succeeded 20 ns later: an allocator "
		    "backing off (TensorFlow/XLA BFC growth) or probing for a size (cuDNN's "
		    "cacheInfo), not a failure of the program");
	expect_fail(&r->fails[4], 6010, OOM_NOT_AN_OOM, 0, 0, 0, 0, NULL);
	CHECK(r->fails[4].next.size == 405 && r->fails[4].next.time_ns == 6020, "D2's next");
}

static void cases_then(const struct oom_result *r)
{
	/* E: 100 free, 400 asked (300 short); NVML: this process 420 (>= the
	 * 310 traced), in use 900, others 480 > 420 and >= 300 */
	expect_fail(&r->fails[5], 7000, OOM_OTHER_PROCESSES, 310, 100, 420, 480,
		    "100 B free of 1000 B, 400 B asked; other processes held 480 B, more than this "
		    "process (420 B per NVML: 310 B traced allocations, 100 B contexts and module "
		    "code, the rest untraced): without them it would have fit");
	CHECK(r->fails[5].nvml_process && r->fails[5].sample && r->fails[5].mi,
	      "E: its MEMINFO and its sample");
	/* F: no MEMINFO, the sample is 3 s before: free unknown; 310 + 100 +
	 * 700 > 1000 */
	expect_fail(&r->fails[6], 3 * S, OOM_THIS_PROCESS, 310, 100, 410, 0,
		    "free memory unknown (no MEMINFO record, no NVML sample), but this process "
		    "held 410 B: 310 B traced allocations + 100 B contexts and module code; with "
		    "the 700 B asked it exceeds the device's 1000 B");
	/* G: device 2, nothing known */
	expect_fail(&r->fails[7], 3 * S + 100, OOM_UNKNOWN, 0, 0, 0, 0, NULL);
	/* H: result 1; I: pinned host memory */
	expect_fail(&r->fails[8], 3 * S + 200, OOM_NOT_AN_OOM, 310, 100, 410, 0,
		    "the result cudaErrorInvalidValue (1) is not out-of-memory: a probe, a "
		    "fallback or a wrong argument, not memory running out");
	expect_fail(&r->fails[9], 3 * S + 300, OOM_NOT_AN_OOM, 0, 0, 0, 0,
		    "cudaMallocHost asks for pinned host memory: its failure is not device memory "
		    "running out");
	/* K: 600 free, 50 asked: enough, yet it failed; in use 400, less than
	 * this process's 310 + 100: others 0, the case names this process */
	expect_fail(
	    &r->fails[10], 3 * S + 500, OOM_THIS_PROCESS, 310, 100, 410, 0,
	    "600 B free of 1000 B after the failure, enough for the 50 B asked: memory was "
	    "freed meanwhile or no free range was large enough; this process held 410 B: "
	    "310 B traced allocations + 100 B contexts and module code, other processes 0 B");
}

/* The verdict over failures: the first not recovered and an OOM wins. */
static void verdicts(void)
{
	struct oom_failure f[2] = {0};
	struct oom_result a = {.fails = f, .nfails = 2, .fails_total = 2}, none = {0};
	const struct oom_result *one[] = {&a}, *two[] = {&none, &a};
	f[0].kase = OOM_NOT_AN_OOM;
	f[1].kase = OOM_RECOVERED;
	CHECK(strcmp(oom_verdict(one, 1), "recovered-by-retry") == 0, "recovered");
	f[1].kase = OOM_NOT_AN_OOM;
	CHECK(strcmp(oom_verdict(one, 1), "not-an-oom") == 0, "probes only");
	f[0].kase = OOM_RECOVERED;
	f[1].kase = OOM_THIS_PROCESS;
	CHECK(strcmp(oom_verdict(two, 2), "this-process") == 0, "recovered, then not");
	CHECK(strcmp(oom_verdict(two, 1), "none") == 0, "nothing failed");
}

/* A preallocated pool on the 1000 B device with a 100 B context: 800 B
 * is >= 50% of the 900 left, >= 80% of an 850 B peak, and no other
 * request reaches half of it; a 500 B rival (an activation that comes
 * again), or a 1000 B peak, says it is no pool. */
static void preallocated(const struct trace *t)
{
	struct oom_result x = {.largest = {.size = 800, .device = 0, .time_ns = 1100},
			       .largest_ctx = 100,
			       .largest_peak = 850,
			       .second = 100};
	oom_find_blind(t, &x);
	CHECK(x.nblind == 2 && strcmp(x.blind[0].key, "preallocated") == 0, "a pool");
	CHECK(strncmp(x.blind[0].text, "one allocation of 800 B (80% of the device's 1000 B)",
		      51) == 0,
	      "'%s'", x.blind[0].text);
	x.nblind = 0;
	x.second = 500;
	oom_find_blind(t, &x);
	CHECK(x.nblind == 1 && strcmp(x.blind[0].key, "pytorch-fraction") == 0, "a rival");
	x.nblind = 0;
	x.second = 100;
	x.largest_peak = 1001;
	oom_find_blind(t, &x);
	CHECK(x.nblind == 1, "not nearly the whole peak");
}

/* One PyTorch out-of-memory error is two failed cudaMalloc calls with the
 * cache's frees between (frameworks.md §1.4): one error, judged on its
 * last attempt; a program that then asks for half is a second error; a
 * program without a retrying allocator that asks again without freeing
 * meets two errors. */
static void retries(void)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", uuid, 16, 1000, 9, 0, 12040);
	const uint64_t parents[] = {0}, ips[] = {0x400100};
	tb_stack(b, 1, parents, ips);
	tb_events_begin(b, 1, 1000);
	TB_EVENT(b, .time_ns = 1000, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 300,
		 .stack_id = 1); /* cached segments */
	TB_EVENT(b, .time_ns = 1100, .api = GMT_API_cudaMalloc, .ptr = 0x2000, .size = 100,
		 .stack_id = 1);
	TB_EVENT(b, .time_ns = 2000, .api = GMT_API_cudaMalloc, .size = 800, .result = 2,
		 .stack_id = 1); /* P1 */
	TB_EVENT(b, .time_ns = 2100, .api = GMT_API_cudaFree,
		 .ptr = 0x2000); /* release_cached_blocks */
	TB_EVENT(b, .time_ns = 2200, .api = GMT_API_cudaMalloc, .size = 800, .result = 2,
		 .stack_id = 1); /* P2: the same error */
	TB_EVENT(b, .time_ns = 5000, .api = GMT_API_cudaMalloc, .size = 400, .result = 2,
		 .stack_id = 1); /* Q1: the program halves */
	TB_EVENT(b, .time_ns = 5100, .api = GMT_API_cudaMalloc, .size = 400, .result = 2,
		 .stack_id = 1); /* Q2: no free, no framework */
	tb_events_end(b);
	tb_trailer(b, 9000, 7, 0, 1, GMT_END_EXIT);
	const char *path = trace_file(b, "retry.gmt");
	tb_free(b);
	struct trace t;
	CHECK(trace_open(&t, "retry", path) == -1, "trace_open");
	struct oom_result r;
	CHECK(oom_compute(&t, &r) == -1, "oom_compute");
	CHECK(r.nfails == 4 && r.oom_calls_total == 4 && r.ooms_total == 3,
	      "%zu failures, %" PRIu64 " errors", r.nfails, r.ooms_total);
	if (r.nfails == 4) {
		const struct oom_failure *p2 = &r.fails[1];
		CHECK(r.fails[0].error == 1 && p2->error == 1 && p2->attempt == 2 &&
			  p2->attempts == 2 && p2->first_ns == 2000 && p2->first_size == 800 &&
			  p2->retry_freed == 100 && p2->retry_freed_count == 1,
		      "P1, P2: one error, 100 B freed between (error %u, attempt %u of %u, "
		      "freed %" PRIu64 ")",
		      p2->error, p2->attempt, p2->attempts, p2->retry_freed);
		CHECK(r.fails[2].error == 2 && r.fails[3].error == 3,
		      "Q1 (half), Q2 (asked again, nothing freed, no framework): errors 2 and 3");
		CHECK(r.cases[OOM_THIS_PROCESS] + r.cases[OOM_UNKNOWN] == 3, "3 errors counted");
		const char *kase;
		CHECK(oom_unrecovered(&r, false, 0, &kase) == 3, "check counts 3");
	}
	oom_free(&r);
	trace_finish(&t);
	trace_close(&t);
}

int main(void)
{
	const char *path = write_trace();
	struct trace t;
	CHECK(trace_open(&t, "oom", path) == -1, "trace_open");
	struct oom_result r;
	CHECK(oom_compute(&t, &r) == -1, "oom_compute");
	/* 11 failed allocations; 9 of them out of device memory (not H, I),
	 * as 8 errors: D1 and D2 are one back-off */
	CHECK(r.fails_total == 11 && r.nfails == 11 && r.oom_calls_total == 9 && r.ooms_total == 8,
	      "%" PRIu64 " failures, %" PRIu64 " OOM calls, %" PRIu64 " errors", r.fails_total,
	      r.oom_calls_total, r.ooms_total);
	if (r.nfails != 11)
		return 1;
	cases_first(&r);
	cases_then(&r);
	CHECK(r.fails[3].error == r.fails[4].error && r.fails[3].attempt == 1 &&
		  r.fails[4].attempt == 2 && r.fails[4].attempts == 2 && !oom_final(&r.fails[3]),
	      "D1, D2: one error in two attempts");
	CHECK(r.fails[1].error != r.fails[0].error && r.fails[2].error != r.fails[1].error,
	      "A, B, C: three errors");
	CHECK(r.cases[OOM_NOT_AN_OOM] == 3 && r.cases[OOM_RECOVERED] == 1 &&
		  r.cases[OOM_EXCEEDS_TOTAL] == 1 && r.cases[OOM_THIS_PROCESS] == 3 &&
		  r.cases[OOM_OTHER_PROCESSES] == 1 && r.cases[OOM_UNKNOWN] == 1,
	      "case counts");
	CHECK(strcmp(r.verdict, "exceeds-device-total") == 0, "verdict %s", r.verdict);
	CHECK(r.others_total == 1 && r.nothers == 1 && r.others[0].api == GMT_API_cudaFree,
	      "one other failure");
	/* blind spots: PyTorch's library is loaded; 600 B, 60% of the device,
	 * is below a preallocation's 70% (JAX's pool: t-report-oom) */
	CHECK(r.nblind == 1 && strcmp(r.blind[0].key, "pytorch-fraction") == 0, "%zu blind spots",
	      r.nblind);
	oom_free(&r);
	preallocated(&t);
	verdicts();
	retries();
	CHECK(trace_finish(&t) == 0, "trace_finish");
	trace_close(&t);
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
