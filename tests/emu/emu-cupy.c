/* CuPy's default MemoryPool at the driver level (frameworks.md §3), under
 * an array workload: each iteration makes arrays of a few sizes and drops
 * them, as an elementwise/reduction script does.
 *
 * Route: cupy_backends' runtime module calls the dynamic libcudart
 * (cudaMalloc/cudaFree). [frameworks.md §3 names the calls, not the
 * library's linking; the dynamic runtime is assumed.]
 *
 * Rules (§3): sizes rounded up to 512, no segment packing: a miss is a
 * cudaMalloc of exactly the rounded size; best fit in the stream's arena,
 * any remainder split off; frees merge with neighbours of the same
 * allocation; free_all_blocks cudaFrees every non-split free chunk. OOM:
 * cudaMalloc fails -> free_all_blocks -> cudaMalloc -> gc.collect x2 +
 * free_all_blocks -> cudaMalloc -> OutOfMemoryError. CUPY_GPU_MEMORY_LIMIT
 * is checked before cudaMalloc: no failing driver call. */
#include "emu.h"

#define UNIT	   512ull
#define MAX_CHUNKS 8192

struct chunk {
	uintptr_t ptr, mem; /* mem: the cudaMalloc'd base it belongs to */
	size_t size, mem_size;
	int used;
};

static struct {
	struct chunk c[MAX_CHUNKS];
	int n;
	size_t total, used, limit; /* total_bytes(), used_bytes(), set_limit */
	unsigned ooms;
} P;

static void put(int at, struct chunk c)
{
	if (P.n == MAX_CHUNKS)
		abort();
	memmove(&P.c[at + 1], &P.c[at], (P.n - at) * sizeof *P.c);
	P.c[at] = c;
	P.n++;
}

static void drop(int at)
{
	memmove(&P.c[at], &P.c[at + 1], (P.n - at - 1) * sizeof *P.c);
	P.n--;
}

/* free_all_blocks: every free chunk that is a whole allocation. */
static void free_all_blocks(void)
{
	for (int i = 0; i < P.n; i++)
		if (!P.c[i].used && P.c[i].size == P.c[i].mem_size) {
			cudaFree((void *)P.c[i].ptr);
			P.total -= P.c[i].size;
			drop(i--);
		}
}

/* _try_malloc with the limit check first (_try_block_total_bytes). */
static int try_malloc(size_t size, void **p)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		if (attempt)
			free_all_blocks(); /* (the gc.collect()s free nothing here) */
		if (P.limit && P.total + size > P.limit)
			continue;
		if (cudaMalloc(p, size) == cudaSuccess)
			return 0;
		cudaGetLastError();
	}
	return -1;
}

/* What the helper records (EMU_HELPER) when the error reaches the top:
 * OutOfMemoryError's text (framework-view.md §5) and the pool's figures. */
static void helper_oom(size_t size)
{
	static const char *const names[] = {"used_bytes", "total_bytes", "limit"};
	const uint64_t v[] = {P.used, P.total, P.limit};
	char n[32], m[32], l[32], msg[300];
	if (P.limit)
		snprintf(msg, sizeof msg,
			 "Out of memory allocating %s bytes (allocated so far: %s bytes, limit set "
			 "to: %s bytes).",
			 emu_commas(n, sizeof n, size), emu_commas(m, sizeof m, P.total),
			 emu_commas(l, sizeof l, P.limit));
	else
		snprintf(msg, sizeof msg,
			 "Out of memory allocating %s bytes (allocated so far: %s bytes).",
			 emu_commas(n, sizeof n, size), emu_commas(m, sizeof m, P.total));
	emu_fwoom(1, "cupy", "cupy.cuda.memory.OutOfMemoryError", names, v, 3, msg);
}

static uintptr_t pool_malloc(size_t size)
{
	size = emu_round_up(size ? size : 1, UNIT);
	int best = -1;
	for (int i = 0; i < P.n; i++)
		if (!P.c[i].used && P.c[i].size >= size &&
		    (best < 0 || P.c[i].size < P.c[best].size))
			best = i;
	if (best < 0) {
		void *p;
		if (try_malloc(size, &p)) {
			printf("EMU cupy OutOfMemoryError: Out of memory allocating %zu bytes "
			       "(allocated so far: %zu bytes%s)\n",
			       size, P.total, P.limit ? ", limit set" : "");
			P.ooms++;
			helper_oom(size);
			return 0;
		}
		P.total += size;
		best = P.n;
		put(best, (struct chunk){(uintptr_t)p, (uintptr_t)p, size, size, 0});
	}
	struct chunk *c = &P.c[best];
	if (c->size > size) {
		struct chunk rest = {c->ptr + size, c->mem, c->size - size, c->mem_size, 0};
		c->size = size;
		put(best + 1, rest);
	}
	P.c[best].used = 1;
	P.used += size;
	return P.c[best].ptr;
}

static void pool_free(uintptr_t p)
{
	for (int i = 0; i < P.n; i++) {
		if (P.c[i].ptr != p || !P.c[i].used)
			continue;
		P.c[i].used = 0;
		P.used -= P.c[i].size;
		if (i + 1 < P.n && !P.c[i + 1].used && P.c[i + 1].mem == P.c[i].mem) {
			P.c[i].size += P.c[i + 1].size;
			drop(i + 1);
		}
		if (i > 0 && !P.c[i - 1].used && P.c[i - 1].mem == P.c[i].mem) {
			P.c[i - 1].size += P.c[i].size;
			drop(i);
		}
		return;
	}
}

static struct emu_kernel k_elementwise = {"cupy_elementwise", 4 * MiB, NULL};
static struct emu_kernel k_reduce = {"cupy_reduction", 3 * MiB, NULL};

static void setup(void)
{
	size_t free_b, total;
	cudaFree(NULL);
	cudaMemGetInfo(&free_b, &total);
	const char *l = getenv("CUPY_GPU_MEMORY_LIMIT");
	if (l && l[strlen(l) - 1] == '%')
		P.limit = (size_t)(total * atof(l) / 100);
	else if (l)
		P.limit = strtoull(l, NULL, 0);
}

static int finish(int rc)
{
	printf("EMU cupy pool: total_bytes %zu, used_bytes %zu, limit %zu, ooms %u\n", P.total,
	       P.used, P.limit, P.ooms);
	return rc;
}

/* Arrays of 1.5, 8 and 40 MB (not 512-multiples), then a reduction. */
static int loop(int iters, size_t keep, size_t last_scale)
{
	for (int i = 0; i < iters; i++) {
		size_t scale = i == iters - 1 ? last_scale : 1;
		uintptr_t a = pool_malloc(1500000 * scale), b = pool_malloc(8000000 * scale);
		emu_launch(&k_elementwise);
		uintptr_t c = a && b ? pool_malloc(40000000 * scale) : 0;
		emu_launch(&k_reduce);
		uintptr_t r = c ? pool_malloc(4000) : 0;
		if (!r)
			return 1;
		if (keep && !pool_malloc(keep))
			return 1;
		pool_free(a), pool_free(b), pool_free(c), pool_free(r);
		emu_sleep_ms(i < 2 ? 30 : 1);
	}
	return 0;
}

static int clean(void)
{
	setup();
	return finish(loop(200, 0, 1));
}

static int leak(void)
{
	setup();
	return finish(loop(200, 3000000, 1));
}

/* §3 (c): the last iteration's arrays are 50x (2 GB of them on a 2 GiB device). */
static int oom(void)
{
	setup();
	return finish(loop(20, 0, 50));
}

/* §3 (c) recovered: 20 cached chunks of 40 and 45 MB from a wider pass, freed; a
 * 600 MB array fits none; cudaMalloc fails on a 1 GiB device,
 * free_all_blocks gives them back and the retry succeeds. */
/* §3 (d): the device filled with 100 MiB arrays; each in turn dropped and
 * a 60 MiB array made, which best fit puts into that chunk (the 40 MiB left
 * of each fits no other 60 MiB one): every allocation split, 40 MiB free in
 * each. 150 MiB then fits no chunk, the device has less than 100 MiB left,
 * and free_all_blocks frees nothing: OutOfMemoryError with the pool's free
 * space, all in split chunks, far above the request. */
static int oom_fragmented(void)
{
	setup();
	size_t free_b, total;
	cudaMemGetInfo(&free_b, &total);
	int n = (int)(free_b / (100 * MiB));
	static uintptr_t big[64], small[64];
	n = n > 64 ? 64 : n;
	for (int i = 0; i < n; i++)
		big[i] = pool_malloc(100 * MiB);
	for (int i = 0; i < n; i++) {
		pool_free(big[i]);
		small[i] = pool_malloc(60 * MiB);
	}
	int rc = pool_malloc(150 * MiB) ? 0 : 1;
	printf("EMU %d arrays of 60 MiB in %d split 100 MiB allocations\n", n, n);
	(void)small;
	return finish(rc);
}

static int oom_recovered(void)
{
	static uintptr_t t[10];
	setup();
	loop(10, 0, 1);
	for (int i = 0; i < 10; i++)
		t[i] = pool_malloc(40000000);
	for (int i = 0; i < 10; i++)
		pool_free(t[i]);
	for (int i = 0; i < 10; i++)
		t[i] = pool_malloc(45000000);
	for (int i = 0; i < 10; i++)
		pool_free(t[i]);
	uintptr_t big = pool_malloc(600000000);
	pool_free(big);
	return finish(big ? loop(50, 0, 1) : 1);
}

int main(int argc, char **argv)
{
	static const struct emu_scenario s[] = {
	    {"clean", clean, "200 iterations of arrays made and dropped"},
	    {"leak", leak, "keeps a 3 MB array per iteration"},
	    {"oom", oom, "a last iteration 50x larger (CUPY_GPU_MEMORY_LIMIT: no failing call)"},
	    {"oom-recovered", oom_recovered, "free_all_blocks and the retry succeed"},
	    {"oom-fragmented", oom_fragmented,
	     "split chunks hold the free space, a request fits none"},
	};
	return emu_main(argc, argv, s, sizeof s / sizeof *s);
}
