/* A single-producer, single-consumer byte ring per traced thread.
 *
 * The owning thread appends variable-size records; the flush thread is the
 * only consumer. head and tail are byte counters that only grow; a record
 * never wraps: when it does not fit before the end, a PAD record fills the
 * gap and the record starts at offset 0. */
#ifndef GMT_RING_H
#define GMT_RING_H

#include <stddef.h>
#include <stdint.h>

enum gmt_ring_rec_type {
	GMT_RING_PAD = 0,
	GMT_RING_EVENT = 1,
	GMT_RING_THREAD = 2,   /* body: the thread's name; nframes holds its length */
	GMT_RING_MEMINFO = 3,  /* body: struct gmt_raw_meminfo */
	GMT_RING_SAMPLE = 4,   /* body: struct gmt_raw_sample */
	GMT_RING_RANGE = 5,    /* body: struct gmt_raw_range, then nframes bytes of text */
	GMT_RING_PYFRAME = 6,  /* body: struct gmt_raw_pyframe, then the two strings */
	GMT_RING_COUNTERS = 7, /* body: a COUNTERS body after tid, encoded; nframes: its length */
	GMT_RING_FWSNAP = 8,   /* body: a FWSNAP body after tid, encoded; its length in the body */
	GMT_RING_FWTRACE = 9,  /* body: struct gmt_raw_fwtrace and what follows it */
	GMT_RING_FWSEG = 10,   /* body: struct gmt_raw_fwseg and what follows it */
	GMT_RING_FWOOM = 11,   /* body: a FWOOM body after tid, encoded; nframes: its length */
};

struct gmt_ring_hdr {
	uint32_t len; /* whole record, header included, multiple of 8 */
	uint16_t type;
	uint16_t nframes;
};

/* An event as the hook saw it; the flush thread encodes it. */
struct gmt_raw_event {
	uint64_t time_ns;
	uint64_t ptr, size, aux, aux2;
	uint32_t result;
	int32_t device;
	uint16_t api;
	uint16_t flags; /* GMT_EV_HAS_AUX | GMT_EV_HAS_AUX2 */
	uint32_t pad_;
	/* followed by nframes uint64_t return addresses, innermost first */
};

/* cuMemGetInfo right after an allocation failed with out-of-memory. */
struct gmt_raw_meminfo {
	uint64_t time_ns, free_bytes, total_bytes;
	int32_t device;
	uint32_t api;
};

/* One NVML reading of one device (GMT_TAG_SAMPLE). */
struct gmt_raw_sample {
	uint64_t time_ns, used_bytes, total_bytes, process_used_bytes;
	uint8_t uuid[16];
	uint32_t nvml_index;
	uint16_t flags;	 /* GMT_SAMPLE_* */
	uint16_t reason; /* GMT_SAMPLE_WHY_* */
};

/* A phase marker (GMT_TAG_RANGE); its text follows (hdr.nframes bytes). */
struct gmt_raw_range {
	uint64_t time_ns, id;
	uint16_t op, source;
	uint32_t pad_;
};

/* A Python frame definition (GMT_TAG_PYFRAME): function_len bytes of the
 * function name, then file_len bytes of the file name, follow. */
struct gmt_raw_pyframe {
	uint64_t id, line;
	uint32_t function_len, file_len;
};

/* A framework's history entries (GMT_TAG_FWTRACE): count struct
 * gmt_raw_fwentry follow, then every entry's frames (ips, innermost
 * first), entry by entry. The flush thread interns the stacks. */
struct gmt_raw_fwtrace {
	uint64_t seq, flags, base_time_us;
	int64_t device;
	uint32_t count, pad_;
};
struct gmt_raw_fwentry {
	uint64_t addr, size, stream, time_us;
	uint32_t action;
	uint16_t nframes, pad_;
};

/* A segment of a framework's snapshot (GMT_TAG_FWSEG): the segment's
 * frames (nframes ips) follow, then count struct gmt_raw_fwblock, then
 * every block's frames, block by block. */
struct gmt_raw_fwseg {
	uint64_t seq, address, total_size, stream, flags, pool_a, pool_b;
	int64_t device;
	uint32_t count;
	uint16_t nframes, pad_;
};
struct gmt_raw_fwblock {
	uint64_t address, size, requested;
	uint32_t state;
	uint16_t nframes, pad_;
};

struct gmt_ring {
	/* Producer-owned line. */
	uint64_t head __attribute__((aligned(64)));
	uint64_t lost;	     /* events dropped because the ring stayed full */
	int wake_sent;	     /* producer asked for a drain and the consumer has not run */
	uint64_t prefetched; /* lines below this byte count were asked for in M state */
	/* Consumer-owned line. */
	uint64_t tail __attribute__((aligned(64)));
	uint64_t lost_reported;
	/* Shared, set once (wake_at: rarely). */
	uint8_t *buf __attribute__((aligned(64)));
	size_t cap; /* power of two */
	/* A commit that leaves this many bytes used asks for a drain: cap / 2,
	 * or 0 while the flush thread sleeps idle (the first record wakes it).
	 * Written by the consumer, rarely: kept off the producer's line,
	 * which the consumer writes each cycle (wake_sent): read from there
	 * per event it cost ~8 ns per alloc+free pair. */
	size_t wake_at;
	int tid;
	int exited;    /* the owner thread is gone: drain, then free */
	int prefetchw; /* the CPU has PREFETCHW */
	struct gmt_ring *next;
	/* The flush thread's alone, written per event: kept off the line of
	 * tail, which the producer reads per event. */
	uint64_t last_time __attribute__((aligned(64))); /* latest event time written */
};

/* gmt_ring_new and gmt_ring_retire: caller holds setup_lock (a new ring
 * may be a retired one). gmt_ring_free: tests, and a fork's child. */
struct gmt_ring *gmt_ring_new(size_t cap, int tid);
void gmt_ring_free(struct gmt_ring *r);
/* Unmaps its buffer and keeps the struct for gmt_ring_new: no free(). */
void gmt_ring_retire(struct gmt_ring *r);

/* How far ahead of the producer ring lines are fetched for writing. The
 * flush thread on another core last read the lines the producer is about to
 * overwrite; a plain store there waits for the line's ownership, and the
 * next locked instruction (the driver's own mutex) stalls on that store:
 * ~150 ns per alloc+free pair here (docs/performance.md, "The ring lines").
 * Any distance from 256 bytes to 4 KiB did as well. */
#define GMT_RING_PREFETCH_AHEAD 512

static inline void gmt_ring_prefetch_line(const struct gmt_ring *r, const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	/* Only PREFETCHW asks for ownership; GCC emits PREFETCHT0 (shared state:
	 * no help) for a write prefetch unless built for PRFCHW. */
	if (r->prefetchw) {
		__asm__ volatile("prefetchw %0" ::"m"(*(const char *)p));
		return;
	}
#else
	(void)r;
#endif
	__builtin_prefetch(p, 1, 3);
}

/* Producer: reserve `len` bytes (header included, rounded to 8). Returns
 * NULL if the ring is full right now. Inline: it is on every event's path. */
static inline void *gmt_ring_reserve(struct gmt_ring *r, size_t len)
{
	uint64_t head = r->head;
	/* Pairs with the release store of tail in gmt_ring_drain: the consumer
	 * is done reading the space we are about to overwrite. */
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	size_t off = head & (r->cap - 1);
	size_t contig = r->cap - off;
	size_t need = len + (contig < len ? contig : 0);
	if (r->cap - (head - tail) < need)
		return NULL;
	if (contig < len) {
		struct gmt_ring_hdr *pad = (void *)(r->buf + off);
		pad->len = (uint32_t)contig;
		pad->type = GMT_RING_PAD;
		pad->nframes = 0;
		head += contig;
		/* Publish the pad now, so the reserved record starts at offset 0.
		 * Pairs with the acquire load of head in gmt_ring_drain. */
		__atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
		off = 0;
	}
	uint64_t want = head + len + GMT_RING_PREFETCH_AHEAD;
	if (r->prefetched < head)
		r->prefetched = head & ~(uint64_t)63;
	for (; r->prefetched < want; r->prefetched += 64)
		gmt_ring_prefetch_line(r, r->buf + (r->prefetched & (r->cap - 1)));
	return r->buf + off;
}

/* Producer: publish the record reserved last; returns the bytes now used. */
static inline size_t gmt_ring_commit(struct gmt_ring *r, size_t len)
{
	uint64_t head = r->head + len;
	/* Pairs with the acquire load of head in gmt_ring_drain: the record's
	 * bytes are visible before its end is. */
	__atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
	return head - __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
}

/* Consumer: call fn on every published record, then free their space. */
typedef void (*gmt_ring_fn)(void *ctx, struct gmt_ring *r, const struct gmt_ring_hdr *h);
size_t gmt_ring_drain(struct gmt_ring *r, gmt_ring_fn fn, void *ctx);

static inline size_t gmt_ring_align(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

#endif
