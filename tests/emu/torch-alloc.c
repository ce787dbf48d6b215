/* PyTorch's allocator backends on the simulated CUDA (torch-alloc.h says
 * which; frameworks.md §1 is the source of every rule below). One stream:
 * the emulated training uses the default stream only, so "best fit per
 * stream" is best fit. */
#include "torch-alloc.h"

/* §1.2 step 1 (roundup_power2_divisions left at its default 0). */
static size_t round_size(size_t size)
{
	return size < K_MIN_BLOCK ? K_MIN_BLOCK : emu_round_up(size, K_MIN_BLOCK);
}

/* §1.2 step 3 */
static size_t allocation_size(size_t size)
{
	if (size <= K_SMALL_SIZE)
		return K_SMALL_BUFFER;
	if (size < K_MIN_LARGE)
		return K_LARGE_BUFFER;
	return emu_round_up(size, K_ROUND_LARGE);
}

/* §1.2 step 6 (max_split_size unset) and §1.5 (expandable: 512 B). */
static int should_split(const struct torch_alloc *a, const struct block *b, size_t size)
{
	size_t remaining = b->size - size;
	if (a->backend == EXPANDABLE || b->seg->pool == SMALL)
		return remaining >= K_MIN_BLOCK;
	return remaining > K_SMALL_SIZE;
}

static struct block *block_new(uintptr_t ptr, size_t size, struct seg *s)
{
	struct block *b = calloc(1, sizeof *b);
	if (!b)
		abort();
	b->ptr = ptr;
	b->size = size;
	b->seg = s;
	return b;
}

/* §1.2 step 4: the smallest free block that fits, same pool (and stream). */
static struct block *best_fit(struct torch_alloc *a, enum pool pool, size_t size)
{
	struct block *best = NULL;
	for (struct seg *s = a->segs; s; s = s->next) {
		if (s->pool != pool)
			continue;
		for (struct block *b = s->head; b; b = b->next)
			if (!b->used && b->size >= size &&
			    (!best || b->size < best->size ||
			     (b->size == best->size && b->ptr < best->ptr)))
				best = b;
	}
	return best;
}

static void seg_link(struct torch_alloc *a, struct seg *s)
{
	s->next = a->segs;
	a->segs = s;
	a->reserved += s->size;
	if (a->reserved > a->max_reserved)
		a->max_reserved = a->reserved;
}

static void seg_unlink(struct torch_alloc *a, struct seg *s)
{
	for (struct seg **p = &a->segs; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	a->reserved -= s->size;
}

/* §1.4: the fraction check comes first and, when it refuses, no cudaMalloc
 * is made. *called says whether the driver was asked. */
static int alloc_block(struct torch_alloc *a, size_t alloc_size, void **p, int *called)
{
	*called = 0;
	if (a->limit && a->reserved + alloc_size > a->limit)
		return -1;
	*called = 1;
	return cudaMalloc(p, alloc_size) == cudaSuccess ? 0 : -1;
}

/* §1.3 release_cached_blocks: cudaFree of every cached segment that is not
 * split (its one block free); a segment with any live block stays. */
static void release_cached_blocks(struct torch_alloc *a)
{
	struct seg *s = a->segs, *next;
	for (; s; s = next) {
		next = s->next;
		if (s->page || s->head->used || s->head->next)
			continue;
		cudaFree((void *)s->head->ptr);
		seg_unlink(a, s);
		free(s->head);
		free(s);
	}
}

/* What the helper records (EMU_HELPER): the observer's record, called with
 * (device, alloc_size, the fraction's bytes or the total, free), with
 * memory_stats() then; the error's when it reaches the top, with
 * DeviceCachingAllocator::malloc's message (framework-view.md §2.2, §2.3). */
static void helper_oom(struct torch_alloc *a, size_t alloc_size, size_t free_b, size_t total)
{
	static const char *const names[] = {"alloc_size",
					    "limit_or_total",
					    "device_free",
					    "reserved_bytes.all.current",
					    "allocated_bytes.all.current",
					    "num_ooms",
					    "num_alloc_retries"};
	const uint64_t v[] = {
	    alloc_size, a->limit ? a->limit : total, free_b, a->reserved, a->allocated,
	    a->ooms,	a->retries + a->ooms};
	emu_fwoom(0, "torch", "", names, v, 7, "");
	char f[5][32], allowed[64] = "", msg[900];
	if (a->limit)
		snprintf(allowed, sizeof allowed, "%s allowed; ",
			 emu_format_size(f[4], sizeof f[4], a->limit));
	snprintf(msg, sizeof msg,
		 "CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacity of %s of "
		 "which %s is free. %sOf the allocated memory %s is allocated by PyTorch, and %s "
		 "is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
		 "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
		 "fragmentation.  See documentation for Memory Management  "
		 "(https://docs.pytorch.org/docs/stable/notes/"
		 "cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)",
		 emu_format_size(f[0], sizeof f[0], alloc_size),
		 emu_format_size(f[1], sizeof f[1], total),
		 emu_format_size(f[2], sizeof f[2], free_b), allowed,
		 emu_format_size(f[3], sizeof f[3], a->allocated),
		 emu_format_size(f[4], sizeof f[4], a->reserved - a->allocated));
	emu_fwoom(1, "torch", "torch.OutOfMemoryError", NULL, NULL, 0, msg);
}

/* §1.4: the OOM sequence. A failed cudaMalloc, cudaGetLastError (clears the
 * sticky error), the cudaFree burst, the retry; on a second failure
 * cudaGetLastError and cudaMemGetInfo for the message, then the raise. */
static struct block *native_segment(struct torch_alloc *a, enum pool pool, size_t size)
{
	size_t alloc_size = allocation_size(size);
	void *p = NULL;
	int called;
	if (alloc_block(a, alloc_size, &p, &called)) {
		if (called)
			cudaGetLastError();
		release_cached_blocks(a);
		if (alloc_block(a, alloc_size, &p, &called)) {
			size_t free_b, total;
			if (called)
				cudaGetLastError();
			cudaMemGetInfo(&free_b, &total);
			printf("EMU torch.OutOfMemoryError: Tried to allocate %.2f MiB "
			       "(reserved %zu, allocated %zu, limit %zu)\n",
			       alloc_size / (double)MiB, a->reserved, a->allocated, a->limit);
			a->ooms++;
			helper_oom(a, alloc_size, free_b, total);
			return NULL;
		}
		a->retries++;
	}
	struct seg *s = calloc(1, sizeof *s);
	if (!s)
		abort();
	s->base = (uintptr_t)p;
	s->size = alloc_size;
	s->pool = pool;
	s->head = block_new(s->base, alloc_size, s);
	seg_link(a, s);
	return s->head;
}

/* §1.5: the pool's one expandable segment, reserved at 1.125x the device. */
static struct seg *expandable_seg(struct torch_alloc *a, enum pool pool)
{
	if (a->expandable[pool])
		return a->expandable[pool];
	struct seg *s = calloc(1, sizeof *s);
	if (!s)
		abort();
	s->pool = pool;
	s->page = pool == SMALL ? K_SMALL_BUFFER : K_LARGE_BUFFER;
	size_t max_handles = (a->total + a->total / 8 + s->page - 1) / s->page;
	if (max_handles > MAX_PAGES)
		max_handles = MAX_PAGES;
	s->reserved = s->page * max_handles;
	s->handles = calloc(max_handles, sizeof *s->handles);
	CUdeviceptr va = 0;
	if (!s->handles || a->drv.reserve(&va, s->reserved, 0, 0, 0) != CUDA_SUCCESS)
		abort();
	s->base = va;
	s->next = a->segs;
	a->segs = s;
	return a->expandable[pool] = s;
}

/* Maps n more pages at the segment's end: cuMemCreate each, cuMemMap each,
 * one cuMemSetAccess; on a failed create the handles made here go back. */
static int expandable_map(struct torch_alloc *a, struct seg *s, size_t n)
{
	size_t first = s->size / s->page;
	if (first + n > s->reserved / s->page)
		return -1;
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .requestedHandleTypes =
					CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
	for (size_t i = 0; i < n; i++)
		if (a->drv.create(&s->handles[first + i], s->page, &prop, 0) != CUDA_SUCCESS) {
			while (i--)
				a->drv.release(s->handles[first + i]);
			return -1;
		}
	for (size_t i = 0; i < n; i++)
		a->drv.map(s->base + (first + i) * s->page, s->page, 0, s->handles[first + i], 0);
	CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0},
				  CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	a->drv.access(s->base + first * s->page, n * s->page, &access, 1);
	s->size += n * s->page;
	a->reserved += n * s->page;
	if (a->reserved > a->max_reserved)
		a->max_reserved = a->reserved;
	return 0;
}

/* §1.5's OOM path (release_cached_blocks -> unmap_block): a synchronize,
 * then cuMemUnmap + cuMemRelease of every fully free page. Here the free
 * pages are at a segment's end (where blocks free up last); the address
 * reservation stays. */
static void expandable_release(struct torch_alloc *a)
{
	cudaDeviceSynchronize();
	for (int p = SMALL; p <= LARGE; p++) {
		struct seg *s = a->expandable[p];
		struct block *tail = s ? s->head : NULL;
		while (tail && tail->next)
			tail = tail->next;
		if (!tail || tail->used)
			continue;
		size_t first = (tail->ptr - s->base + s->page - 1) / s->page;
		for (size_t i = s->size / s->page; i-- > first;) {
			a->drv.unmap(s->base + i * s->page, s->page);
			a->drv.release(s->handles[i]);
			s->size -= s->page;
			a->reserved -= s->page;
			tail->size -= s->page;
		}
		if (tail->size == 0) {
			if (tail->prev)
				tail->prev->next = NULL;
			else
				s->head = NULL;
			free(tail);
		}
	}
}

/* Grows the segment so its free tail holds `size`; returns that tail. */
static struct block *expandable_grow(struct torch_alloc *a, enum pool pool, size_t size)
{
	struct seg *s = expandable_seg(a, pool);
	struct block *tail;
	size_t have, n;
	for (int attempt = 0;; attempt++) {
		tail = s->head;
		while (tail && tail->next)
			tail = tail->next;
		have = tail && !tail->used ? tail->size : 0;
		n = (size - have + s->page - 1) / s->page;
		if (!expandable_map(a, s, n))
			break;
		if (attempt) {
			size_t free_b, total;
			printf("EMU torch.OutOfMemoryError: expandable segment could not grow by "
			       "%zu pages\n",
			       n);
			cudaMemGetInfo(&free_b, &total);
			a->ooms++;
			return NULL;
		}
		expandable_release(a);
		a->retries++;
	}
	if (have) {
		tail->size += n * s->page;
		return tail;
	}
	struct block *b = block_new(s->base + s->size - n * s->page, n * s->page, s);
	b->prev = tail;
	if (tail)
		tail->next = b;
	else
		s->head = b;
	return b;
}

static struct block *cached_malloc(struct torch_alloc *a, size_t orig)
{
	size_t size = round_size(orig);
	enum pool pool = size <= K_SMALL_SIZE ? SMALL : LARGE;
	struct block *b = best_fit(a, pool, size);
	if (!b)
		b = a->backend == EXPANDABLE ? expandable_grow(a, pool, size)
					     : native_segment(a, pool, size);
	if (!b)
		return NULL;
	if (should_split(a, b, size)) {
		struct block *rest = block_new(b->ptr + size, b->size - size, b->seg);
		rest->prev = b;
		rest->next = b->next;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		b->size = size;
	}
	b->used = 1;
	a->allocated += b->size;
	return b;
}

/* §1.6 and §1.7: one driver call per tensor, no rounding. */
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
	struct block *b = block_new((uintptr_t)p, size, NULL);
	b->used = 1;
	a->allocated += size;
	a->reserved += size;
	if (a->reserved > a->max_reserved)
		a->max_reserved = a->reserved;
	return b;
}

struct block *torch_malloc(struct torch_alloc *a, size_t size)
{
	pthread_mutex_lock(&a->lock);
	struct block *b = a->backend == ASYNC || a->backend == NOCACHE ? direct_malloc(a, size)
								       : cached_malloc(a, size);
	pthread_mutex_unlock(&a->lock);
	return b;
}

/* §1.2 step 7: back to the pool, merged with free neighbours; no driver
 * call (the direct backends free at once). */
void torch_free(struct torch_alloc *a, struct block *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&a->lock);
	a->allocated -= b->size;
	if (!b->seg) {
		if (a->backend == ASYNC)
			cudaFreeAsync((void *)b->ptr, NULL);
		else
			cudaFree((void *)b->ptr);
		a->reserved -= b->size;
		free(b);
		pthread_mutex_unlock(&a->lock);
		return;
	}
	b->used = 0;
	struct block *n = b->next;
	if (n && !n->used) {
		b->size += n->size;
		b->next = n->next;
		if (n->next)
			n->next->prev = b;
		free(n);
	}
	struct block *p = b->prev;
	if (p && !p->used) {
		p->size += b->size;
		p->next = b->next;
		if (b->next)
			b->next->prev = p;
		free(b);
	}
	pthread_mutex_unlock(&a->lock);
}

void torch_set_fraction(struct torch_alloc *a, double fraction)
{
	a->limit = (size_t)(a->total * fraction);
}

/* Which backend, from the variables PyTorch reads (§1.5-1.7), and the
 * driver entry points the expandable segments use (§0.1). */
void torch_init(struct torch_alloc *a)
{
	memset(a, 0, sizeof *a);
	pthread_mutex_init(&a->lock, NULL);
	const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
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
#undef ENTRY
}

void torch_print_stats(struct torch_alloc *a)
{
	static const char *const names[] = {"native", "expandable", "cudaMallocAsync", "nocache"};
	printf(
	    "EMU backend %s: memory_reserved %zu, max_memory_reserved %zu, memory_allocated %zu, "
	    "num_alloc_retries %u, ooms %u\n",
	    names[a->backend], a->reserved, a->max_reserved, a->allocated, a->retries, a->ooms);
}
