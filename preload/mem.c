/* mmap-backed memory for the flush thread's tables (preload/mem.h): sizes
 * up to 16 KiB in power-of-two classes carved from 256 KiB slabs, each
 * class with a free list; larger ones mapped whole (and moved with mremap
 * when they grow). Nothing goes back to the system but the large blocks. */
#include "preload/mem.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { MIN_SHIFT = 5, MAX_SHIFT = 14, SLAB = 256 << 10 };

static struct {
	void *free[MAX_SHIFT + 1];
	unsigned char *slab;
	size_t slab_left;
} pool;

static unsigned class_of(size_t n)
{
	unsigned s = MIN_SHIFT;
	while (s <= MAX_SHIFT && ((size_t)1 << s) < n)
		s++;
	return s;
}

static size_t pages(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

static void *map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void *gmt_mem_alloc(size_t n)
{
	unsigned c = class_of(n ? n : 1);
	if (c > MAX_SHIFT)
		return map(pages(n));
	size_t size = (size_t)1 << c;
	void *p = pool.free[c];
	if (p) {
		pool.free[c] = *(void **)p;
		return memset(p, 0, size);
	}
	if (pool.slab_left < size) { /* the old slab's tail, < 16 KiB, stays unused */
		if (!(pool.slab = map(SLAB)))
			return pool.slab_left = 0, NULL;
		pool.slab_left = SLAB;
	}
	p = pool.slab; /* fresh from mmap: zero */
	pool.slab += size;
	pool.slab_left -= size;
	return p;
}

void gmt_mem_free(void *p, size_t n)
{
	if (!p)
		return;
	unsigned c = class_of(n ? n : 1);
	if (c > MAX_SHIFT) {
		munmap(p, pages(n));
		return;
	}
	*(void **)p = pool.free[c];
	pool.free[c] = p;
}

void *gmt_mem_grow(void *p, size_t old, size_t n)
{
	if (!p)
		return gmt_mem_alloc(n);
	if (class_of(old ? old : 1) > MAX_SHIFT && class_of(n) > MAX_SHIFT) {
		/* pages past the old end come zeroed */
		void *q = mremap(p, pages(old), pages(n), MREMAP_MAYMOVE);
		if (q == MAP_FAILED)
			return NULL;
		if (n < old)
			memset((char *)q + n, 0, pages(n) - n);
		return q;
	}
	void *q = gmt_mem_alloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	gmt_mem_free(p, old);
	return q;
}

void *gmt_arena_alloc(struct gmt_arena *a, size_t n)
{
	enum { ARENA_MAP = 64 << 10 };
	n = (n + 15) & ~(size_t)15;
	if (n > ARENA_MAP / 4)
		return map(pages(n));
	if (a->left < n) { /* the old map's tail stays unused */
		if (!(a->next = map(ARENA_MAP)))
			return a->left = 0, NULL;
		a->left = ARENA_MAP;
	}
	void *p = a->next;
	a->next += n;
	a->left -= n;
	return p;
}

char *gmt_arena_strdup(struct gmt_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = gmt_arena_alloc(a, n);
	return d ? memcpy(d, s, n) : NULL;
}
