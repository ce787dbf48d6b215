#include "preload/ring.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <sys/mman.h>

static int cpu_has_prefetchw(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & bit_PRFCHW);
#else
	return 0;
#endif
}

/* Rings of threads gone, their buffers unmapped, kept for new threads:
 * the flush thread retires a ring and never frees it (free() would take
 * an allocator lock, held for good at exit by a thread a signal
 * interrupted inside malloc: t-life-exit-malloc). Under setup_lock. */
static struct gmt_ring *spare;

struct gmt_ring *gmt_ring_new(size_t cap, int tid)
{
	/* Aligned as the struct's lines are meant to be: calloc's 16 bytes
	 * put the flush thread's per-event store (last_time) in a line the
	 * producer reads per event, ~40 ns a pair (docs/performance.md). */
	struct gmt_ring *r = spare;
	if (r)
		spare = r->next;
	else if (posix_memalign((void **)&r, 64, sizeof *r) != 0)
		return NULL;
	memset(r, 0, sizeof *r);
	/* mmap, not malloc: the ring outlives malloc arenas torn down at exit,
	 * and its pages are only touched as they fill. */
	void *buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		r->next = spare;
		spare = r;
		return NULL;
	}
	r->buf = buf;
	r->cap = cap;
	r->wake_at = cap / 2;
	r->tid = tid;
	r->prefetchw = cpu_has_prefetchw();
	return r;
}

void gmt_ring_free(struct gmt_ring *r)
{
	munmap(r->buf, r->cap);
	free(r);
}

void gmt_ring_retire(struct gmt_ring *r)
{
	munmap(r->buf, r->cap);
	r->buf = NULL;
	r->next = spare;
	spare = r;
}

size_t gmt_ring_drain(struct gmt_ring *r, gmt_ring_fn fn, void *ctx)
{
	/* Pairs with the release stores of head in reserve and commit. */
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->tail;
	size_t n = 0;
	while (tail < head) {
		const struct gmt_ring_hdr *h = (const void *)(r->buf + (tail & (r->cap - 1)));
		if (h->type != GMT_RING_PAD) {
			fn(ctx, r, h);
			n++;
		}
		tail += h->len;
	}
	/* Pairs with the acquire load of tail in gmt_ring_reserve. */
	__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
	return n;
}
