/* Live-set replay: applies events to the set of live allocations and keeps
 * the byte counts (and their peaks) per device and per kind of memory.
 *
 * Rules (docs/cli.md, "summary"; the shared ones in common/events.h, which
 * the library's peak watch follows too):
 *  - failed calls (gmt_failed) change nothing;
 *  - an allocation is keyed by address, or by handle in its namespace
 *    (GMT_API_LIST's space column); a free matches whatever allocated it;
 *  - a VMM physical handle (cuMemCreate) stays counted while it holds a
 *    reference (the creation, plus one per cuMemRetainAllocationHandle, minus
 *    one per cuMemRelease) or a mapping (cuMemMap until cuMemUnmap):
 *    gmt_handle_held;
 *  - device bytes: allocations of gmt_device_memory's kinds.
 *
 * Events should be applied in time order: struct reorder sorts them within
 * a bounded window, since the batches of different threads interleave in
 * the file. */
#ifndef GMT_ANALYSIS_REPLAY_H
#define GMT_ANALYSIS_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/hash.h"

#include "common/events.h"
#include "reader/reader.h"

enum bucket {
	BK_DEVICE = 0, /* per device: struct rp_dev */
	BK_MANAGED,
	BK_PINNED,     /* pinned host allocations */
	BK_REGISTERED, /* registered host memory */
	BK_VA,	       /* VMM address reservations */
	BK_ARRAY,
	BK_IPC,	     /* other processes' memory opened here */
	BK_VMM_HOST, /* cuMemCreate handles located on the host */
	BK_POOL,     /* memory pool objects (no bytes) */
	BK_COUNT,
};
extern const char *const bucket_key[BK_COUNT];	 /* JSON keys: "managed"... */
extern const char *const bucket_label[BK_COUNT]; /* "managed", "pinned host"... */

struct rp_level {
	uint64_t bytes, count; /* live now */
	uint64_t peak;	       /* highest bytes so far */
	uint64_t peak_time_ns; /* event time it was first reached */
	uint64_t peak_seq;     /* replay ordinal of that event (1-based; 0: never) */
};

struct rp_dev {
	int64_t ordinal;
	struct rp_level lv;
};

struct rp_live {
	struct rp_live *next, *prev; /* its table's entries in the order added */
	uint64_t key;		     /* address or handle */
	int space;
	int bucket;
	int64_t device;
	uint64_t size, stack_id, time_ns;
	uint64_t seq; /* the replay ordinal of its allocation */
	uint32_t api;
	uint32_t tid;	     /* the allocating thread's (the struct's hole: no cost) */
	uint64_t refs, maps; /* VMM handles */
};

struct rp_map {
	UT_hash_handle hh;
	uint64_t va, size, handle;
};

/* One space's live entries: a list in the order they were added (the
 * order the commands print them in) and an index by key (open addressing,
 * linear probing, at most half full). */
struct rp_slot {
	uint64_t key;
	struct rp_live *l; /* NULL: empty */
};

struct rp_table {
	struct rp_live *head, *tail;
	struct rp_slot *slots;
	size_t count, mask;
	unsigned shift; /* a key's first slot: (key * golden ratio) >> shift */
};

/* Every live entry of a space, in the order added; the body may drop l. */
#define RP_EACH(rp, space, l, tmp)                                                                 \
	for ((l) = (rp)->tables[space].head; (l) && ((tmp) = (l)->next, 1); (l) = (tmp))

struct replay {
	struct rp_table tables[GMT_SPACES]; /* by enum gmt_space */
	struct rp_map *maps;
	struct rp_live *spare;		   /* freed entries, chained by next: no malloc per event */
	struct rp_level buckets[BK_COUNT]; /* BK_DEVICE: all devices together */
	struct rp_dev *devs;
	size_t ndevs, devs_cap;
	uint64_t seq;		  /* events applied */
	uint64_t unmatched_frees; /* frees of addresses not live (lost or untraced allocations) */
	uint64_t replaced;	  /* allocations of an already-live address or handle */
	/* Optional: told whenever an allocation starts or stops counting, so
	 * plot/flamegraph/export can split the bytes by their own groups. */
	void (*on_change)(void *ctx, const struct rp_live *l, bool counted);
	void *on_change_ctx;
	/* on_change is told only of ends (counted false) of device
	 * allocations made by their device's peak (seq <= its peak_seq): the
	 * only ones peakset counts. */
	bool on_change_peak_ends;
};

/* The bucket an allocation of this GMT_KIND_* counts in (aux: a
 * cuMemCreate location type); -1 for kinds that hold no memory. */
static inline int replay_kind_bucket(int kind, uint64_t aux)
{
	if (gmt_device_memory(kind, aux))
		return BK_DEVICE;
	switch (kind) {
	case GMT_KIND_VMM_PHYS:
		return BK_VMM_HOST;
	case GMT_KIND_MANAGED:
		return BK_MANAGED;
	case GMT_KIND_HOST_PINNED:
		return BK_PINNED;
	case GMT_KIND_HOST_REGISTERED:
		return BK_REGISTERED;
	case GMT_KIND_VMM_VA:
		return BK_VA;
	case GMT_KIND_ARRAY:
		return BK_ARRAY;
	case GMT_KIND_IPC:
		return BK_IPC;
	case GMT_KIND_POOL:
		return BK_POOL;
	}
	return -1;
}
void replay_init(struct replay *rp);
void replay_free(struct replay *rp);
void replay_apply(struct replay *rp, const struct gmt_event *e);
/* The live entry of a key in a space (enum gmt_space), or NULL. */
struct rp_live *replay_find(struct replay *rp, int space, uint64_t key);
/* The device's entry, created at 0 if new. */
struct rp_dev *replay_dev(struct replay *rp, int64_t ordinal);

/* Events in (time, index) order: each comes out, in time order and file
 * order among equal times, once it is `window_ns` older than the newest
 * event pushed or more than `limit` events wait. Each thread's events are
 * already in order, so most go to a sorted run (a FIFO, picked by thread)
 * and only the rest to a min-heap; the next event is the least of the
 * runs' heads and the heap's top. */
#define REORDER_RUNS 8
/* A full run's room beyond the limit: the events a push may add before the
 * oldest are applied (trace.c's push_run pushes them as a block). */
#define REORDER_SLACK 4096

struct reorder_run {
	struct gmt_event *buf; /* circular */
	size_t head, len, cap;
	struct gmt_event *last; /* the newest, where len > 0 */
};

struct reorder {
	struct gmt_event *heap;
	size_t heap_n, heap_cap;
	struct reorder_run runs[REORDER_RUNS];
	unsigned nonempty; /* bit i: runs[i] holds events (most traces use one run) */
	size_t n, limit;
	uint64_t window_ns, newest;
	uint64_t low;	      /* <= every waiting event's time: skips the scan when none can go */
	struct gmt_event out; /* reorder_next's event when it came from the heap */
};

void reorder_init(struct reorder *q, size_t limit, uint64_t window_ns);
void reorder_free(struct reorder *q);

/* reorder_push and reorder_next run for every event of every replay:
 * inline, with what is rare (a run to start or grow, the heap) in
 * replay.c. */
static inline bool reorder_before_(const struct gmt_event *a, const struct gmt_event *b)
{
	return a->time_ns != b->time_ns ? a->time_ns < b->time_ns : a->index < b->index;
}
void reorder_push_slow_(struct reorder *q, struct reorder_run *r, const struct gmt_event *e);
const struct gmt_event *reorder_heap_next_(struct reorder *q);

static inline __attribute__((always_inline)) void reorder_push(struct reorder *q,
							       const struct gmt_event *e)
{
	struct reorder_run *r = &q->runs[(e->tid * 0x9e3779b97f4a7c15ull) >> 61];
	if (r->len && r->len < r->cap && !reorder_before_(e, r->last)) {
		r->last = r->last + 1 == r->buf + r->cap ? r->buf : r->last + 1;
		*r->last = *e;
		r->len++;
	} else {
		reorder_push_slow_(q, r, e);
	}
	if (q->n++ == 0 || e->time_ns < q->low)
		q->low = e->time_ns;
	if (e->time_ns > q->newest)
		q->newest = e->time_ns;
}

/* The next event that may go (drain: any event), valid until the next
 * push or pop, without a copy; NULL when none may go. */
static inline __attribute__((always_inline)) const struct gmt_event *reorder_next(struct reorder *q,
										  bool drain)
{
	if (q->n == 0)
		return NULL;
	if (!drain && q->n <= q->limit && q->newest - q->low < q->window_ns)
		return NULL; /* every waiting event is younger than the window */
	/* The least of the heap's top and the runs' heads. */
	const struct gmt_event *top;
	struct reorder_run *from = NULL;
	if (!q->heap_n && !(q->nonempty & (q->nonempty - 1))) {
		from = &q->runs[__builtin_ctz(q->nonempty)]; /* one run: most traces */
		top = &from->buf[from->head];
	} else {
		top = q->heap_n ? &q->heap[0] : NULL;
		for (unsigned m = q->nonempty; m; m &= m - 1) {
			struct reorder_run *r = &q->runs[__builtin_ctz(m)];
			if (!top || reorder_before_(&r->buf[r->head], top)) {
				top = &r->buf[r->head];
				from = r;
			}
		}
	}
	q->low = top->time_ns; /* the least now */
	if (!drain && q->n <= q->limit && q->newest - top->time_ns < q->window_ns)
		return NULL;
	q->n--;
	if (!from)
		return reorder_heap_next_(q);
	/* the slot stays as it is until the next push: no copy */
	from->head = from->head + 1 == from->cap ? 0 : from->head + 1;
	if (--from->len == 0)
		q->nonempty &= ~(1u << (from - q->runs));
	return top;
}

#endif
