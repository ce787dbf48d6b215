/* Live-set replay and event reordering: see replay.h. */
#include <stdint.h>
#include <string.h>

/* Every key in these tables is a uint64_t address or handle: one multiply
 * mixes it (aligned addresses included) for a fraction of Jenkins' cost.
 * Only this file may hash into them (others use replay_find). */
#define HASH_FUNCTION(keyptr, keylen, hashv)                                                       \
	do {                                                                                       \
		uint64_t k_;                                                                       \
		memcpy(&k_, keyptr, sizeof(k_));                                                   \
		(hashv) = (unsigned)((k_ * 0x9e3779b97f4a7c15ull) >> 32);                          \
	} while (0)

#include "analysis/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/api.h"
#include "common/text.h"
#include "analysis/diag.h"
#include "reader/reader.h"
#include "reader/xalloc.h"

const char *const bucket_key[BK_COUNT] = {
    "device", "managed", "pinned_host", "registered_host", "reserved_va",
    "arrays", "ipc",	 "vmm_host",	"pools",
};
const char *const bucket_label[BK_COUNT] = {
    "device", "managed",      "pinned host",	    "registered host", "address space",
    "arrays", "IPC (opened)", "mapped host memory", "memory pools",
};

void replay_init(struct replay *rp)
{
	memset(rp, 0, sizeof(*rp));
}

void replay_free(struct replay *rp)
{
	GMT_EACH_SPACE(s)
	{
		struct rp_live *l, *tmp;
		RP_EACH(rp, s, l, tmp)
		{
			free(l);
		}
		free(rp->tables[s].slots);
	}
	while (rp->spare) {
		struct rp_live *l = rp->spare;
		rp->spare = l->next;
		free(l);
	}
	struct rp_map *m, *mt;
	HASH_ITER(hh, rp->maps, m, mt)
	{
		HASH_DEL(rp->maps, m);
		free(m);
	}
	free(rp->devs);
	memset(rp, 0, sizeof(*rp));
}

struct rp_dev *replay_dev(struct replay *rp, int64_t ordinal)
{
	if (rp->ndevs && rp->devs[0].ordinal == ordinal)
		return &rp->devs[0]; /* one device, most often */
	for (size_t i = 0; i < rp->ndevs; i++)
		if (rp->devs[i].ordinal == ordinal)
			return &rp->devs[i];
	if (rp->ndevs == rp->devs_cap) {
		size_t cap = rp->devs_cap ? 2 * rp->devs_cap : 8;
		rp->devs = xrealloc(rp->devs, cap * sizeof(*rp->devs));
		rp->devs_cap = cap;
	}
	struct rp_dev *d = &rp->devs[rp->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	return d;
}

static void level_add(struct rp_level *lv, uint64_t bytes, uint64_t time, uint64_t seq)
{
	lv->bytes += bytes;
	lv->count++;
	if (lv->bytes > lv->peak) {
		lv->peak = lv->bytes;
		lv->peak_time_ns = time;
		lv->peak_seq = seq;
	}
}

static void level_sub(struct rp_level *lv, uint64_t bytes)
{
	lv->bytes -= bytes < lv->bytes ? bytes : lv->bytes;
	if (lv->count)
		lv->count--;
}

/* Whether rp->on_change is told of this change (d: l's device level). */
static inline bool tell(const struct replay *rp, const struct rp_live *l, int add,
			const struct rp_level *d)
{
	return rp->on_change &&
	       !(rp->on_change_peak_ends && (add || !d || !d->peak_seq || l->seq > d->peak_seq));
}

static inline void levels(struct replay *rp, const struct rp_live *l, int add, uint64_t time,
			  struct rp_level *d)
{
	struct rp_level *b = &rp->buckets[l->bucket];
	if (add) {
		level_add(b, l->size, time, rp->seq);
		if (d)
			level_add(d, l->size, time, rp->seq);
	} else {
		level_sub(b, l->size);
		if (d)
			level_sub(d, l->size);
	}
}

static inline void account(struct replay *rp, const struct rp_live *l, int add, uint64_t time)
{
	struct rp_level *d = NULL;
	if (l->bucket == BK_DEVICE) /* one device, most often: no call */
		d = rp->ndevs && rp->devs[0].ordinal == l->device ? &rp->devs[0].lv
								  : &replay_dev(rp, l->device)->lv;
	if (tell(rp, l, add, d))
		rp->on_change(rp->on_change_ctx, l, add);
	levels(rp, l, add, time, d);
}

static __attribute__((noinline)) void account_call(struct replay *rp, const struct rp_live *l,
						   int add, uint64_t time)
{
	account(rp, l, add, time);
}

/* account without a call: l's device level where it is the first device
 * (*d; NULL for other memory) and on_change not to be told. false: use
 * account. */
static inline bool quiet(const struct replay *rp, const struct rp_live *l, int add,
			 struct rp_level **d)
{
	*d = NULL;
	if (l->bucket == BK_DEVICE) {
		if (!rp->ndevs || rp->devs[0].ordinal != l->device)
			return false;
		*d = &rp->devs[0].lv;
	}
	return !tell(rp, l, add, *d);
}

static inline size_t slot_of(const struct rp_table *t, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> t->shift);
}

/* key's slot in t, or the empty slot where it would go: the one slot_put
 * picks, since probing stops at the first empty slot. t has slots. */
static inline struct rp_slot *slot_find(const struct rp_table *t, uint64_t key)
{
	for (size_t i = slot_of(t, key);; i = (i + 1) & t->mask) {
		struct rp_slot *s = &t->slots[i];
		if (s->key == key || !s->l) /* empty slots hold {0, NULL} */
			return s;
	}
}

static inline struct rp_live *find(struct replay *rp, int space, uint64_t key)
{
	if (!gmt_space_valid(space) || !rp->tables[space].slots)
		return NULL;
	return slot_find(&rp->tables[space], key)->l;
}

static void slot_put(struct rp_table *t, struct rp_live *l)
{
	size_t i = slot_of(t, l->key);
	while (t->slots[i].l)
		i = (i + 1) & t->mask;
	t->slots[i] = (struct rp_slot){l->key, l};
}

/* Twice the slots (64 at first), the entries put back in list order. */
static __attribute__((noinline)) void table_grow(struct rp_table *t)
{
	size_t cap = t->slots ? 2 * (t->mask + 1) : 64;
	free(t->slots);
	t->slots = xcalloc(cap, sizeof(*t->slots));
	t->mask = cap - 1;
	t->shift = 64 - (unsigned)__builtin_ctzll(cap);
	for (struct rp_live *l = t->head; l; l = l->next)
		slot_put(t, l);
}

/* Whether one more entry fits in t's index as it is. */
static inline bool table_room(const struct rp_table *t)
{
	return t->slots && 2 * (t->count + 1) <= t->mask + 1;
}

/* l (a key not in t) at the end of t, in slot s (slot_find's for its
 * key), where table_room. */
static inline void table_insert_at(struct rp_table *t, struct rp_live *l, struct rp_slot *s)
{
	*s = (struct rp_slot){l->key, l};
	t->count++;
	l->next = NULL;
	l->prev = t->tail;
	if (t->tail)
		t->tail->next = l;
	else
		t->head = l;
	t->tail = l;
}

/* l (a key not in t) at the end of t. */
static inline void table_add(struct rp_table *t, struct rp_live *l)
{
	if (!table_room(t))
		table_grow(t);
	table_insert_at(t, l, slot_find(t, l->key));
}

/* l out of t, l being in slot i: the slot emptied by moving back the
 * entries after it that may (backward shift, no tombstones), then out of
 * the list. */
static inline void table_del_at(struct rp_table *t, struct rp_live *l, size_t i)
{
	for (size_t j = (i + 1) & t->mask; t->slots[j].l; j = (j + 1) & t->mask) {
		size_t home = slot_of(t, t->slots[j].key);
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i] = (struct rp_slot){0, NULL};
	t->count--;
	if (l->prev)
		l->prev->next = l->next;
	else
		t->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		t->tail = l->prev;
}

/* l out of t, its slot found from its key. */
static inline void table_del(struct rp_table *t, struct rp_live *l)
{
	size_t i = slot_of(t, l->key);
	while (t->slots[i].l != l)
		i = (i + 1) & t->mask;
	table_del_at(t, l, i);
}

struct rp_live *replay_find(struct replay *rp, int space, uint64_t key)
{
	return find(rp, space, key);
}

static inline void unlink_live(struct replay *rp, struct rp_live *l)
{
	table_del(&rp->tables[l->space], l);
	l->next = rp->spare;
	rp->spare = l;
}

/* unlink_live where l's slot is known: no second probe. */
static inline void unlink_live_at(struct replay *rp, struct rp_live *l, size_t i)
{
	table_del_at(&rp->tables[l->space], l, i);
	l->next = rp->spare;
	rp->spare = l;
}

static __attribute__((noinline)) void drop_call(struct replay *rp, struct rp_live *l)
{
	account(rp, l, 0, 0);
	unlink_live(rp, l);
}

/* Without a call where account needs none (quiet). */
static inline void drop(struct replay *rp, struct rp_live *l)
{
	struct rp_level *d;
	if (!quiet(rp, l, 0, &d)) {
		drop_call(rp, l);
		return;
	}
	levels(rp, l, 0, 0, d);
	unlink_live(rp, l);
}

/* drop for replay_apply's free, which found l in slot i of its table. */
static __attribute__((noinline)) void drop_at(struct replay *rp, struct rp_live *l, size_t i)
{
	struct rp_level *d;
	if (!quiet(rp, l, 0, &d)) {
		drop_call(rp, l);
		return;
	}
	levels(rp, l, 0, 0, d);
	unlink_live_at(rp, l, i);
}

static void maybe_release(struct replay *rp, struct rp_live *h)
{
	if (!gmt_handle_held(h->refs, h->maps))
		drop(rp, h);
}

static void unmap_one(struct replay *rp, struct rp_map *m)
{
	struct rp_live *h = find(rp, GMT_SPACE_VMM_HANDLE, m->handle);
	HASH_DEL(rp->maps, m);
	free(m);
	if (h && h->maps) {
		h->maps--;
		maybe_release(rp, h);
	}
}

static void unmap_range(struct replay *rp, uint64_t va, uint64_t size)
{
	uint64_t end = va + size < va ? UINT64_MAX : va + size, at = va;
	/* the usual case: whole mappings, back to back, from va */
	for (;;) {
		struct rp_map *m = NULL;
		HASH_FIND(hh, rp->maps, &at, sizeof(at), m);
		if (!m)
			break;
		uint64_t next = m->va + m->size;
		unmap_one(rp, m);
		if (next <= at || next >= end)
			return;
		at = next;
	}
	if (size == 0)
		return;
	/* anything else overlapping [va, end) */
	struct rp_map *m, *tmp;
	HASH_ITER(hh, rp->maps, m, tmp)
	{
		if (m->va < end && m->va + m->size > va)
			unmap_one(rp, m);
	}
}

static struct rp_live *handle_at(struct replay *rp, uint64_t addr)
{
	struct rp_map *m, *tmp;
	HASH_ITER(hh, rp->maps, m, tmp)
	{
		if (addr >= m->va && addr - m->va < m->size)
			return find(rp, GMT_SPACE_VMM_HANDLE, m->handle);
	}
	return NULL;
}

static inline void fill_live(struct rp_live *l, const struct replay *rp, const struct gmt_event *e,
			     const struct api_info *a, int b)
{
	l->key = e->ptr;
	l->space = a->space;
	l->bucket = b;
	l->device = e->device;
	l->size = b == BK_POOL ? 0 : e->size;
	l->stack_id = e->stack_id;
	l->time_ns = e->time_ns;
	l->seq = rp->seq;
	l->api = e->api;
	l->tid = (uint32_t)e->tid;
	l->refs = 1;
}

static __attribute__((noinline)) void apply_all(struct replay *rp, const struct gmt_event *e,
						const struct api_info *a);

/* An allocation from the spare list that needs no call to find its
 * device, to grow the index or to tell on_change: without a call but the
 * last; the rest in apply_all. */
static __attribute__((noinline)) void alloc_fast(struct replay *rp, const struct gmt_event *e,
						 const struct api_info *a)
{
	int b = replay_kind_bucket(a->kind, e->aux);
	struct rp_table *t = &rp->tables[a->space];
	struct rp_slot *s;
	if (b < 0 || !table_room(t) || (s = slot_find(t, e->ptr))->l) {
		apply_all(rp, e, a);
		return;
	}
	struct rp_live *l = rp->spare;
	rp->spare = l->next;
	l->maps = 0;
	fill_live(l, rp, e, a, b);
	table_insert_at(t, l, s); /* where slot_find stopped: one probe */
	struct rp_level *d;
	if (quiet(rp, l, 1, &d))
		levels(rp, l, 1, e->time_ns, d);
	else
		account_call(rp, l, 1, e->time_ns);
}

/* Every event of every replay: the two common cases (a free of a live
 * entry, an allocation: alloc_fast) with no registers saved here. */
void replay_apply(struct replay *rp, const struct gmt_event *e)
{
	rp->seq++;
	const struct api_info *a = api_lookup(e->api);
	if (!a || gmt_failed(e->result, e->flags))
		return;
	if (a->op == GMT_OP_FREE && e->ptr && a->space != GMT_SPACE_VMM_HANDLE &&
	    gmt_space_valid(a->space) && rp->tables[a->space].slots) {
		const struct rp_table *t = &rp->tables[a->space];
		struct rp_slot *s = slot_find(t, e->ptr);
		if (s->l) { /* its slot passed on: table_del_at probes no more */
			drop_at(rp, s->l, (size_t)(s - t->slots));
			return;
		}
	} else if (a->op == GMT_OP_ALLOC && e->ptr && rp->spare && gmt_space_valid(a->space)) {
		alloc_fast(rp, e, a);
		return;
	}
	apply_all(rp, e, a);
}

/* replay_apply for any event that passed its first checks. */
static void apply_all(struct replay *rp, const struct gmt_event *e, const struct api_info *a)
{
	switch (a->op) {
	case GMT_OP_ALLOC: {
		int b = replay_kind_bucket(a->kind, e->aux);
		if (b < 0 || e->ptr == 0)
			return;
		struct rp_live *old = find(rp, a->space, e->ptr);
		if (old) {
			rp->replaced++;
			drop(rp, old);
		}
		struct rp_live *l = rp->spare;
		if (l) {
			rp->spare = l->next;
			l->maps = 0; /* the rest: fill_live, table_add */
		} else {
			l = xcalloc(1, sizeof(*l));
		}
		fill_live(l, rp, e, a, b);
		table_add(&rp->tables[l->space], l);
		account(rp, l, 1, e->time_ns);
		return;
	}
	case GMT_OP_FREE: {
		if (e->ptr == 0)
			return; /* cudaFree(0) and friends: no-ops */
		struct rp_live *l = find(rp, a->space, e->ptr);
		if (!l) {
			rp->unmatched_frees++;
			return;
		}
		if (a->space == GMT_SPACE_VMM_HANDLE) {
			if (l->refs)
				l->refs--;
			maybe_release(rp, l);
			return;
		}
		drop(rp, l);
		return;
	}
	case GMT_OP_VMM_MAP: {
		struct rp_map *m = NULL;
		HASH_FIND(hh, rp->maps, &e->ptr, sizeof(e->ptr), m);
		if (m)
			unmap_one(rp, m); /* a stale mapping: its unmap was lost */
		m = xcalloc(1, sizeof(*m));
		m->va = e->ptr;
		m->size = e->size;
		m->handle = e->aux;
		HASH_ADD(hh, rp->maps, va, sizeof(m->va), m);
		struct rp_live *h = find(rp, GMT_SPACE_VMM_HANDLE, e->aux);
		if (h)
			h->maps++;
		return;
	}
	case GMT_OP_VMM_UNMAP:
		unmap_range(rp, e->ptr, e->size);
		return;
	case GMT_OP_VMM_RETAIN: {
		struct rp_live *h = find(rp, GMT_SPACE_VMM_HANDLE, e->ptr);
		if (!h)
			h = handle_at(rp, e->aux);
		if (h)
			h->refs++;
		return;
	}
	}
}

/* ---- reorder --------------------------------------------------------- */

void reorder_init(struct reorder *q, size_t limit, uint64_t window_ns)
{
	memset(q, 0, sizeof(*q));
	q->limit = limit ? limit : 1;
	q->window_ns = window_ns;
}

void reorder_free(struct reorder *q)
{
	free(q->heap);
	for (int i = 0; i < REORDER_RUNS; i++)
		free(q->runs[i].buf);
	memset(q, 0, sizeof(*q));
}

static bool before(const struct gmt_event *a, const struct gmt_event *b)
{
	return reorder_before_(a, b);
}

static size_t wrap(const struct reorder_run *r, size_t i)
{
	return i < r->cap ? i : i - r->cap;
}

static void run_append(struct reorder_run *r, const struct gmt_event *e, size_t limit)
{
	if (r->len == r->cap) {
		size_t old = r->cap;
		r->cap = old ? 2 * old : 1024;
		/* limit + 1 events wait at most: one more doubling would touch
		 * twice the memory for one event. REORDER_SLACK more let
		 * trace.c's push_run push a block before it applies. */
		if (old < limit + REORDER_SLACK && r->cap > limit + REORDER_SLACK)
			r->cap = limit + REORDER_SLACK;
		r->buf = xrealloc(r->buf, r->cap * sizeof(*r->buf));
		/* The older part [head, old) moves to the new end, so the
		 * wrapped part [0, head) still follows it. */
		if (r->head) {
			size_t older = old - r->head;
			memmove(r->buf + r->cap - older, r->buf + r->head, older * sizeof(*r->buf));
			r->head = r->cap - older;
		}
	}
	r->last = &r->buf[wrap(r, r->head + r->len++)];
	*r->last = *e;
}

static void heap_push(struct reorder *q, const struct gmt_event *e)
{
	if (q->heap_n == q->heap_cap) {
		q->heap_cap = q->heap_cap ? 2 * q->heap_cap : 1024;
		q->heap = xrealloc(q->heap, q->heap_cap * sizeof(*q->heap));
	}
	size_t i = q->heap_n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!before(e, &q->heap[p]))
			break;
		q->heap[i] = q->heap[p];
		i = p;
	}
	q->heap[i] = *e;
}

static void heap_pop(struct reorder *q)
{
	struct gmt_event last = q->heap[--q->heap_n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->heap_n)
			break;
		if (c + 1 < q->heap_n && before(&q->heap[c + 1], &q->heap[c]))
			c++;
		if (!before(&q->heap[c], &last))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	if (q->heap_n)
		q->heap[i] = last;
}

/* What the inline reorder_push leaves here: an empty or full run, or an
 * event older than its run's newest. */
void reorder_push_slow_(struct reorder *q, struct reorder_run *r, const struct gmt_event *e)
{
	if (r->len == 0 || !before(e, r->last)) {
		run_append(r, e, q->limit);
		q->nonempty |= 1u << (r - q->runs);
	} else {
		heap_push(q, e);
	}
}

/* reorder_next's heap case: the top, copied out since the heap moves. */
const struct gmt_event *reorder_heap_next_(struct reorder *q)
{
	q->out = q->heap[0];
	heap_pop(q);
	return &q->out;
}
