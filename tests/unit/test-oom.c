/* analysis/oom.c, the oom report's figures, on a trace written by the
 * test-only trace builder: each out-of-memory failure with what the process
 * held then (on the device, on all, by site and by library), the MEMINFO
 * record matched to it (same thread, at or after it), the verdict and its
 * explanation in each of the four cases, and the other failed calls. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/oom.h"
#include "check.h"
#include "trace-file.h"

static void add(struct tb *b, uint64_t t, uint32_t api, int64_t dev, uint64_t ptr, uint64_t size,
		uint64_t result, uint64_t stack)
{
	struct tb_event e = {.time_ns = t,
			     .api = api,
			     .result = result,
			     .device = dev,
			     .ptr = ptr,
			     .size = size,
			     .stack_id = stack};
	tb_event(b, &e);
}

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_module(b, 1, 0, 0x10000, 0x20000, "/opt/x/libfoo.so.1", NULL, 0);
	tb_module(b, 2, 0, 0x400000, 0x500000, "/work/app", NULL, 0);
	tb_device(b, 0, "GPU 0", NULL, 0, 1000, 9, 0, 12040); /* device 1: no record */
	const uint64_t parents[] = {0, 0}, ips[] = {0x10010, 0x400100};
	tb_stack(b, 2, parents, ips); /* stack 1: in libfoo; stack 2: in the program */
	/* thread 1; held on device 0 (device 1) */
	tb_events_begin(b, 1, 1000);
	add(b, 1000, GMT_API_cudaMalloc, 0, 0x1000, 600, 0, 1); /* 600 */
	add(b, 2000, GMT_API_cudaMalloc, 0, 0x2000, 300, 0, 2); /* 900 */
	add(b, 2500, GMT_API_cudaMalloc, 1, 0x9000, 50, 0, 2);	/* (50) */
	add(b, 3000, GMT_API_cudaMalloc, 0, 0, 500, 2, 2);	/* OOM 1 */
	add(b, 4000, GMT_API_cudaFree, 0, 0x2000, 0, 0, 0);	/* 600 */
	add(b, 5000, GMT_API_cudaMalloc, 0, 0, 400, 2, 1);	/* OOM 2 */
	add(b, 6000, GMT_API_cudaMalloc, 0, 0, 500, 2, 1);	/* OOM 3 */
	/* thread 2 */
	tb_events_begin(b, 2, 7000);
	add(b, 7000, GMT_API_cudaMalloc, 1, 0, 100, 2, 2);  /* OOM 4 */
	add(b, 8000, GMT_API_cudaMalloc, 0, 0, 100, 2, 2);  /* OOM 5 */
	add(b, 8500, GMT_API_cudaFree, 0, 0xdead, 0, 1, 0); /* other failures */
	add(b, 8600, GMT_API_cudaFree, 0, 0xbeef, 0, 1, 0);
	add(b, 8700, GMT_API_cudaMalloc, 0, 0, 10, 1, 0); /* not out-of-memory: other */
	tb_events_end(b);
	tb_meminfo(b, 1, 3000, 0, 50, 1000, GMT_API_cudaMalloc);  /* OOM 1's, same time */
	tb_meminfo(b, 1, 5100, 0, 450, 1000, GMT_API_cudaMalloc); /* OOM 2's */
	tb_meminfo(b, 2, 7000, 1, 10, 1000, GMT_API_cudaMalloc);  /* OOM 4's */
	tb_trailer(b, 9000, 12, 0, 2, GMT_END_EXIT);
	const char *path = trace_file(b, "oom.gmt");
	tb_free(b);
	return path;
}

static void expect_oom(const struct oom_failure *o, uint64_t time, int64_t dev, uint64_t size,
		       uint64_t held, uint64_t held_all, uint64_t mi_time, const char *verdict,
		       const char *why)
{
	CHECK(o->e.time_ns == time && o->e.device == dev && o->e.size == size && o->held == held &&
		  o->held_all == held_all,
	      "OOM at %" PRIu64 ": device %" PRId64 ", %" PRIu64 " bytes, held %" PRIu64
	      " (%" PRIu64 ")",
	      o->e.time_ns, o->e.device, o->e.size, o->held, o->held_all);
	CHECK(mi_time ? o->mi && o->mi->time_ns == mi_time : !o->mi, "OOM at %" PRIu64 ": meminfo",
	      time);
	CHECK(o->verdict && strcmp(o->verdict, verdict) == 0, "OOM at %" PRIu64 ": verdict %s",
	      time, o->verdict ? o->verdict : "(none)");
	CHECK(strcmp(o->why, why) == 0, "OOM at %" PRIu64 ": '%s'", time, o->why);
}

static void expect_holder(const struct oom_holder *h, const char *name, uint64_t stack_id,
			  uint64_t bytes, uint64_t count)
{
	CHECK((name ? h->name && strcmp(h->name, name) == 0 : h->stack_id == stack_id) &&
		  h->bytes == bytes && h->count == count,
	      "holder %s/%" PRIu64 ": %" PRIu64 " bytes in %" PRIu64, h->name ? h->name : "-",
	      h->stack_id, h->bytes, h->count);
}

int main(void)
{
	const char *path = write_trace();
	struct trace t;
	CHECK(trace_open(&t, "oom", path) == -1, "trace_open");
	struct oom_result r;
	CHECK(oom_compute(&t, &r) == -1, "oom_compute");
	CHECK(r.ooms_total == 5 && r.nooms == 5, "%" PRIu64 " OOMs", r.ooms_total);
	if (r.nooms != 5)
		return 1;
	/* 1: free 50 < 500; in use 1000 - 50 = 950, 900 of it held: 50 by
	 * others, not more than the 900 held */
	expect_oom(&r.ooms[0], 3000, 0, 500, 900, 950, 3000, "real exhaustion",
		   "only 50 B free of 1000 B; this process held 900 B, most of the memory in use "
		   "(50 B by others)");
	/* its holders on device 0: stack 1 (libfoo) 600, stack 2 (app) 300 */
	const struct oom_failure *o = &r.ooms[0];
	CHECK(o->nsites == 2 && o->sites_total == 2 && o->nlibs == 2 && o->libs_total == 2,
	      "%zu sites, %zu libraries", o->nsites, o->nlibs);
	expect_holder(&o->sites[0], NULL, 1, 600, 1);
	expect_holder(&o->sites[1], NULL, 2, 300, 1);
	expect_holder(&o->libs[0], "libfoo.so.1", 0, 600, 1);
	expect_holder(&o->libs[1], "app", 0, 300, 1);
	/* 2: the MEMINFO at 5100 (thread 1's latest failure before it): 450
	 * free >= 400 asked */
	expect_oom(&r.ooms[1], 5000, 0, 400, 600, 650, 5100, "fragmentation",
		   "450 B was free, more than the 400 B requested, yet no free block was large "
		   "enough");
	/* 3: no MEMINFO after it on thread 1; 600 held + 500 > the DEVICE
	 * record's 1000 */
	expect_oom(&r.ooms[2], 6000, 0, 500, 600, 650, 0, "real exhaustion",
		   "free memory unknown (no MEMINFO record); this process held 600 B of the "
		   "device's 1000 B, so 500 B could not fit");
	/* 4: device 1, thread 2's MEMINFO: 10 free of 1000, 990 in use, 50
	 * held: 940 by others > 50 */
	expect_oom(&r.ooms[3], 7000, 1, 100, 50, 650, 7000, "other processes",
		   "only 10 B free of 1000 B; 940 B in use was not allocated by this process "
		   "(other processes, CUDA contexts), more than the 50 B it held");
	o = &r.ooms[3];
	CHECK(o->nsites == 1 && o->nlibs == 1, "device 1: one site");
	expect_holder(&o->sites[0], NULL, 2, 50, 1);
	expect_holder(&o->libs[0], "app", 0, 50, 1);
	/* 5: no MEMINFO; 600 + 100 <= 1000 and 600 < 90% of 1000 */
	expect_oom(&r.ooms[4], 8000, 0, 100, 600, 650, 0, "unknown",
		   "free memory unknown (no MEMINFO record); this process held 600 B of the "
		   "device's 1000 B: the other 400 B was held by other processes or too "
		   "fragmented");
	/* other failures: cudaFree x2 (first at 8500), cudaMalloc with result 1 */
	CHECK(r.others_total == 3 && r.nothers == 2, "%" PRIu64 " other failures", r.others_total);
	CHECK(r.others[0].api == GMT_API_cudaFree && r.others[0].result == 1 &&
		  r.others[0].count == 2 && r.others[0].first_time == 8500,
	      "failed frees");
	CHECK(r.others[1].api == GMT_API_cudaMalloc && r.others[1].result == 1 &&
		  r.others[1].count == 1 && r.others[1].first_time == 8700,
	      "failed malloc, not out of memory");
	oom_free(&r);
	CHECK(trace_finish(&t) == 0, "trace_finish");
	trace_close(&t);
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
