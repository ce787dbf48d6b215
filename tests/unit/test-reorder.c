/* The reorder queue gives exactly the order of the plain min-heap it
 * replaced: the least (time, index) event waiting, popped once it is
 * window_ns older than the newest or more than `limit` wait. Checked
 * against a linear-scan reference on interleaved thread batches, with a
 * small limit so the sorted runs wrap around and grow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/replay.h"

enum { EVENTS = 60000, LIMIT = 3000, THREADS = 3 };

static struct gmt_event ref_q[LIMIT + 2];
static size_t ref_n;

static int ref_before(const struct gmt_event *a, const struct gmt_event *b)
{
	return a->time_ns != b->time_ns ? a->time_ns < b->time_ns : a->index < b->index;
}

static int ref_pop(struct gmt_event *out, uint64_t newest, uint64_t window, int drain)
{
	if (!ref_n)
		return 0;
	size_t best = 0;
	for (size_t i = 1; i < ref_n; i++)
		if (ref_before(&ref_q[i], &ref_q[best]))
			best = i;
	if (!drain && ref_n <= LIMIT && newest - ref_q[best].time_ns < window)
		return 0;
	*out = ref_q[best];
	ref_q[best] = ref_q[--ref_n];
	return 1;
}

/* The next event that may go (drain: any event), copied out: 0 when none. */
static int reorder_pop(struct reorder *q, struct gmt_event *out, bool drain)
{
	const struct gmt_event *e = reorder_next(q, drain);
	if (!e)
		return 0;
	*out = *e;
	return 1;
}

int main(void)
{
	struct reorder q;
	const uint64_t window = 50000;
	reorder_init(&q, LIMIT, window);
	uint64_t clock[THREADS] = {0}, newest = 0;
	unsigned seed = 12345;
	long checked = 0, failures = 0;
	for (uint64_t i = 0; i < EVENTS;) {
		/* A batch of one thread, in its own time order. */
		seed = seed * 1103515245u + 12345u;
		unsigned tid = (seed >> 16) % THREADS, len = 1 + (seed >> 8) % 5000;
		for (unsigned k = 0; k < len && i < EVENTS; k++, i++) {
			seed = seed * 1103515245u + 12345u;
			clock[tid] += (seed >> 20) % 40; /* equal times happen too */
			struct gmt_event e = {.index = i, .time_ns = clock[tid], .tid = 100 + tid};
			reorder_push(&q, &e);
			ref_q[ref_n++] = e;
			if (e.time_ns > newest)
				newest = e.time_ns;
			for (int drain = 0;; drain = 0) {
				struct gmt_event a, b;
				/* both ways out: the copy, and the pointer the replay uses */
				const struct gmt_event *p = i & 1 ? reorder_next(&q, drain)
							    : reorder_pop(&q, &a, drain) ? &a
											 : NULL;
				int got = p != NULL, want = ref_pop(&b, newest, window, 0);
				if (got != want ||
				    (got && (p->index != b.index || p->time_ns != b.time_ns)))
					failures++;
				if (!got || !want)
					break;
				checked++;
			}
		}
	}
	struct gmt_event a, b;
	for (;;) {
		int got = reorder_pop(&q, &a, 1), want = ref_pop(&b, newest, window, 1);
		if (got != want || (got && a.index != b.index))
			failures++;
		if (!got || !want)
			break;
		checked++;
	}
	reorder_free(&q);
	printf("%ld events compared, %ld differences\n", checked, failures);
	puts(failures || checked != EVENTS ? "FAIL" : "PASS");
	return failures || checked != EVENTS;
}
