/* analysis/accounting.c: what nvidia-smi shows against what the trace
 * explains, at the peak of device bytes and at the end, from a trace
 * written by the test-only trace builder. The answers are worked out in
 * the comments. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/accounting.h"
#include "cli/accounting-print.h"
#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)

static const uint8_t uuid[16] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
				 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01};

static const char *write_trace(void)
{
	struct tb *b = tb_new(NULL);
	tb_module(b, 1, 0, 0x10000, 0x20000, "/opt/x/libnccl.so.2", NULL, 0);
	tb_module(b, 2, 0, 0x400000, 0x500000, "/work/app", NULL, 0);
	tb_device(b, 0, "GPU 0", uuid, 16, 80ull << 30, 9, 0, 12040);
	const uint64_t parents[] = {0, 0}, ips[] = {0x10010, 0x400100};
	tb_stack(b, 2, parents, ips); /* stack 1: libnccl; stack 2: the program */
	tb_events_begin(b, 1, 1000);
	/* the first event: a context of 300 MiB, measured (aux) */
	TB_EVENT(b, .time_ns = 1000, .api = GMT_API_cuDevicePrimaryCtxRetain, .ptr = 0xc1,
		 .size = 300 * MiB, .aux = 1);
	TB_EVENT(b, .time_ns = 2000, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 3 * MiB,
		 .stack_id = 2); /* big: 1 MiB rounding */
	TB_EVENT(b, .time_ns = 3000, .api = GMT_API_cudaMallocAsync, .ptr = 0x2000,
		 .size = 100 * MiB, .stack_id = 1); /* libnccl's */
	TB_EVENT(b, .time_ns = 4000, .api = GMT_API_cudaMalloc, .ptr = 0x3000, .size = MiB,
		 .stack_id = 2); /* 104 MiB: the peak */
	TB_EVENT(b, .time_ns = 5000, .api = GMT_API_cudaFree, .ptr = 0x2000); /* 4 MiB: it ends */
	TB_EVENT(b, .time_ns = 6000, .api = GMT_API_cuDevicePrimaryCtxRelease_v2, .ptr = 0xc1);
	tb_events_end(b);
	/* nvidia-smi for this process: 504 MiB during the peak, 40 at the end */
	tb_sample(b, 4500, 0, uuid, 16, 900 * MiB, 80ull << 30, GMT_SAMPLE_PROCESS_KNOWN, 504 * MiB,
		  GMT_SAMPLE_WHY_PEAK);
	tb_sample(b, 8000, 0, uuid, 16, 900 * MiB, 80ull << 30, GMT_SAMPLE_PROCESS_KNOWN, 40 * MiB,
		  GMT_SAMPLE_WHY_END);
	tb_trailer(b, 9000, 6, 0, 2, GMT_END_EXIT);
	const char *path = trace_file(b, "acct.gmt");
	tb_free(b);
	return path;
}

/* The peak's plateau. Device 0: a loop that returns to its peak of 100 MiB
 * (t2000, t4000, and 97 MiB at t6000: within 5%), down to 0 between; its
 * plateau ends at the last drop, t7000. The sample at t3500, in a dip
 * between two returns, speaks for the peak; t7500's, after the plateau,
 * does not (though higher). Device 1: 50 MiB at t2000, freed at t2500 for
 * good: its one sample (t3500) is after, so the peak is unsampled. */
static const uint8_t uuid1[16] = {0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
				  0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f, 0x20};

static const char *write_plateau(void)
{
	struct tb *b = tb_new(NULL);
	tb_device(b, 0, "GPU 0", uuid, 16, 80ull << 30, 9, 0, 12040);
	tb_device(b, 1, "GPU 1", uuid1, 16, 80ull << 30, 9, 0, 12040);
	tb_events_begin(b, 1, 2000);
	TB_EVENT(b, .time_ns = 2000, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 100 * MiB);
	TB_EVENT(b, .time_ns = 2000, .api = GMT_API_cudaMalloc, .device = 1, .ptr = 0x9000,
		 .size = 50 * MiB);
	TB_EVENT(b, .time_ns = 2500, .api = GMT_API_cudaFree, .device = 1, .ptr = 0x9000);
	TB_EVENT(b, .time_ns = 3000, .api = GMT_API_cudaFree, .ptr = 0x1000);
	TB_EVENT(b, .time_ns = 4000, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 100 * MiB);
	TB_EVENT(b, .time_ns = 5000, .api = GMT_API_cudaFree, .ptr = 0x1000);
	TB_EVENT(b, .time_ns = 6000, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 97 * MiB);
	TB_EVENT(b, .time_ns = 7000, .api = GMT_API_cudaFree, .ptr = 0x1000);
	TB_EVENT(b, .time_ns = 8000, .api = GMT_API_cudaMalloc, .ptr = 0x2000, .size = 10 * MiB);
	tb_events_end(b);
	tb_sample(b, 3500, 0, uuid, 16, 900 * MiB, 80ull << 30, GMT_SAMPLE_PROCESS_KNOWN, 300 * MiB,
		  GMT_SAMPLE_WHY_PERIODIC);
	tb_sample(b, 3500, 1, uuid1, 16, 900 * MiB, 80ull << 30, GMT_SAMPLE_PROCESS_KNOWN,
		  200 * MiB, GMT_SAMPLE_WHY_PERIODIC);
	tb_sample(b, 7500, 0, uuid, 16, 900 * MiB, 80ull << 30, GMT_SAMPLE_PROCESS_KNOWN, 400 * MiB,
		  GMT_SAMPLE_WHY_PERIODIC);
	tb_trailer(b, 9000, 9, 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "plateau.gmt");
	tb_free(b);
	return path;
}

static void plateau(void);

#define EQ(what, got, want)                                                                        \
	CHECK((uint64_t)(got) == (uint64_t)(want), "%s: %" PRIu64 ", want %" PRIu64, what,         \
	      (uint64_t)(got), (uint64_t)(want))

int main(void)
{
	const char *path = write_trace();
	struct trace t;
	CHECK(trace_open(&t, "accounting", path) == -1, "trace_open");
	struct acct a;
	CHECK(acct_compute(&a, &t) == -1, "acct_compute");
	CHECK(a.nvml_why == NULL, "samples exist: no reason for their absence");
	CHECK(a.ndevs == 1, "%zu devices", a.ndevs);
	const struct acct_dev *d = &a.devs[0];
	CHECK(strcmp(d->name, "GPU 0") == 0, "name '%s'", d->name);
	EQ("total", d->total, 80ull << 30);
	EQ("context events", d->ctx_events, 1);
	EQ("measured", d->ctx_measured, 1);
	EQ("first event's context", d->first_event_ctx, 300 * MiB);
	EQ("samples", d->nsamples, 2);

	/* The peak (t4000): 3 + 100 + 1 MiB, 100 of it stream-ordered; the
	 * context lives; it lasts until t5000; the sample at t4500 speaks for
	 * it: 504 - 104 - 300 = 100 MiB unexplained, over 64 MiB and 10%. */
	const struct acct_moment *p = &d->peak;
	CHECK(p->have && !p->unsampled, "the peak");
	EQ("peak time", p->time_ns, 4000);
	EQ("peak until", p->until_ns, 5000);
	EQ("peak traced", p->traced, 104 * MiB);
	EQ("peak device", p->device, 4 * MiB);
	EQ("peak async", p->async, 100 * MiB);
	EQ("peak vmm", p->vmm, 0);
	EQ("peak big", p->big_allocs, 1); /* 1 MiB is not over 1 MiB */
	EQ("peak rounding", p->rounding, MiB);
	EQ("peak contexts", p->contexts, 300 * MiB);
	EQ("peak contexts live", p->contexts_live, 1);
	EQ("peak unmeasured", p->contexts_unmeasured, 0);
	CHECK(p->nvml && p->nvml_process, "peak: this process's usage");
	EQ("peak smi", p->smi, 504 * MiB);
	EQ("peak sample time", p->sample_time_ns, 4500);
	EQ("peak sample reason", p->sample_reason, GMT_SAMPLE_WHY_PEAK);
	CHECK(p->unexplained == (int64_t)(100 * MiB), "peak unexplained %" PRId64, p->unexplained);
	CHECK(p->flagged, "peak flagged");
	CHECK(p->nlibs == 2 && strcmp(p->libs[0].library, "libnccl.so.2") == 0 &&
		  p->libs[0].bytes == 100 * MiB && p->libs[0].count == 1 &&
		  strcmp(p->libs[1].library, "app") == 0 && p->libs[1].bytes == 4 * MiB &&
		  p->libs[1].count == 2,
	      "peak libraries: libnccl.so.2 100 MiB, app 4 MiB in 2");
	CHECK(d->nroutes > 0, "a flagged moment has likely routes");

	/* The end (the trailer, t9000): 4 MiB, no context; no sample within
	 * 1 s after it, so the nearest (t8000): 40 - 4 = 36 MiB, not flagged. */
	const struct acct_moment *e = &d->end;
	CHECK(e->have, "the end");
	EQ("end time", e->time_ns, 9000);
	EQ("end traced", e->traced, 4 * MiB);
	EQ("end device", e->device, 4 * MiB);
	EQ("end async", e->async, 0);
	EQ("end big", e->big_allocs, 1);
	EQ("end rounding", e->rounding, MiB);
	EQ("end contexts", e->contexts, 0);
	EQ("end contexts live", e->contexts_live, 0);
	EQ("end smi", e->smi, 40 * MiB);
	EQ("end sample time", e->sample_time_ns, 8000);
	CHECK(e->unexplained == (int64_t)(36 * MiB), "end unexplained %" PRId64, e->unexplained);
	CHECK(!e->flagged, "end not flagged");
	CHECK(e->nlibs == 1 && strcmp(e->libs[0].library, "app") == 0, "end: app's only");

	FILE *null = fopen("/dev/null", "w");
	acct_print(null, &a, -1);
	acct_print_brief(null, &a);
	acct_print_json(null, &a, -1);
	fclose(null);
	acct_free(&a);
	CHECK(trace_finish(&t) == 0, "trace_finish");
	trace_close(&t);
	plateau();
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}

static void plateau(void)
{
	const char *path = write_plateau();
	struct trace t;
	CHECK(trace_open(&t, "accounting", path) == -1, "trace_open plateau");
	struct acct a;
	CHECK(acct_compute(&a, &t) == -1, "acct_compute plateau");
	CHECK(a.ndevs == 2, "%zu devices, want 2", a.ndevs);
	if (a.ndevs == 2) {
		const struct acct_moment *p0 = &a.devs[0].peak, *p1 = &a.devs[1].peak;
		EQ("plateau: peak time", p0->time_ns, 2000);
		EQ("plateau: until", p0->until_ns, 7000);
		CHECK(!p0->unsampled && p0->nvml, "plateau: device 0 sampled at its peak");
		EQ("plateau: sample time", p0->sample_time_ns, 3500);
		EQ("plateau: smi", p0->smi, 300 * MiB);
		EQ("device 1: until", p1->until_ns, 2500);
		CHECK(p1->unsampled && !p1->nvml, "device 1: its peak unsampled");
	}
	acct_free(&a);
	trace_finish(&t);
	trace_close(&t);
}
