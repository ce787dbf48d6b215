/* analysis/fwoom-msg.c: every out-of-memory message form of
 * framework-view.md §2.2 (PyTorch, its older forms and its async backend),
 * §3.1-3.2 (XLA/JAX), §4 (TensorFlow) and §5 (CuPy), with the figures each
 * states. The texts follow the frameworks' format strings (cited there);
 * the figures are made up, and each expected byte count is worked out from
 * the printed one (x.xx of a unit, so within 0.005 of that unit). */
#include <string.h>

#include "analysis/fwoom-msg.h"
#include "check.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static struct fwmsg m;

static enum fwmsg_form parse(const char *text)
{
	return fwmsg_parse(text, strlen(text), &m);
}

/* `s` is known and within its own error of `bytes`, its error `err`. */
#define SIZE(s, want, want_err)                                                                    \
	CHECK((s).known && (s).bytes == (want) && (s).err == (want_err),                           \
	      #s ": known %d, %llu +- %llu, want %llu +- %llu", (s).known,                         \
	      (unsigned long long)(s).bytes, (unsigned long long)(s).err,                          \
	      (unsigned long long)(want), (unsigned long long)(want_err))

static const uint64_t E_MiB = MiB / 200, E_GiB = GiB / 200; /* 0.005 of the unit */

static void torch_now(void)
{
	/* 2.x (recent CCA), with both per-process clauses, a fraction and
	 * private pools */
	CHECK(parse("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity "
		    "of 79.11 GiB of which 3.81 MiB is free. Process 4242 has 1.50 GiB memory in "
		    "use. Including non-PyTorch memory, this process has 77.50 GiB memory in use. "
		    "40.00 GiB allowed; Of the allocated memory 30.00 GiB is allocated by PyTorch, "
		    "with 1.00 GiB allocated in private pools (e.g., CUDA Graphs), and 8.50 GiB is "
		    "reserved by PyTorch but unallocated. If reserved but unallocated memory is "
		    "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
		    "fragmentation.  See documentation for Memory Management  "
		    "(https://docs.pytorch.org/docs/stable/notes/"
		    "cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)") ==
		  FWMSG_TORCH,
	      "2.x form: %d", m.form);
	SIZE(m.requested, 20 * MiB, E_MiB);
	SIZE(m.total, 79 * GiB + 11 * GiB / 100, E_GiB);
	SIZE(m.free_bytes, 3 * MiB + 81 * MiB / 100, E_MiB);
	SIZE(m.self, 77 * GiB + GiB / 2, E_GiB);
	SIZE(m.limit, 40 * GiB, E_GiB);
	SIZE(m.allocated, 30 * GiB, E_GiB);
	SIZE(m.private_pools, 1 * GiB, E_GiB);
	SIZE(m.unallocated, 8 * GiB + GiB / 2, E_GiB);
	CHECK(m.device == 0, "device %d", m.device);
	CHECK(m.nprocs == 1 && m.procs[0].pid == 4242 && m.procs_total == 1, "procs %zu", m.nprocs);
	SIZE(m.others, GiB + GiB / 2, E_GiB);

	/* the common form: no fraction, no pools, no other process; bytes
	 * under 1 KiB print exactly ("0 bytes is free") */
	CHECK(
	    parse("CUDA out of memory. Tried to allocate 320.00 MiB. GPU 3 has a total capacity "
		  "of 31.37 GiB of which 0 bytes is free. Including non-PyTorch memory, this "
		  "process has 31.28 GiB memory in use. Of the allocated memory 30.76 GiB is "
		  "allocated by PyTorch, and 33.46 MiB is reserved by PyTorch but unallocated. If "
		  "reserved but unallocated memory is large try setting "
		  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.") ==
		FWMSG_TORCH,
	    "common form");
	SIZE(m.free_bytes, 0, 0);
	CHECK(m.device == 3 && !m.limit.known && !m.private_pools.known && !m.others.known,
	      "device %d, no fraction, no pools, no others", m.device);
	SIZE(m.unallocated, 33 * MiB + 46 * MiB / 100, E_MiB);
}

static void torch_older(void)
{
	/* 2.0/2.1 (pytorch#99699 logs): "capacty", an empty device ("GPU  has"),
	 * two other processes, the max_split_size_mb hint */
	CHECK(
	    parse("CUDA out of memory. Tried to allocate 448.00 MiB. GPU  has a total capacty of "
		  "79.10 GiB of which 364.31 MiB is free. Process 175080 has 1.46 GiB memory in "
		  "use. Process 175356 has 77.26 GiB memory in use. Of the allocated memory 72.12 "
		  "GiB is allocated by PyTorch, and 3.78 GiB is reserved by PyTorch but "
		  "unallocated. If reserved but unallocated memory is large try setting "
		  "max_split_size_mb to avoid fragmentation.  See documentation for Memory "
		  "Management and PYTORCH_CUDA_ALLOC_CONF") == FWMSG_TORCH,
	    "2.0 form");
	CHECK(m.device == -1, "empty device: %d", m.device);
	SIZE(m.total, 79 * GiB + 10 * GiB / 100, E_GiB);
	CHECK(m.nprocs == 2 && m.procs[1].pid == 175356, "two processes: %zu", m.nprocs);
	SIZE(m.others, GiB + 46 * GiB / 100 + 77 * GiB + 26 * GiB / 100, 2 * E_GiB);
	SIZE(m.unallocated, 3 * GiB + 78 * GiB / 100, E_GiB);

	/* 1.x (CUDACachingAllocator.cpp 1.x): reserved in total, one line
	 * break as users paste it, a fraction */
	CHECK(parse("CUDA out of memory. Tried to allocate 2.00 GiB\n(GPU 1; 15.90 GiB total "
		    "capacity; 13.45 GiB already allocated;\n1.23 GiB free; 14.00 GiB allowed; "
		    "13.67 GiB reserved in total by PyTorch) If reserved memory is >> allocated "
		    "memory try setting max_split_size_mb to avoid fragmentation.") ==
		  FWMSG_TORCH_1X,
	      "1.x form: %d", m.form);
	CHECK(m.device == 1, "device %d", m.device);
	SIZE(m.requested, 2 * GiB, E_GiB);
	SIZE(m.total, 15 * GiB + 90 * GiB / 100, E_GiB);
	SIZE(m.allocated, 13 * GiB + 45 * GiB / 100, E_GiB);
	SIZE(m.free_bytes, GiB + 23 * GiB / 100, E_GiB);
	SIZE(m.limit, 14 * GiB, E_GiB);
	SIZE(m.reserved, 13 * GiB + 67 * GiB / 100, E_GiB);
	/* 13.67 - 13.45 GiB: the difference of two printed figures */
	SIZE(m.unallocated, 13 * GiB + 67 * GiB / 100 - (13 * GiB + 45 * GiB / 100), 2 * E_GiB);

	CHECK(parse("CUDA out of memory. Tried to allocate more than 1EB memory.") ==
		  FWMSG_TORCH_HUGE,
	      "1EB form");
	SIZE(m.requested, 1ull << 60, 0);
}

static void torch_other(void)
{
	/* backend:cudaMallocAsync (CMA): "Device limit" is the total */
	CHECK(parse("Allocation on device 0 would exceed allowed memory. (out of memory)\n"
		    "Currently allocated     : 9.43 GiB\nRequested               : 640.00 MiB\n"
		    "Device limit            : 11.59 GiB\nFree (according to CUDA): 7.12 MiB\n"
		    "PyTorch limit (set by user-supplied memory fraction)\n"
		    "                        : 10.00 GiB") == FWMSG_TORCH_ASYNC,
	      "async form");
	SIZE(m.allocated, 9 * GiB + 43 * GiB / 100, E_GiB);
	SIZE(m.requested, 640 * MiB, E_MiB);
	SIZE(m.total, 11 * GiB + 59 * GiB / 100, E_GiB);
	SIZE(m.free_bytes, 7 * MiB + 12 * MiB / 100, E_MiB);
	SIZE(m.limit, 10 * GiB, E_GiB);
	CHECK(m.device == 0, "device");

	/* torch.distributed's excepthook prefixes every line (§2.2) */
	CHECK(parse("[rank3]: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 3 has a total "
		    "capacity of 79.11 GiB of which 1.00 MiB is free.\n[rank3]: Of the allocated "
		    "memory 70.00 GiB is allocated by PyTorch, and 12.00 MiB is reserved by "
		    "PyTorch but unallocated.") == FWMSG_TORCH,
	      "rank-prefixed");
	SIZE(m.allocated, 70 * GiB, E_GiB);
	SIZE(m.unallocated, 12 * MiB, E_MiB);

	CHECK(parse("CUDA error: out of memory\nCUDA kernel errors might be asynchronously "
		    "reported at some other API call") == FWMSG_CUDA_ERROR,
	      "driver error");
	CHECK(parse("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1048576 "
		    "bytes. Error code 12 (Cannot allocate memory)") == FWMSG_HOST,
	      "host");
	SIZE(m.requested, MiB, 0);
	CHECK(parse("something else entirely") == FWMSG_NONE, "none");
	CHECK(parse("") == FWMSG_NONE && fwmsg_parse(NULL, 0, &m) == FWMSG_NONE, "empty");
}

static void xla(void)
{
	CHECK(parse("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 33762398024 "
		    "bytes.\nBufferAssignment OOM Debugging.\nBufferAssignment stats:\n"
		    "             parameter allocation:    1.00GiB\n"
		    "                 total allocation:   31.49GiB\n") == FWMSG_XLA,
	      "xla form");
	SIZE(m.requested, 33762398024ull, 0);
	SIZE(m.program_total, 31 * GiB + 49 * GiB / 100, E_GiB);
	/* newer XLA prints the size human-readable */
	CHECK(parse("Out of memory while trying to allocate 16.00GiB.") == FWMSG_XLA, "xla hr");
	SIZE(m.requested, 16 * GiB, E_GiB);
	CHECK(parse("RESOURCE_EXHAUSTED: Failed to allocate request for 4.00GiB (4294967296B) on "
		    "device ordinal 1") == FWMSG_XLA_REQUEST,
	      "xla request form");
	SIZE(m.requested, 4 * GiB, 0);
	CHECK(m.device == 1, "ordinal %d", m.device);
	CHECK(parse("Out of host memory while trying to allocate 2147483648 bytes.") == FWMSG_HOST,
	      "xla host");
	SIZE(m.requested, 2 * GiB, 0);
	/* jaxlib 0.10.2's CPU client (§3.1), not CuPy's like text */
	CHECK(parse("RESOURCE_EXHAUSTED: Out of memory allocating 4611686018427387904 bytes.") ==
		  FWMSG_HOST,
	      "xla cpu: %d", m.form);
	SIZE(m.requested, 4611686018427387904ull, 0);
}

static void tf_and_cupy(void)
{
	CHECK(parse("OOM when allocating tensor with shape[32,3,224,224] and type float on "
		    "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
		    "\t [[{{node conv1/Conv2D}}]]\nHint: If you want to see a list of allocated "
		    "tensors when OOM happens, add report_tensor_allocations_upon_oom to "
		    "RunOptions for current allocation info.") == FWMSG_TF,
	      "tf form");
	SIZE(m.requested, 32ull * 3 * 224 * 224 * 4, 0);
	CHECK(!strcmp(m.shape, "[32,3,224,224]") && !strcmp(m.dtype, "float") &&
		  !strcmp(m.allocator, "GPU_0_bfc") && m.device == 0,
	      "tf fields: %s %s %s %d", m.shape, m.dtype, m.allocator, m.device);
	CHECK(!strcmp(m.where, "/job:localhost/replica:0/task:0/device:GPU:0"), "where %s",
	      m.where);
	CHECK(parse("Resource exhausted: OOM when allocating tensor of shape [8192,8192] and type "
		    "half on /device:GPU:1 by allocator GPU_1_bfc") == FWMSG_TF,
	      "tf1 form");
	SIZE(m.requested, 8192ull * 8192 * 2, 0);
	CHECK(m.device == 1, "device %d", m.device);
	CHECK(parse("OOM when allocating tensor with shape[1000000000] and type double on "
		    "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu") == FWMSG_HOST,
	      "tf host");

	CHECK(parse("Out of memory allocating 1,073,741,824 bytes (allocated so far: "
		    "5,368,709,120 bytes).") == FWMSG_CUPY,
	      "cupy form");
	SIZE(m.requested, GiB, 0);
	SIZE(m.held, 5 * GiB, 0);
	CHECK(!m.limit.known, "no limit");
	CHECK(parse("Out of memory allocating 536,870,912 bytes (allocated so far: 805,306,368 "
		    "bytes, limit set to: 1,073,741,824 bytes).") == FWMSG_CUPY,
	      "cupy limit");
	SIZE(m.limit, GiB, 0);
	CHECK(parse("Out of memory allocating 512 bytes") == FWMSG_CUPY && !m.held.known,
	      "cupy, total unknown");
	SIZE(m.requested, 512, 0);
}

/* Hostile text: huge figures saturate, a cut message parses what it has. */
static void hostile(void)
{
	CHECK(parse("CUDA out of memory. Tried to allocate 99999999999999999999999.00 GiB. GPU "
		    "0 has a total capacity of") == FWMSG_TORCH,
	      "cut");
	CHECK(m.requested.bytes == UINT64_MAX && !m.total.known, "saturated, no total");
	static char big[FWMSG_MAX_TEXT * 2];
	memset(big, 'x', sizeof(big) - 1);
	memcpy(big + sizeof(big) - 60, "Out of memory allocating 5 bytes", 32);
	CHECK(fwmsg_parse(big, sizeof(big) - 1, &m) == FWMSG_NONE, "past the text read");
	char nul[] = "Out of memory allocating \0 5 bytes";
	CHECK(fwmsg_parse(nul, sizeof(nul) - 1, &m) == FWMSG_NONE, "a NUL is not the end");
}

int main(void)
{
	torch_now();
	torch_older();
	torch_other();
	xla();
	tf_and_cupy();
	hostile();
	return failures ? 1 : 0;
}
