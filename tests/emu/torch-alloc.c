/* PyTorch's allocator backends on the simulated CUDA (torch-alloc.h says
 * which). The caching allocator's rules are the product's model
 * (model/torchalloc.c); this file is its driver: the calls PyTorch makes
 * for what the model asks (frameworks.md §1.4, §1.5), and the two
 * backends that bypass the cache. One stream: the emulated training uses
 * the default stream only. */
#include "gpumemtrace/format.h"

#include "torch-alloc.h"
#include "torch-history.h"

static void history_snapshot(struct torch_alloc *a, unsigned reason);

/* ---- the model's driver: native segments ---- */

static int drv_malloc(void *ctx, uint64_t size, uint64_t *ptr)
{
	void *p = NULL;
	(void)ctx;
	if (cudaMalloc(&p, size) != cudaSuccess) {
		cudaGetLastError(); /* §1.4: clears the sticky error */
		return -1;
	}
	*ptr = (uintptr_t)p;
	return 0;
}

static void drv_free(void *ctx, uint64_t ptr, uint64_t size)
{
	(void)ctx;
	(void)size;
	cudaFree((void *)(uintptr_t)ptr);
}

static uint64_t drv_device_free(void *ctx)
{
	struct torch_alloc *a = ctx;
	size_t free_b = 0, total = 0;
	cudaMemGetInfo(&free_b, &total);
	a->oom_free = free_b;
	a->oom_total = total;
	return free_b;
}

/* ---- expandable segments (§1.5) ---- */

static int drv_reserve(void *ctx, uint64_t size, uint64_t *va)
{
	struct torch_alloc *a = ctx;
	CUdeviceptr p = 0;
	if (a->drv.reserve(&p, size, 0, 0, 0) != CUDA_SUCCESS)
		return -1;
	*va = p;
	return 0;
}

/* cuMemCreate each page, cuMemMap each, one cuMemSetAccess; a failed
 * create gives back the handles made here. */
static int drv_map(void *ctx, uint64_t va, uint64_t page, uint64_t n)
{
	struct torch_alloc *a = ctx;
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .requestedHandleTypes =
					CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
	if (a->npages + n > MAX_PAGES)
		return -1;
	size_t first = a->npages;
	for (uint64_t i = 0; i < n; i++) {
		CUmemGenericAllocationHandle h;
		if (a->drv.create(&h, page, &prop, 0) != CUDA_SUCCESS) {
			while (a->npages > first)
				a->drv.release(a->pages[--a->npages].h);
			return -1;
		}
		a->pages[a->npages].va = va + i * page;
		a->pages[a->npages++].h = h;
	}
	for (uint64_t i = 0; i < n; i++)
		a->drv.map(va + i * page, page, 0, a->pages[first + i].h, 0);
	CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0},
				  CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	a->drv.access(va, n * page, &access, 1);
	return 0;
}

/* unmapHandles: a synchronize, then cuMemUnmap + cuMemRelease per page. */
static void drv_unmap(void *ctx, uint64_t va, uint64_t page, uint64_t n)
{
	struct torch_alloc *a = ctx;
	cudaDeviceSynchronize();
	for (uint64_t i = 0; i < n; i++)
		for (size_t k = 0; k < a->npages; k++)
			if (a->pages[k].va == va + i * page) {
				a->drv.unmap(va + i * page, page);
				a->drv.release(a->pages[k].h);
				a->pages[k] = a->pages[--a->npages];
				break;
			}
}

static void drv_release(void *ctx, uint64_t va, uint64_t size)
{
	struct torch_alloc *a = ctx;
	if (a->drv.addr_free)
		a->drv.addr_free(va, size);
}

/* ---- the backends that bypass the cache (§1.6, §1.7) ---- */

/* One driver call per tensor, no rounding. */
static struct block *direct_malloc(struct torch_alloc *a, size_t size)
{
	void *p = NULL;
	cudaError_t e =
	    a->backend == ASYNC ? cudaMallocAsync(&p, size, NULL) : cudaMalloc(&p, size);
	if (e != cudaSuccess) {
		size_t free_b, total;
		cudaGetLastError();
		cudaMemGetInfo(&free_b, &total);
		printf("EMU torch.OutOfMemoryError: Tried to allocate %zu bytes\n", size);
		a->ooms++;
		return NULL;
	}
	struct block *b = calloc(1, sizeof *b);
	if (!b)
		abort();
	b->ptr = (uintptr_t)p;
	b->size = size;
	a->allocated += size;
	a->reserved += size;
	if (a->reserved > a->max_reserved)
		a->max_reserved = a->reserved;
	return b;
}

/* What the helper records (EMU_HELPER): the observer's record, called with
 * (device, alloc_size, the fraction's bytes or the total, free), with
 * memory_stats() then; the error's when it reaches the top, with
 * DeviceCachingAllocator::malloc's message (framework-view.md §2.2, §2.3). */
static void helper_oom(struct torch_alloc *a, uint64_t alloc_size)
{
	static const char *const names[] = {"alloc_size",
					    "limit_or_total",
					    "device_free",
					    "reserved_bytes.all.current",
					    "allocated_bytes.all.current",
					    "num_ooms",
					    "num_alloc_retries"};
	const struct ta_stats *s = ta_stats(a->model);
	const uint64_t limit = ta_config(a->model)->allowed_max;
	const uint64_t v[] = {
	    alloc_size,	 limit ? limit : a->oom_total, a->oom_free, s->reserved, s->allocated,
	    s->num_ooms, s->num_alloc_retries};
	emu_fwoom(0, "torch", "", names, v, 7, "");
	char f[5][32], allowed[64] = "", msg[900];
	if (limit)
		snprintf(allowed, sizeof allowed, "%s allowed; ",
			 emu_format_size(f[4], sizeof f[4], limit));
	snprintf(msg, sizeof msg,
		 "CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacity of %s of "
		 "which %s is free. %sOf the allocated memory %s is allocated by PyTorch, and %s "
		 "is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
		 "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
		 "fragmentation.  See documentation for Memory Management  "
		 "(https://docs.pytorch.org/docs/stable/notes/"
		 "cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)",
		 emu_format_size(f[0], sizeof f[0], alloc_size),
		 emu_format_size(f[1], sizeof f[1], a->oom_total),
		 emu_format_size(f[2], sizeof f[2], a->oom_free), allowed,
		 emu_format_size(f[3], sizeof f[3], s->allocated),
		 emu_format_size(f[4], sizeof f[4], s->reserved - s->allocated));
	emu_fwoom(1, "torch", "torch.OutOfMemoryError", NULL, NULL, 0, msg);
}

static struct block *cached_malloc(struct torch_alloc *a, size_t size)
{
	uint64_t ptr;
	int rc = ta_malloc(a->model, size, 0, &ptr);
	if (rc == -2)
		abort();
	if (rc) {
		const struct ta_stats *s = ta_stats(a->model);
		const struct ta_config *c = ta_config(a->model);
		printf("EMU torch.OutOfMemoryError: Tried to allocate %.2f MiB "
		       "(reserved %llu, allocated %llu, limit %llu)\n",
		       ta_allocation_size(c, ta_round_size(c, size)) / (double)MiB,
		       (unsigned long long)s->reserved, (unsigned long long)s->allocated,
		       (unsigned long long)c->allowed_max);
		helper_oom(a, ta_allocation_size(c, ta_round_size(c, size)));
		history_snapshot(a, GMT_FWSNAP_WHY_OOM); /* the observer's _snapshot() */
		return NULL;
	}
	struct block *b = calloc(1, sizeof *b);
	if (!b)
		abort();
	b->ptr = (uintptr_t)ptr;
	b->size = size;
	return b;
}

struct block *torch_malloc(struct torch_alloc *a, size_t size)
{
	pthread_mutex_lock(&a->lock);
	struct block *b = a->model ? cached_malloc(a, size) : direct_malloc(a, size);
	pthread_mutex_unlock(&a->lock);
	return b;
}

/* Back to the cache (no driver call), or the direct backends' free. */
void torch_free(struct torch_alloc *a, struct block *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&a->lock);
	if (a->model) {
		ta_free(a->model, b->ptr);
	} else {
		a->allocated -= b->size;
		if (a->backend == ASYNC)
			cudaFreeAsync((void *)b->ptr, NULL);
		else
			cudaFree((void *)b->ptr);
		a->reserved -= b->size;
	}
	free(b);
	pthread_mutex_unlock(&a->lock);
}

void torch_set_fraction(struct torch_alloc *a, double fraction)
{
	if (a->model)
		ta_set_allowed(a->model, (uint64_t)(a->total * fraction));
}

/* ---- the history (EMU_HISTORY: torch-history.h) ---- */

static void hist_trace(void *ctx, enum ta_action action, uint64_t addr, uint64_t size,
		       uint64_t stream)
{
	(void)ctx;
	emu_history_entry((unsigned)action, addr, size, stream); /* GMT_FW_* numbering */
}

struct hist_walk {
	struct emu_hist_block *v;
	size_t n, cap;
	bool gap; /* an expandable segment's unmapped pages came before */
};

/* A snapshot lists an expandable segment's mapped ranges as its segments. */
static void hist_block(void *ctx, const struct ta_block_info *b)
{
	struct hist_walk *w = ctx;
	if (b->expandable && !b->mapped) {
		w->gap = true;
		return;
	}
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 256;
		if (!(w->v = realloc(w->v, w->cap * sizeof(*w->v))))
			abort();
	}
	w->v[w->n++] =
	    (struct emu_hist_block){b->ptr,    b->size,	      b->requested,
				    b->stream, b->allocated,  b->pending,
				    b->small,  b->expandable, b->segment_start || w->gap};
	w->gap = false;
}

/* The allocator's lock held. */
static void history_snapshot(struct torch_alloc *a, unsigned reason)
{
	if (!a->model || !emu_history_on())
		return; /* cudaMallocAsync and no caching keep no history */
	struct hist_walk w = {0};
	ta_walk(a->model, hist_block, &w);
	emu_history_write(reason, w.v, w.n, getenv("PYTORCH_CUDA_ALLOC_CONF"), 100000);
	free(w.v);
}

void torch_history_write(struct torch_alloc *a)
{
	pthread_mutex_lock(&a->lock);
	history_snapshot(a, GMT_FWSNAP_WHY_EXIT);
	pthread_mutex_unlock(&a->lock);
}

/* Which backend, from the variables PyTorch reads (§1.5-1.7), and the
 * driver entry points the expandable segments use (§0.1). */
void torch_init(struct torch_alloc *a)
{
	memset(a, 0, sizeof *a);
	pthread_mutex_init(&a->lock, NULL);
	/* the older name first, as c10/cuda/CUDAAllocatorConfig.h reads them */
	const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
	if (!conf)
		conf = getenv("PYTORCH_ALLOC_CONF");
	if (getenv("PYTORCH_NO_CUDA_MEMORY_CACHING"))
		a->backend = NOCACHE;
	else if (conf && strstr(conf, "backend:cudaMallocAsync"))
		a->backend = ASYNC;
	else if (conf && strstr(conf, "expandable_segments:True"))
		a->backend = EXPANDABLE;
	size_t free_b;
	cudaFree(NULL); /* lazy init: the context */
	cudaMemGetInfo(&free_b, &a->total);
	if (a->backend == ASYNC) { /* §1.6: the pool keeps everything it is given back */
		cudaMemPool_t pool;
		cuuint64_t max = UINT64_MAX;
		int one = 1;
		cudaDeviceGetDefaultMemPool(&pool, 0);
		cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &max);
		cudaMemPoolSetAttribute(pool, cudaMemPoolReuseFollowEventDependencies, &one);
		cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &one);
		cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &one);
	}
	if (a->backend == ASYNC || a->backend == NOCACHE)
		return;
	struct ta_config c;
	char err[160];
	ta_config_default(&c);
	if (conf && ta_config_parse(&c, conf, err, sizeof err))
		fprintf(stderr, "EMU PYTORCH_CUDA_ALLOC_CONF: %s\n", err);
	c.device_total = a->total;
	struct ta_backend be = {.ctx = a,
				.malloc = drv_malloc,
				.free = drv_free,
				.reserve = drv_reserve,
				.map = drv_map,
				.unmap = drv_unmap,
				.release = drv_release,
				.device_free = drv_device_free,
				.trace = emu_history_on() ? hist_trace : NULL};
	if (!(a->model = ta_new(&c, &be)))
		abort();
	if (a->backend != EXPANDABLE)
		return;
	enum cudaDriverEntryPointQueryResult q;
#define ENTRY(field, name)                                                                         \
	cudaGetDriverEntryPointByVersion(name, (void **)&a->drv.field, 12000, 0, &q)
	ENTRY(reserve, "cuMemAddressReserve");
	ENTRY(create, "cuMemCreate");
	ENTRY(map, "cuMemMap");
	ENTRY(access, "cuMemSetAccess");
	ENTRY(unmap, "cuMemUnmap");
	ENTRY(release, "cuMemRelease");
	ENTRY(addr_free, "cuMemAddressFree");
#undef ENTRY
}

void torch_print_stats(struct torch_alloc *a)
{
	static const char *const names[] = {"native", "expandable", "cudaMallocAsync", "nocache"};
	size_t reserved = a->reserved, max_reserved = a->max_reserved, allocated = a->allocated;
	unsigned retries = 0, ooms = a->ooms;
	if (a->model) {
		const struct ta_stats *s = ta_stats(a->model);
		reserved = s->reserved;
		max_reserved = s->max_reserved;
		allocated = s->allocated;
		retries = (unsigned)s->num_alloc_retries;
		ooms = (unsigned)s->num_ooms;
	}
	printf(
	    "EMU backend %s: memory_reserved %zu, max_memory_reserved %zu, memory_allocated %zu, "
	    "num_alloc_retries %u, ooms %u\n",
	    names[a->backend], reserved, max_reserved, allocated, retries, ooms);
}
