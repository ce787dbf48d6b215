/* Stack interning: equal stacks share one id, shared prefixes share nodes,
 * and every id walks back to exactly the stack it came from. */
#include <stdio.h>
#include <stdlib.h>

#include "preload/stacks.h"
#include "check.h"

static int walks_back(const struct gmt_stacks *s, uint32_t id, const uint64_t *ips, unsigned n)
{
	for (unsigned i = 0; i < n; i++, id = s->parent[id])
		if (!id || s->ip[id] != ips[i])
			return 0;
	return id == 0;
}

int main(void)
{
	struct gmt_stacks s = {0};
	uint64_t a[] = {0x10, 0x20, 0x30, 0x40}; /* innermost first */
	uint64_t b[] = {0x11, 0x20, 0x30, 0x40}; /* same callers, other leaf */
	uint64_t c[] = {0x30, 0x40};		 /* a suffix: a stack of its own */
	uint32_t ia = gmt_stacks_intern(&s, a, 4);
	uint32_t ia2 = gmt_stacks_intern(&s, a, 4);
	uint32_t ib = gmt_stacks_intern(&s, b, 4);
	uint32_t ic = gmt_stacks_intern(&s, c, 2);
	CHECK(ia && ia == ia2, "equal stacks: %u %u", ia, ia2);
	CHECK(ib != ia, "different leaves share an id");
	CHECK(s.n == 5, "nodes: %u, want 5 (40,30,20,10,11)", s.n);
	CHECK(ic == s.parent[s.parent[ia]], "suffix is the shared node");
	CHECK(walks_back(&s, ia, a, 4) && walks_back(&s, ib, b, 4) && walks_back(&s, ic, c, 2),
	      "ids walk back to their stacks");
	CHECK(gmt_stacks_intern(&s, a, 0) == 0, "empty stack is id 0");

	/* Many random stacks: each id walks back to its own. */
	srand(7);
	enum { N = 20000, D = 24 };
	static uint64_t st[N][D];
	static uint32_t ids[N];
	for (int i = 0; i < N; i++) {
		for (int k = 0; k < D; k++)
			st[i][k] = (uint64_t)(rand() % 6) + 0x1000 * (uint64_t)k;
		ids[i] = gmt_stacks_intern(&s, st[i], D);
	}
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad +=
		    !walks_back(&s, ids[i], st[i], D) || gmt_stacks_intern(&s, st[i], D) != ids[i];
	CHECK(bad == 0, "%d of %d random stacks did not round-trip", bad, N);
	printf("%u nodes for %d random stacks of depth %d\n", s.n, N, D);
	gmt_stacks_reset(&s);
	CHECK(s.n == 0, "reset");
	puts(failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
