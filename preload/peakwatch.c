/* What asks the sampling thread for a sample (preload/sampler.h): pokes
 * from any thread, and the peak watch on the flush thread. It calls
 * nothing that records, so the flush thread can use it.
 *
 * The hooks only ever poke (an atomic OR and a futex wake). The peak watch
 * runs on the flush thread, which sees every event anyway, so the event
 * path pays nothing for it; the price is lag: a PEAK sample comes up to one
 * GPUMEMTRACE_FLUSH_MS after the allocation that made the high. */
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/events.h"
#include "preload/nvml.h"
#include "preload/sampler.h"

enum {
	PEAK_MIN_STEP = 1 << 20,  /* a new high must pass the last poked one by this */
	PEAK_STEP_SHIFT = 4,	  /* ... or by 1/16 of it, whichever is more */
	LIVE_MIN_SLOTS = 1 << 10, /* the peak watch's tables */
};

struct gmt_sample_asks gmt_sample_asks;

void gmt_sampler_wake(void)
{
	/* Pairs with the acquire load of gmt_sample_asks.wake in sampler_main. */
	__atomic_add_fetch(&gmt_sample_asks.wake, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &gmt_sample_asks.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void gmt_sampler_poke(enum gmt_sample_why why)
{
	if (!__atomic_load_n(&gmt_sample_asks.running, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&gmt_sample_asks.idle, __ATOMIC_RELAXED))
		return;
	/* Pairs with the acquire exchange in sampler_main. */
	__atomic_or_fetch(&gmt_sample_asks.pending, 1u << why, __ATOMIC_RELEASE);
	gmt_sampler_wake();
}

/* ---- the peak watch (flush thread) ---------------------------------------- */

/* The watch keeps the device bytes that summary's replay keeps, by its
 * rules (common/events.h, analysis/replay.h): failed calls change nothing,
 * an allocation replaces whatever its key held, device memory is
 * gmt_device_memory's, and a VMM handle stays counted while held. */

/* What an API does, from the format's table. */
static const struct {
	uint8_t op, kind, space;
} api_info[GMT_API_MAX_ + 1] = {
#define GMT_API_INFO_(id, name, op, kind, space, aux) [id] = {op, kind, space},
    GMT_API_LIST(GMT_API_INFO_)
#undef GMT_API_INFO_
};

/* A live allocation or VMM handle (key: live_key), or a VMM mapping (key:
 * its address). */
struct entry {
	uint64_t key; /* 0: empty */
	uint64_t size;
	uint64_t handle;     /* a mapping's */
	int32_t device;	     /* counted in pk.bytes[device]; -1: not counted */
	uint32_t refs, maps; /* a handle's: gmt_handle_held */
};

/* Open addressing, linear probing, at most 3/4 full. */
struct table {
	struct entry *slots;
	size_t cap, used; /* cap: a power of two */
};

static struct {
	/* Device allocations, and every VMM handle, device memory or not:
	 * like the replay, a retain looks for its handle before its address. */
	struct table live;
	struct table maps;
	uint64_t bytes[GMT_NVML_MAX_DEVICES], high[GMT_NVML_MAX_DEVICES];
	uint64_t poked[GMT_NVML_MAX_DEVICES];
	int peak_seen; /* a new high in this flush cycle: one poke at its end */
} pk;

static inline uint64_t live_key(uint64_t ptr, unsigned space)
{
	return ptr ^ ((uint64_t)space << 62);
}

static inline size_t slot_of(const struct table *t, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20) & (t->cap - 1);
}

/* tab_find and tab_put run for most events: inline. */
static inline __attribute__((always_inline)) struct entry *tab_find(const struct table *t,
								    uint64_t key)
{
	if (!t->cap)
		return NULL;
	for (size_t i = slot_of(t, key);; i = (i + 1) & (t->cap - 1)) {
		if (t->slots[i].key == key)
			return &t->slots[i];
		if (!t->slots[i].key)
			return NULL;
	}
}

static int tab_grow(struct table *t)
{
	size_t cap = t->cap ? t->cap * 2 : LIVE_MIN_SLOTS, old_cap = t->cap;
	struct entry *old = t->slots, *n = calloc(cap, sizeof *n);
	if (!n)
		return -1;
	t->slots = n;
	t->cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		if (!old[i].key)
			continue;
		size_t j = slot_of(t, old[i].key);
		while (t->slots[j].key)
			j = (j + 1) & (cap - 1);
		t->slots[j] = old[i];
	}
	free(old);
	return 0;
}

/* key's entry: the one t holds, or a new one (key and device -1 set); NULL
 * when out of memory (then it is not watched). One probe. */
static inline __attribute__((always_inline)) struct entry *tab_put(struct table *t, uint64_t key)
{
	if ((t->used + 1) * 4 > t->cap * 3 && tab_grow(t) != 0)
		return NULL;
	size_t i = slot_of(t, key);
	while (t->slots[i].key && t->slots[i].key != key)
		i = (i + 1) & (t->cap - 1);
	struct entry *e = &t->slots[i];
	if (!e->key) {
		t->used++;
		e->key = key;
		e->device = -1;
	}
	return e;
}

/* Backward-shift deletion keeps every probe chain whole. */
static void tab_del(struct table *t, struct entry *e)
{
	size_t i = (size_t)(e - t->slots);
	for (size_t j = (i + 1) & (t->cap - 1); t->slots[j].key; j = (j + 1) & (t->cap - 1)) {
		size_t home = slot_of(t, t->slots[j].key);
		if (((j - home) & (t->cap - 1)) >= ((j - i) & (t->cap - 1))) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].key = 0;
	t->used--;
}

static void live_drop(struct entry *l)
{
	if (l->device >= 0)
		pk.bytes[l->device] -= l->size;
	tab_del(&pk.live, l);
}

static struct entry *handle_find(uint64_t handle)
{
	return tab_find(&pk.live, live_key(handle, GMT_SPACE_VMM_HANDLE));
}

static void note_high(int32_t d)
{
	if (pk.bytes[d] <= pk.high[d])
		return;
	pk.high[d] = pk.bytes[d];
	uint64_t step = pk.poked[d] >> PEAK_STEP_SHIFT;
	if (step < PEAK_MIN_STEP)
		step = PEAK_MIN_STEP;
	if (pk.high[d] >= pk.poked[d] + step) {
		pk.poked[d] = pk.high[d];
		pk.peak_seen = 1;
	}
}

/* An allocation replaces whatever its key held (the key came back without
 * a free we saw). */
static void watch_alloc(const struct gmt_raw_event *e, unsigned kind, unsigned space)
{
	if (!e->ptr || kind == GMT_KIND_NONE ||
	    (space != GMT_SPACE_ADDR && space != GMT_SPACE_VMM_HANDLE))
		return; /* the other spaces hold no device memory */
	uint64_t key = live_key(e->ptr, space);
	int counted = gmt_device_memory((int)kind, e->aux) && e->device >= 0 &&
		      e->device < GMT_NVML_MAX_DEVICES;
	struct entry *l;
	if (!counted && space != GMT_SPACE_VMM_HANDLE) {
		if ((l = tab_find(&pk.live, key)))
			live_drop(l);
		return;
	}
	if (!(l = tab_put(&pk.live, key))) {
		if ((l = tab_find(&pk.live, key)))
			live_drop(l);
		return;
	}
	if (l->device >= 0)
		pk.bytes[l->device] -= l->size;
	l->size = e->size;
	l->refs = 1;
	l->maps = 0;
	l->device = counted ? e->device : -1;
	if (!counted)
		return;
	pk.bytes[e->device] += e->size;
	note_high(e->device);
}

static void watch_free(const struct gmt_raw_event *e, unsigned space)
{
	if (!e->ptr || (space != GMT_SPACE_ADDR && space != GMT_SPACE_VMM_HANDLE))
		return;
	struct entry *l = tab_find(&pk.live, live_key(e->ptr, space));
	if (!l)
		return;
	if (space == GMT_SPACE_VMM_HANDLE) {
		if (l->refs)
			l->refs--;
		if (gmt_handle_held(l->refs, l->maps))
			return;
	}
	live_drop(l);
}

static void unmap_one(struct entry *m)
{
	struct entry *h = handle_find(m->handle);
	tab_del(&pk.maps, m);
	if (h && h->maps && !gmt_handle_held(h->refs, --h->maps))
		live_drop(h);
}

static void watch_map(const struct gmt_raw_event *e)
{
	if (!e->ptr)
		return; /* key 0 marks an empty slot */
	struct entry *m = tab_find(&pk.maps, e->ptr);
	if (m) /* a stale mapping: its unmap was lost */
		unmap_one(m);
	if (!(m = tab_put(&pk.maps, e->ptr)))
		return;
	m->size = e->size;
	m->handle = e->aux;
	struct entry *h = handle_find(e->aux);
	if (h)
		h->maps++;
}

/* The mappings of [va, va + size), as the replay's unmap_range finds them:
 * those from va back to back, then any other overlapping. */
static void watch_unmap(uint64_t va, uint64_t size)
{
	uint64_t end = va + size < va ? UINT64_MAX : va + size, at = va;
	struct entry *m;
	while ((m = at ? tab_find(&pk.maps, at) : NULL)) {
		uint64_t next = m->key + m->size;
		unmap_one(m);
		if (next <= at || next >= end)
			return;
		at = next;
	}
	if (size == 0)
		return;
	/* A deletion may move a later entry into slot i: look at it again. */
	for (size_t i = 0; i < pk.maps.cap;) {
		m = &pk.maps.slots[i];
		if (m->key && m->key < end && m->key + m->size > va)
			unmap_one(m);
		else
			i++;
	}
}

static void watch_retain(const struct gmt_raw_event *e)
{
	struct entry *h = handle_find(e->ptr);
	for (size_t i = 0; !h && i < pk.maps.cap; i++) { /* the handle mapped at aux */
		const struct entry *m = &pk.maps.slots[i];
		if (m->key && e->aux >= m->key && e->aux - m->key < m->size) {
			h = handle_find(m->handle);
			break;
		}
	}
	if (h)
		h->refs++;
}

void gmt_sampler_observe(const struct gmt_ring_hdr *h)
{
	if (h->type != GMT_RING_EVENT ||
	    !__atomic_load_n(&gmt_sample_asks.running, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&gmt_sample_asks.idle, __ATOMIC_RELAXED))
		return;
	const struct gmt_raw_event *e = (const void *)(h + 1);
	if (gmt_failed(e->result, e->flags) || e->api > GMT_API_MAX_)
		return;
	unsigned kind = api_info[e->api].kind, space = api_info[e->api].space;
	switch (api_info[e->api].op) {
	case GMT_OP_ALLOC:
		watch_alloc(e, kind, space);
		return;
	case GMT_OP_FREE:
		watch_free(e, space);
		return;
	case GMT_OP_VMM_MAP:
		watch_map(e);
		return;
	case GMT_OP_VMM_UNMAP:
		watch_unmap(e->ptr, e->size);
		return;
	case GMT_OP_VMM_RETAIN:
		watch_retain(e);
		return;
	}
}

void gmt_sampler_cycle_done(void)
{
	if (pk.peak_seen) {
		pk.peak_seen = 0;
		gmt_sampler_poke(GMT_SAMPLE_WHY_PEAK);
	}
}

void gmt_peakwatch_fork_child(void)
{
	free(pk.live.slots);
	free(pk.maps.slots);
	memset(&pk, 0, sizeof pk);
}
