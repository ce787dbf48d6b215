/* TensorFlow's and JAX's BFC allocator at the driver level (frameworks.md
 * §2), under a training loop of jitted steps with fixed buffer sizes.
 *
 * The route (§0.3, §2.5): the StreamExecutor reaches libcuda through
 * implib trampolines, dlopen("libcuda.so.1") and a lazy dlsym per symbol;
 * device memory is cuMemAlloc_v2/cuMemFree_v2.
 *
 * Scenario names start with the framework (tf-, jax-); the policy comes
 * from the framework's own variables:
 *   TF   TF_FORCE_GPU_ALLOW_GROWTH=true   growth (default: preallocate
 *        free - MinSystemMemory, §2.3; compute capability 9 here: 1800 MiB);
 *        garbage collection of free regions on (TF's default, §2.4)
 *   JAX  XLA_PYTHON_CLIENT_PREALLOCATE=false  growth (default: 75% of the
 *        total, §2.3); XLA_PYTHON_CLIENT_ALLOCATOR=platform  one driver call
 *        per buffer; no garbage collection (§2.4)
 * Both: BFC's retry-on-failure waits for frees (10 s in TF/XLA, §2.4);
 * the emulation, single-threaded, waits 50 ms. */
#include "emu.h"

#define MAX_REGIONS 64
#define MAX_CHUNKS  4096
#define ROUND	    256ull	   /* §2.1 kMinAllocationSize */
#define MAX_FRAG    (128ull * MiB) /* §2.1 max_internal_fragmentation_bytes */

static CUresult (*mem_alloc)(CUdeviceptr *, size_t);
static CUresult (*mem_free)(CUdeviceptr);
static CUresult (*mem_get_info)(size_t *, size_t *);

struct chunk {
	uintptr_t ptr;
	size_t size;
	int used, region;
};

static struct {
	int tf, growth, platform, gc;
	size_t limit, pool_bytes, curr, in_use;
	struct {
		uintptr_t base;
		size_t size;
	} region[MAX_REGIONS];
	int nregions;
	struct chunk c[MAX_CHUNKS]; /* sorted by address within a region */
	int n;
	unsigned ooms;
	size_t memory_limit; /* TF: the logical device's memory_limit (0: none) */
	int caught;	     /* the program catches its OOM errors */
} B;

static void insert_chunk(int at, struct chunk c)
{
	if (B.n == MAX_CHUNKS)
		abort();
	memmove(&B.c[at + 1], &B.c[at], (B.n - at) * sizeof *B.c);
	B.c[at] = c;
	B.n++;
}

static void remove_chunk(int at)
{
	memmove(&B.c[at], &B.c[at + 1], (B.n - at - 1) * sizeof *B.c);
	B.n--;
}

/* §2.2 Extend: no driver call when the limit forbids; doubling; the 0.9x
 * backpedal on a failed cuMemAlloc_v2. */
static int extend(size_t rounded)
{
	size_t available = (B.limit - B.pool_bytes) / ROUND * ROUND;
	if (rounded > available || B.nregions == MAX_REGIONS)
		return 0;
	int increased = 0;
	while (rounded > B.curr)
		B.curr *= 2, increased = 1;
	size_t bytes = B.curr < available ? B.curr : available;
	CUdeviceptr p;
	while (mem_alloc(&p, bytes) != CUDA_SUCCESS) {
		size_t next = (size_t)(bytes * 0.9) / ROUND * ROUND;
		bytes = next < bytes ? next : bytes - ROUND;
		if (bytes < rounded)
			return 0;
	}
	if (!increased)
		B.curr *= 2;
	B.region[B.nregions] = (typeof(B.region[0])){p, bytes};
	insert_chunk(B.n, (struct chunk){p, bytes, 0, B.nregions});
	B.nregions++;
	B.pool_bytes += bytes;
	return 1;
}

/* §2.4 DeallocateFreeRegions: cuMemFree_v2 of every region with no chunk
 * in use. */
static void free_regions(void)
{
	for (int i = 0; i < B.n; i++) {
		struct chunk *c = &B.c[i];
		int r = c->region;
		if (c->used || c->size != B.region[r].size || !B.region[r].size)
			continue;
		mem_free(B.region[r].base);
		B.pool_bytes -= B.region[r].size;
		B.region[r].size = 0;
		remove_chunk(i--);
	}
}

/* §2.1 best fit, split when chunk >= 2x or the waste >= 128 MiB. */
static int find_chunk(size_t rounded)
{
	int best = -1;
	for (int i = 0; i < B.n; i++)
		if (!B.c[i].used && B.c[i].size >= rounded &&
		    (best < 0 || B.c[i].size < B.c[best].size))
			best = i;
	if (best < 0)
		return -1;
	struct chunk *c = &B.c[best];
	if (c->size >= 2 * rounded || c->size - rounded >= MAX_FRAG) {
		struct chunk rest = {c->ptr + rounded, c->size - rounded, 0, c->region};
		c->size = rounded;
		insert_chunk(best + 1, rest);
	}
	B.c[best].used = 1;
	B.in_use += B.c[best].size;
	return best;
}

/* The largest free chunk (BFC's LargestFreeBlock, JAX's
 * largest_free_block_bytes). */
static size_t largest_free(void)
{
	size_t m = 0;
	for (int i = 0; i < B.n; i++)
		if (!B.c[i].used && B.c[i].size > m)
			m = B.c[i].size;
	return m;
}

/* What the helper records (EMU_HELPER) when the error reaches the top:
 * JAX's JaxRuntimeError with XLA's text and Device.memory_stats(); TF's
 * ResourceExhaustedError with OpKernelContext's text, get_memory_info()'s
 * current and the logical device's memory_limit (framework-view.md §3, §4). */
static void helper_oom(size_t size)
{
	char msg[400];
	if (B.tf) {
		static const char *const names[] = {"current", "peak", "memory_limit"};
		const uint64_t v[] = {B.in_use, B.in_use, B.memory_limit};
		snprintf(msg, sizeof msg,
			 "OOM when allocating tensor with shape[%zu] and type float on "
			 "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
			 size / 4);
		emu_fwoom(1, "tensorflow",
			  "tensorflow.python.framework.errors_impl.ResourceExhaustedError", names,
			  v, B.memory_limit ? 3 : 2, msg);
		return;
	}
	static const char *const names[] = {"bytes_in_use", "bytes_limit", "pool_bytes",
					    "largest_free_block_bytes"};
	const uint64_t v[] = {B.in_use, B.limit, B.pool_bytes, largest_free()};
	snprintf(msg, sizeof msg,
		 "RESOURCE_EXHAUSTED: Out of memory while trying to allocate %zu bytes.", size);
	emu_fwoom(1, "jax", "jax.errors.JaxRuntimeError", names, v, 4, msg);
}

/* AllocateRaw: §2.4's order, then the retry window, then the error. */
static uintptr_t bfc_alloc(size_t size)
{
	if (B.platform) { /* §2.3 platform: one call per buffer */
		CUdeviceptr p;
		if (mem_alloc(&p, size) != CUDA_SUCCESS) {
			printf("EMU RESOURCE_EXHAUSTED: platform allocator, %zu bytes\n", size);
			B.ooms++;
			return 0;
		}
		B.in_use += size;
		insert_chunk(B.n, (struct chunk){p, size, 1, -1});
		return p;
	}
	size_t rounded = size < ROUND ? ROUND : emu_round_up(size, ROUND);
	for (int attempt = 0; attempt < 2; attempt++) {
		int i = find_chunk(rounded);
		if (i < 0 && extend(rounded))
			i = find_chunk(rounded);
		if (i < 0 && B.gc) {
			free_regions();
			if (extend(rounded))
				i = find_chunk(rounded);
		}
		if (i >= 0)
			return B.c[i].ptr;
		emu_sleep_ms(50); /* AllocateRawInternalWithRetry: nothing frees */
	}
	printf("EMU Allocator (GPU_0_bfc) ran out of memory trying to allocate %zu (rounded to "
	       "%zu); in use %zu of a pool of %zu, limit %zu, largest free chunk %zu\n",
	       size, rounded, B.in_use, B.pool_bytes, B.limit, largest_free());
	B.ooms++;
	if (!B.caught)
		helper_oom(size);
	return 0;
}

static void bfc_free(uintptr_t p)
{
	if (!p)
		return;
	for (int i = 0; i < B.n; i++) {
		if (B.c[i].ptr != p)
			continue;
		if (B.platform) {
			mem_free(p);
			B.in_use -= B.c[i].size;
			remove_chunk(i);
			return;
		}
		B.c[i].used = 0;
		B.in_use -= B.c[i].size;
		if (i + 1 < B.n && !B.c[i + 1].used && B.c[i + 1].region == B.c[i].region) {
			B.c[i].size += B.c[i + 1].size;
			remove_chunk(i + 1);
		}
		if (i > 0 && !B.c[i - 1].used && B.c[i - 1].region == B.c[i].region) {
			B.c[i - 1].size += B.c[i].size;
			remove_chunk(i);
		}
		return;
	}
}

/* The process start: the trampolines' dlopen/dlsym, the context, the
 * allocator's options and its memory limit (§2.2, §2.3). No driver
 * allocation before the first buffer. */
static void setup(int tf)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	CUresult (*init)(unsigned) = h ? (CUresult(*)(unsigned))dlsym(h, "cuInit") : NULL;
	CUresult (*dev_get)(CUdevice *, int) =
	    h ? (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet") : NULL;
	CUresult (*retain)(CUcontext *, CUdevice) =
	    h ? (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain") : NULL;
	CUresult (*set_ctx)(CUcontext) =
	    h ? (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent") : NULL;
	mem_alloc = h ? (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2") : NULL;
	mem_free = h ? (CUresult(*)(CUdeviceptr))dlsym(h, "cuMemFree_v2") : NULL;
	mem_get_info = h ? (CUresult(*)(size_t *, size_t *))dlsym(h, "cuMemGetInfo_v2") : NULL;
	CUdevice dev;
	CUcontext ctx;
	if (!init || !mem_alloc || !mem_free || !mem_get_info || init(0) || dev_get(&dev, 0) ||
	    retain(&ctx, dev) || set_ctx(ctx)) {
		fprintf(stderr, "emu-bfc: no driver\n");
		exit(3);
	}
	size_t free_b, total;
	mem_get_info(&free_b, &total);
	B.tf = tf;
	if (tf) {
		const char *g = getenv("TF_FORCE_GPU_ALLOW_GROWTH");
		B.growth = g && !strcmp(g, "true");
		size_t reserve = free_b < 2 * GiB ? 225 * MiB : 1800 * MiB;
		B.limit = free_b - reserve;
		B.gc = 1;
	} else {
		const char *pre = getenv("XLA_PYTHON_CLIENT_PREALLOCATE");
		const char *kind = getenv("XLA_PYTHON_CLIENT_ALLOCATOR");
		B.growth =
		    pre && (!strcmp(pre, "false") || !strcmp(pre, "False") || !strcmp(pre, "0"));
		B.platform = kind && !strcmp(kind, "platform");
		const char *f = getenv("XLA_PYTHON_CLIENT_MEM_FRACTION");
		B.limit = (size_t)(total * (f ? atof(f) : 0.75));
	}
	B.curr = B.growth ? 2 * MiB : B.limit / ROUND * ROUND;
}

/* ---- the workload: jitted steps, the same buffers every step ---- */
static const size_t step_buffers[] = {3 * MiB, 24 * MiB, 24 * MiB, 6 * MiB, 512 * KiB, 4096};
#define NBUF (sizeof step_buffers / sizeof *step_buffers)

static struct emu_kernel k_fusion = {"xla_fusion", 16 * MiB, NULL};
static struct emu_kernel k_gemm = {"cublas_gemm", 12 * MiB, NULL};

static int train(int steps, size_t leak, size_t scale)
{
	uintptr_t params = bfc_alloc(32 * MiB), opt = bfc_alloc(64 * MiB);
	for (int s = 0; s < steps && params && opt; s++) {
		uintptr_t buf[NBUF] = {0};
		for (size_t i = 0; i < NBUF; i++) {
			emu_launch(i % 2 ? &k_gemm : &k_fusion);
			if (!(buf[i] = bfc_alloc(step_buffers[i] * (s == steps - 1 ? scale : 1)))) {
				for (size_t k = 0; k < i; k++) /* the error unwinds the step */
					bfc_free(buf[k]);
				return 1;
			}
		}
		if (leak && !bfc_alloc(leak))
			return 1;
		for (size_t i = 0; i < NBUF; i++)
			bfc_free(buf[i]);
		emu_sleep_ms(s < 3 ? 40 : 1); /* the first steps compile */
	}
	return params && opt ? 0 : 1;
}

static int finish(int rc)
{
	printf("EMU %s %s: limit %zu, pool %zu in %d regions, in use %zu, ooms %u\n",
	       B.tf ? "TF" : "JAX",
	       B.platform ? "platform"
	       : B.growth ? "BFC growth"
			  : "BFC preallocated",
	       B.limit, B.pool_bytes, B.nregions, B.in_use, B.ooms);
	return rc;
}

static int tf_clean(void)
{
	setup(1);
	return finish(train(150, 0, 1));
}

static int tf_leak(void)
{
	setup(1);
	return finish(train(150, 4 * MiB, 1));
}

/* The last step's buffers are 50x: more than the pool. Preallocated, the
 * OOM is inside the region and no driver call fails (§2.6 c). */
static int tf_oom(void)
{
	setup(1);
	return finish(train(20, 0, 50));
}

static int jax_clean(void)
{
	setup(0);
	return finish(train(150, 0, 1));
}

static int jax_leak(void)
{
	setup(0);
	return finish(train(150, 4 * MiB, 1));
}

static int jax_oom(void)
{
	setup(0);
	return finish(train(20, 0, 50));
}

/* §2.6 (d) in growth mode: regions of 2..256 MiB, each holding a few small
 * live buffers after 15 of 16 are dropped; a 300 MiB request fits no free
 * chunk, and Extend's cuMemAlloc_v2 fails down the 0.9x backpedal (JAX: no
 * garbage collection). 490 MiB sit free inside the regions. */
/* TF with tf.config.set_logical_device_configuration(gpu,
 * [LogicalDeviceConfiguration(memory_limit=1024)]): the BFC limit is 1 GiB
 * [that memory_limit becomes BFC's Limit is unverified, framework-view.md
 * §4; TF's GPU guide documents it as the cap]; steps of 60 MiB buffers
 * then one 50x larger: over the limit, on a device with room. */
static int tf_oom_limit(void)
{
	setup(1);
	B.memory_limit = B.limit = GiB;
	B.curr = B.growth ? 2 * MiB : B.limit / ROUND * ROUND;
	return finish(train(20, 0, 50));
}

/* The last step 50x larger, the OOM caught by the program (a smaller batch
 * then): JAX preallocated, the error never reaches the top. */
static int jax_oom_caught(void)
{
	setup(0);
	B.caught = 1;
	int rc = train(20, 0, 50);
	printf("EMU the program caught the OOM (rc %d) and went on with the small batch\n", rc);
	return finish(train(20, 0, 1));
}

static int jax_oom_fragmented(void)
{
	setup(0);
	static uintptr_t t[200];
	for (int i = 0; i < 200; i++)
		if (!(t[i] = bfc_alloc(3 * MiB / 2)))
			return finish(1);
	for (int i = 0; i < 200; i++)
		if (i % 16)
			bfc_free(t[i]);
	return finish(bfc_alloc(300 * MiB) ? 0 : 1);
}

int main(int argc, char **argv)
{
	static const struct emu_scenario s[] = {
	    {"tf-clean", tf_clean, "150 steps"},
	    {"tf-leak", tf_leak, "150 steps keeping 4 MiB each"},
	    {"tf-oom", tf_oom, "a last step 50x larger than the others"},
	    {"jax-clean", jax_clean, "150 steps"},
	    {"jax-leak", jax_leak, "150 steps keeping 4 MiB each"},
	    {"jax-oom", jax_oom, "a last step 50x larger than the others"},
	    {"jax-oom-fragmented", jax_oom_fragmented, "regions mostly free, a request fits none"},
	    {"tf-oom-limit", tf_oom_limit, "memory_limit of 1 GiB, a step over it"},
	    {"jax-oom-caught", jax_oom_caught, "the 50x step's OOM caught, smaller steps then"},
	};
	return emu_main(argc, argv, s, sizeof s / sizeof *s);
}
