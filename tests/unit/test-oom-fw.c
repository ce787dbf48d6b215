/* analysis/oom.c with framework errors (FWOOM records, analysis/fwoom.c,
 * oom-fw.c), on traces written by the test-only trace builder: each case
 * with its figures worked out by hand from the records' values and the
 * messages (framework-view.md §2.2-§5 give their forms):
 * - PyTorch's observer and its raised error are one error, joined to the
 *   failed cudaMalloc chain it explains: 725 MiB reserved but unallocated
 *   >= the 300 MiB asked is fragmentation;
 * - a memory fraction's refusal (no failed call): limit, caught or not;
 * - JAX's preallocated pool: fragmentation (largest free block < request
 *   <= free inside), and its fraction as a limit;
 * - TensorFlow: the pool from the driver's region, the working set; a
 *   host OOM is not the GPU's;
 * - CuPy: its limit, and fragmentation in split chunks;
 * - oom-hidden: an abnormal end with a pool framework and nothing shown. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/oom.h"
#include "check.h"
#include "trace-file.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static const uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* One FWOOM record; names/values end with a NULL name. */
static void fwoom(struct tb *b, uint64_t t, uint64_t how, const char *source, const char *type,
		  const char *const *names, const uint64_t *values, const char *msg)
{
	size_t n = 0;
	while (names && names[n])
		n++;
	tb_fwoom(b, 1, t, how, source, type, 0, n, names, values, msg);
}

static struct tb *start(uint64_t total, const char *envkey, const char *envval)
{
	struct tb *b = tb_new(NULL);
	const char *args[] = {"python"};
	const char *keys[] = {envkey}, *vals[] = {envval};
	tb_process(b, 42, 1, 0, "host", "/usr/bin/python3", 1, args, envkey ? 1 : 0, keys, vals);
	tb_device(b, 0, "GPU 0", uuid, 16, total, 9, 0, 12040);
	tb_events_begin(b, 1, 100);
	return b;
}

static struct trace t;
static struct oom_result r;

/* Ends b with an EXIT of `status` (-1: none) and a trailer (unless
 * no_trailer), opens it and computes the oom report into r. */
static void compute(struct tb *b, int64_t status, bool no_trailer)
{
	tb_events_end(b);
	if (status >= 0)
		tb_exit(b, 90000, GMT_EXIT_EXIT, status, 0);
	if (!no_trailer)
		tb_trailer(b, 100000, tb_event_count(b), 0, 0, GMT_END_EXIT);
	const char *path = trace_file(b, "fw.gmt");
	tb_free(b);
	CHECK(trace_open(&t, "oom", path) == -1, "trace_open");
	oom_compute(&t, &r);
}

static void done(void)
{
	oom_free(&r);
	trace_finish(&t);
	trace_close(&t);
}

#define WHY(o, text) CHECK(strcmp((o)->why, text) == 0, "why: '%s'", (o)->why)

static const char *const torch_names[] = {"alloc_size",
					  "limit_or_total",
					  "device_free",
					  "reserved_bytes.all.current",
					  "allocated_bytes.all.current",
					  NULL};

/* PyTorch: cudaMalloc(300 MiB) fails, the cache flush frees nothing, the
 * retry fails; the observer reads 868 MiB reserved, 143 MiB allocated;
 * the error reaches the top. R = 725 MiB >= A = 300 MiB: fragmentation,
 * for both failed calls of the chain (one error, raised: not caught). */
static void torch_fragmentation(void)
{
	struct tb *b = start(GiB, NULL, NULL);
	TB_EVENT(b, .time_ns = 100, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 868 * MiB);
	TB_EVENT(b, .time_ns = 1000, .api = GMT_API_cudaMalloc, .size = 300 * MiB, .result = 2);
	TB_EVENT(b, .time_ns = 1200, .api = GMT_API_cudaMalloc, .size = 300 * MiB, .result = 2);
	tb_events_end(b);
	tb_meminfo(b, 1, 1000, 0, 100 * MiB, GiB, GMT_API_cudaMalloc);
	tb_meminfo(b, 1, 1200, 0, 100 * MiB, GiB, GMT_API_cudaMalloc);
	const uint64_t v[] = {300 * MiB, GiB, 100 * MiB, 868 * MiB, 143 * MiB};
	fwoom(b, 1300, GMT_FWOOM_OBSERVER, "torch", "", torch_names, v, "");
	fwoom(b, 2000, GMT_FWOOM_EXCEPTHOOK, "torch", "torch.OutOfMemoryError", NULL, NULL,
	      "CUDA out of memory. Tried to allocate 300.00 MiB. GPU 0 has a total capacity of "
	      "1024.00 MiB of which 100.00 MiB is free. Including non-PyTorch memory, this "
	      "process has 868.00 MiB memory in use. Of the allocated memory 143.00 MiB is "
	      "allocated by PyTorch, and 725.00 MiB is reserved by PyTorch but unallocated.");
	tb_events_begin(b, 1, 3000);
	compute(b, 1, false);
	CHECK(r.fw.n == 1 && r.fw.v[0].observer && r.fw.v[0].raised, "one error, both records");
	CHECK(r.nfails == 2 && r.fails_total == 2 && r.fw_only_total == 0, "%zu failures",
	      r.nfails);
	for (size_t i = 0; i < r.nfails; i++) {
		const struct oom_failure *o = &r.fails[i];
		CHECK(o->fw == &r.fw.v[0] && !o->fw_only && !o->caught &&
			  o->kase == OOM_FRAGMENTATION,
		      "failure %zu: %s", i, oom_case_name[o->kase]);
	}
	WHY(&r.fails[1], "PyTorch held 868 MiB, 143 MiB of it in use: 725 MiB reserved but "
			 "unallocated: once the allocator has freed every unsplit segment, what "
			 "stays cached is split blocks, at least the 300 MiB asked, yet no free "
			 "block was large enough: fragmentation");
	CHECK(!strcmp(r.verdict, "fragmentation"), "verdict %s", r.verdict);
	done();
}

/* A fraction of 0.5 on 2 GiB (the observer's third argument, 1 GiB, is
 * below the device's total): 500 MiB reserved + 600 MiB asked > 1 GiB,
 * and 1.4 GiB free: the limit. Seen by the observer only and the process
 * ends well: caught; ending with status 1 after it: not caught. */
static void torch_limit(bool raised, int status, const char *verdict)
{
	struct tb *b = start(2 * GiB, NULL, NULL);
	TB_EVENT(b, .time_ns = 100, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 500 * MiB);
	tb_events_end(b);
	const uint64_t v[] = {600 * MiB, GiB, 1400 * MiB, 500 * MiB, 480 * MiB};
	fwoom(b, 1000, GMT_FWOOM_OBSERVER, "torch", "", torch_names, v, "");
	if (raised)
		fwoom(b, 1100, GMT_FWOOM_THREAD, "torch", "torch.OutOfMemoryError", NULL, NULL,
		      "CUDA out of memory. Tried to allocate 600.00 MiB. GPU 0 has a total "
		      "capacity of 2.00 GiB of which 1.37 GiB is free. 1.00 GiB allowed; Of the "
		      "allocated memory 480.00 MiB is allocated by PyTorch, and 20.00 MiB is "
		      "reserved by PyTorch but unallocated.");
	tb_events_begin(b, 1, 3000);
	compute(b, status, false);
	const struct oom_failure *o = &r.fails[0];
	CHECK(r.nfails == 1 && o->fw_only && o->e.size == 600 * MiB && r.ooms_total == 1 &&
		  r.fails_total == 0,
	      "one error of its own: %zu", r.nfails);
	CHECK(o->kase == OOM_LIMIT, "case %s", oom_case_name[o->kase]);
	WHY(o, "PyTorch's limit, torch.cuda.set_per_process_memory_fraction(0.50), refused it: "
	       "500 MiB counted against 1.00 GiB allowed, 600 MiB asked; the device had 1.37 "
	       "GiB free: without the limit it would have fit");
	CHECK(o->caught == (!raised && status == 0), "caught %d", o->caught);
	CHECK(!strcmp(r.verdict, verdict), "verdict %s, want %s", r.verdict, verdict);
	done();
}

static const char *const jax_names[] = {"bytes_in_use", "bytes_limit", "pool_bytes",
					"largest_free_block_bytes", NULL};

/* JAX preallocates 3 GiB of 4. In use 1 GiB, 2 GiB free inside, its
 * largest free block 512 MiB < the 1 GiB asked: fragmentation. In use
 * 2.8 GiB, 200 MiB free inside, the device 824 MiB free (NVML: 4 GiB less
 * 3 GiB + 200 MiB used): without
 * the 0.75 fraction 1 GiB would fit: the limit. */
static void jax(bool frag)
{
	struct tb *b = start(4 * GiB, "XLA_PYTHON_CLIENT_MEM_FRACTION", "0.75");
	TB_EVENT(b, .time_ns = 100, .api = GMT_API_cuMemAlloc_v2, .ptr = 0x1000, .size = 3 * GiB);
	tb_events_end(b);
	uint64_t in_use = frag ? GiB : 2 * GiB + 800 * MiB;
	const uint64_t v[] = {in_use, 3 * GiB, 3 * GiB, frag ? 512 * MiB : 200 * MiB};
	tb_sample(b, 4000, 0, uuid, 16, 3 * GiB + 200 * MiB, 4 * GiB, 0, 0,
		  GMT_SAMPLE_WHY_PERIODIC);
	fwoom(b, 5000, GMT_FWOOM_EXCEPTHOOK, "jax", "jax.errors.JaxRuntimeError", jax_names, v,
	      "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1073741824 bytes.");
	tb_events_begin(b, 1, 6000);
	compute(b, 1, false);
	const struct oom_failure *o = &r.fails[0];
	CHECK(r.nfails == 1 && o->fw_only, "%zu failures", r.nfails);
	if (frag)
		WHY(o,
		    "JAX held 3.00 GiB, 1.00 GiB of it in use: 2.00 GiB free inside the pool, at "
		    "least the 1.00 GiB asked, yet no free block was large enough (its "
		    "largest free block: 512 MiB): fragmentation");
	else
		WHY(o, "JAX's limit, XLA_PYTHON_CLIENT_MEM_FRACTION=0.75, refused it: 2.78 GiB "
		       "counted against 3.00 GiB allowed, 1.00 GiB asked; the device had 824 MiB "
		       "free: without the limit it would have fit");
	CHECK(!strcmp(r.verdict, frag ? "fragmentation" : "limit"), "verdict %s", r.verdict);
	done();
}

/* TensorFlow preallocates 2.25 GiB of 4; 1.45 GiB in use (its
 * get_memory_info) and a 314572800-float tensor (1.17 GiB) asked: 819 MiB
 * free inside the region: the working set. "by allocator cpu": host. */
static void tf(bool host)
{
	struct tb *b = start(4 * GiB, NULL, NULL);
	TB_EVENT(b, .time_ns = 100, .api = GMT_API_cuMemAlloc_v2, .ptr = 0x1000,
		 .size = 2 * GiB + 256 * MiB);
	tb_events_end(b);
	static const char *const names[] = {"current", NULL};
	const uint64_t v[] = {GiB + 460 * MiB};
	fwoom(b, 5000, GMT_FWOOM_EXCEPTHOOK, "tensorflow",
	      "tensorflow.python.framework.errors_impl.ResourceExhaustedError", names, v,
	      host ? "OOM when allocating tensor with shape[314572800] and type float on "
		     "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu"
		   : "OOM when allocating tensor with shape[314572800] and type float on "
		     "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc");
	tb_events_begin(b, 1, 6000);
	compute(b, 1, false);
	const struct oom_failure *o = &r.fails[0];
	if (host) {
		CHECK(o->kase == OOM_NOT_AN_OOM && !strcmp(r.verdict, "not-an-oom"), "host: %s",
		      r.verdict);
		WHY(o, "TensorFlow ran out of host memory (1.17 GiB asked), not the GPU's: the "
		       "machine's RAM or a pinned-memory pool");
	} else {
		CHECK(o->kase == OOM_THIS_PROCESS, "case %s", oom_case_name[o->kase]);
		WHY(o, "TensorFlow held 2.25 GiB in driver allocations, 1.45 GiB of it in use: 820 "
		       "MiB free inside it, less than the 1.17 GiB asked: the working set did not "
		       "fit");
	}
	done();
}

/* CuPy on 2 GiB: 800 MiB held, 700 MiB used, a 1 GiB limit, 512 MiB asked:
 * 800 + 512 > 1024 and the device had room: the limit. 300 MiB used, no
 * limit, 400 MiB asked: 500 MiB in split chunks: fragmentation. */
static void cupy(bool lim)
{
	struct tb *b = start(2 * GiB, lim ? "CUPY_GPU_MEMORY_LIMIT" : NULL, "1073741824");
	TB_EVENT(b, .time_ns = 100, .api = GMT_API_cudaMalloc, .ptr = 0x1000, .size = 800 * MiB);
	tb_events_end(b);
	static const char *const names[] = {"used_bytes", "total_bytes", "limit", NULL};
	const uint64_t v[] = {lim ? 700 * MiB : 300 * MiB, 800 * MiB, lim ? GiB : 0};
	fwoom(b, 5000, GMT_FWOOM_EXCEPTHOOK, "cupy", "cupy.cuda.memory.OutOfMemoryError", names, v,
	      lim ? "Out of memory allocating 536,870,912 bytes (allocated so far: 838,860,800 "
		    "bytes, limit set to: 1,073,741,824 bytes)."
		  : "Out of memory allocating 419,430,400 bytes (allocated so far: 838,860,800 "
		    "bytes).");
	tb_events_begin(b, 1, 6000);
	compute(b, 1, false);
	if (lim)
		WHY(&r.fails[0], "CuPy's limit, CUPY_GPU_MEMORY_LIMIT=1073741824, refused it: 800 "
				 "MiB counted against 1.00 GiB allowed, 512 MiB asked; the "
				 "device's 2.00 GiB had room: without the limit it would have fit");
	else
		WHY(&r.fails[0], "CuPy held 800 MiB, 300 MiB of it in use: 500 MiB in split "
				 "chunks, which free_all_blocks cannot free, at least the 400 MiB "
				 "asked, yet no free block was large enough: fragmentation");
	done();
}

/* TensorFlow's growth (its variable is in the trace), regions made, no
 * failed call and no error recorded: status 1 or no trailer is oom-hidden;
 * status 0 is nothing. */
static void hidden(int64_t status, bool no_trailer)
{
	struct tb *b = start(4 * GiB, "TF_FORCE_GPU_ALLOW_GROWTH", "true");
	TB_EVENT(b, .time_ns = 100, .api = GMT_API_cuMemAlloc_v2, .ptr = 0x1000, .size = 2 * MiB);
	TB_EVENT(b, .time_ns = 200, .api = GMT_API_cuMemAlloc_v2, .ptr = 0x400000, .size = 4 * MiB);
	compute(b, status, no_trailer);
	bool want = status != 0 || no_trailer;
	CHECK(r.hidden == want && !strcmp(r.verdict, want ? "oom-hidden" : "none"),
	      "status %" PRId64 ": verdict %s", status, r.verdict);
	if (want && !no_trailer)
		CHECK(!strncmp(r.hidden_text,
			       "the process ended abnormally (exit status 1) while TensorFlow held "
			       "its memory in a pool of its own",
			       95),
		      "'%s'", r.hidden_text);
	if (no_trailer)
		CHECK(strstr(r.hidden_text, "(no trailer: the process was killed by a signal") !=
			  NULL,
		      "'%s'", r.hidden_text);
	done();
}

int main(void)
{
	torch_fragmentation();
	torch_limit(true, 1, "limit");
	torch_limit(false, 0, "caught");
	torch_limit(false, 1, "limit");
	jax(true);
	jax(false);
	tf(false);
	tf(true);
	cupy(true);
	cupy(false);
	hidden(1, false);
	hidden(0, false);
	hidden(-1, true);
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
