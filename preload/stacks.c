#include "preload/stacks.h"

#include <string.h>

#include "preload/mem.h"
/* Out of memory, an entry is left out of its table (and freed): the
 * tracer goes on. uthash's default exit(-1) killed the program, and from
 * the core it would now call our own exit hook. Its memory, like all of
 * this table's, is never malloc's (preload/mem.h): the final flush
 * interns stacks. */
#define HASH_NONFATAL_OOM	 1
#define uthash_nonfatal_oom(obj) gmt_mem_free((obj), sizeof *(obj))
#define uthash_malloc(sz)	 gmt_mem_alloc(sz)
#define uthash_free(ptr, sz)	 gmt_mem_free((ptr), (sz))
#include <uthash.h>

struct edge_key {
	uint64_t ip;
	uint32_t parent;
	uint32_t zero; /* keeps the key free of padding bytes */
};

struct gmt_edge {
	struct edge_key key;
	uint32_t id;
	UT_hash_handle hh;
};

/* Whole stacks seen before, by a hash of their ips: most events repeat a
 * stack, and one lookup beats a walk down the tree. */
struct gmt_whole {
	uint64_t hash;
	uint32_t leaf;
	UT_hash_handle hh;
};

/* A program allocates from a few stacks over and over: comparing the
 * ips with a copy of a recent stack is cheaper than hashing them and
 * walking the tree to confirm. Direct-mapped by the innermost ip. */
enum { MEMO_SLOTS = 16, MEMO_MAX_FRAMES = 256 };

struct gmt_stack_memo {
	uint32_t n, leaf;
	uint64_t ips[MEMO_MAX_FRAMES];
};

static struct gmt_stack_memo *memo_slot(struct gmt_stacks *s, const uint64_t *ips, unsigned n)
{
	if (n > MEMO_MAX_FRAMES)
		return NULL;
	if (!s->memo && !(s->memo = gmt_mem_alloc(MEMO_SLOTS * sizeof *s->memo)))
		return NULL;
	/* Call sites a few bytes apart must land apart: mix all the bits. */
	uint64_t h = ips[0] ^ n;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return &s->memo[h % MEMO_SLOTS];
}

static uint64_t hash_ips(const uint64_t *ips, unsigned n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (unsigned i = 0; i < n; i++) {
		h ^= ips[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h;
}

static int chain_equals(const struct gmt_stacks *s, uint32_t leaf, const uint64_t *ips, unsigned n)
{
	uint32_t node = leaf;
	for (unsigned i = 0; i < n; i++) {
		if (!node || s->ip[node] != ips[i])
			return 0;
		node = s->parent[node];
	}
	return node == 0;
}

static uint32_t add_node(struct gmt_stacks *s, uint32_t parent, uint64_t ip)
{
	if (s->n + 1 >= s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 4096;
		/* Both or neither: a block's size is told when it is freed. */
		uint32_t *p = gmt_mem_alloc(cap * sizeof *p);
		uint64_t *q = gmt_mem_alloc(cap * sizeof *q);
		if (!p || !q) {
			gmt_mem_free(p, cap * sizeof *p);
			gmt_mem_free(q, cap * sizeof *q);
			return 0;
		}
		if (s->cap) {
			memcpy(p, s->parent, s->cap * sizeof *p);
			memcpy(q, s->ip, s->cap * sizeof *q);
		}
		gmt_mem_free(s->parent, s->cap * sizeof *p);
		gmt_mem_free(s->ip, s->cap * sizeof *q);
		s->parent = p;
		s->ip = q;
		s->cap = cap;
	}
	struct gmt_edge *e = gmt_mem_alloc(sizeof *e);
	if (!e)
		return 0;
	uint32_t id = ++s->n;
	s->parent[id] = parent;
	s->ip[id] = ip;
	e->key.ip = ip;
	e->key.parent = parent;
	e->id = id;
	HASH_ADD(hh, s->edges, key, sizeof e->key, e);
	return id;
}

static uint32_t intern_slow(struct gmt_stacks *s, const uint64_t *ips, unsigned n);

uint32_t gmt_stacks_intern(struct gmt_stacks *s, const uint64_t *ips, unsigned n)
{
	if (!n)
		return 0;
	struct gmt_stack_memo *m = memo_slot(s, ips, n);
	if (m && m->n == n && memcmp(m->ips, ips, n * sizeof *ips) == 0)
		return m->leaf;
	uint32_t leaf = intern_slow(s, ips, n);
	if (m && leaf) {
		m->n = n;
		m->leaf = leaf;
		memcpy(m->ips, ips, n * sizeof *ips);
	}
	return leaf;
}

static uint32_t intern_slow(struct gmt_stacks *s, const uint64_t *ips, unsigned n)
{
	uint64_t h = hash_ips(ips, n);
	struct gmt_whole *w;
	HASH_FIND(hh, s->wholes, &h, sizeof h, w);
	if (w && chain_equals(s, w->leaf, ips, n))
		return w->leaf;

	uint32_t node = 0;
	for (unsigned i = n; i-- > 0;) { /* root (outermost) first */
		struct edge_key k = {ips[i], node, 0};
		struct gmt_edge *e;
		HASH_FIND(hh, s->edges, &k, sizeof k, e);
		node = e ? e->id : add_node(s, node, ips[i]);
		if (!node)
			return 0;
	}
	if (!w && (w = gmt_mem_alloc(sizeof *w))) {
		w->hash = h;
		w->leaf = node;
		HASH_ADD(hh, s->wholes, hash, sizeof w->hash, w);
	}
	return node;
}

void gmt_stacks_reset(struct gmt_stacks *s)
{
	struct gmt_edge *e, *et;
	HASH_ITER(hh, s->edges, e, et)
	{
		HASH_DEL(s->edges, e);
		gmt_mem_free(e, sizeof *e);
	}
	struct gmt_whole *w, *wt;
	HASH_ITER(hh, s->wholes, w, wt)
	{
		HASH_DEL(s->wholes, w);
		gmt_mem_free(w, sizeof *w);
	}
	gmt_mem_free(s->parent, s->cap * sizeof *s->parent);
	gmt_mem_free(s->ip, s->cap * sizeof *s->ip);
	gmt_mem_free(s->memo, MEMO_SLOTS * sizeof *s->memo);
	memset(s, 0, sizeof *s);
}
