/* Stack interning, heaptrack style: stacks form a tree of (parent, ip)
 * nodes, each node is written to the trace once, and an event carries only
 * the id of its innermost node. Used by the flush thread alone: no locks. */
#ifndef GMT_STACKS_H
#define GMT_STACKS_H

#include <stdint.h>

struct gmt_edge;
struct gmt_whole;
struct gmt_stack_memo;

struct gmt_stacks {
	uint32_t n, cap; /* nodes 1..n; 0 is the empty stack */
	uint32_t *parent;
	uint64_t *ip;
	uint32_t emitted; /* nodes 1..emitted are in the trace */
	struct gmt_edge *edges;
	struct gmt_whole *wholes;
	struct gmt_stack_memo *memo; /* the last stacks seen, compared whole */
};

/* ips innermost first. Returns the leaf id, or 0 for an empty stack or when
 * memory runs out (the event then has no stack, and is still recorded). */
uint32_t gmt_stacks_intern(struct gmt_stacks *s, const uint64_t *ips, unsigned n);
void gmt_stacks_reset(struct gmt_stacks *s);

#endif
