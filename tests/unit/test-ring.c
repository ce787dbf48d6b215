/* The per-thread ring under a real producer and consumer: every record
 * arrives once, in order, intact, across many wrap-arounds. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/ring.h"

#define RECORDS 2000000u

static struct gmt_ring *ring;
static int done;

struct check {
	uint64_t next_seq;
	uint64_t bad;
};

static void consume(void *ctx, struct gmt_ring *r, const struct gmt_ring_hdr *h)
{
	struct check *c = ctx;
	const uint64_t *body = (const void *)(h + 1);
	size_t words = (h->len - sizeof *h) / 8;
	if (h->type != GMT_RING_EVENT || words < 1 || body[0] != c->next_seq)
		c->bad++;
	for (size_t i = 1; i < words; i++)
		if (body[i] != body[0] * 31 + i)
			c->bad++;
	c->next_seq++;
}

static void *producer(void *arg)
{
	for (uint64_t seq = 0; seq < RECORDS; seq++) {
		size_t words = 1 + seq % 37; /* sizes that do not divide the ring */
		size_t len = gmt_ring_align(sizeof(struct gmt_ring_hdr) + words * 8);
		struct gmt_ring_hdr *h;
		while (!(h = gmt_ring_reserve(ring, len)))
			; /* spin: the consumer frees space */
		h->len = (uint32_t)len;
		h->type = GMT_RING_EVENT;
		h->nframes = 0;
		uint64_t *body = (void *)(h + 1);
		body[0] = seq;
		for (size_t i = 1; i < words; i++)
			body[i] = seq * 31 + i;
		gmt_ring_commit(ring, len);
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int main(void)
{
	ring = gmt_ring_new(1 << 16, 1);
	if (!ring)
		return 1;
	struct check c = {0, 0};
	pthread_t t;
	pthread_create(&t, NULL, producer, NULL);
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		gmt_ring_drain(ring, consume, &c);
	pthread_join(t, NULL);
	gmt_ring_drain(ring, consume, &c);
	printf("records %llu (want %u), bad %llu\n", (unsigned long long)c.next_seq, RECORDS,
	       (unsigned long long)c.bad);
	int ok = c.next_seq == RECORDS && c.bad == 0;

	/* A full ring refuses instead of overwriting. */
	struct gmt_ring *small = gmt_ring_new(4096, 2);
	int accepted = 0;
	int prefetch_bad = 0;
	while (gmt_ring_reserve(small, 64)) {
		/* The lines up to GMT_RING_PREFETCH_AHEAD past the record were asked
		 * for (and no more than one record's worth beyond). */
		uint64_t end = small->head + 64 + GMT_RING_PREFETCH_AHEAD;
		if (small->prefetched < end || small->prefetched > end + 64)
			prefetch_bad++;
		gmt_ring_commit(small, 64);
		accepted++;
	}
	printf("prefetch window wrong after %d reserves\n", prefetch_bad);
	ok &= prefetch_bad == 0;
	printf("a 4096-byte ring took %d 64-byte records before refusing\n", accepted);
	ok &= accepted == 64;
	gmt_ring_free(small);
	gmt_ring_free(ring);
	puts(ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
