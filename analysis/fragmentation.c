/* The fragmentation aggregator: see fragmentation.h.
 *
 * Two replays per trace: the first counts, finds each device's peak and
 * takes the segment inventory at the first out-of-memory failure and at
 * the end; the second takes it at each peak. No figure comes from device
 * addresses: they are virtual, sparse and say nothing of physical memory. */
#include "analysis/counters.h"
#include "analysis/fragmentation.h"

#include <stdlib.h>
#include <string.h>

#include "common/events.h"

#define MiB	     (1ull << 20)
#define LARGE_PAGE   (2 * MiB) /* granularity thought used above 1 MiB */
#define SMALL_GRAIN  512ull
#define LARGE_CUTOFF MiB
/* frag_pytorch_like: this share of the segments are 2 MiB multiples */
#define PT_SHARE 0.9

const char *const frag_class_key[FRAG_NCLASSES] = {
    [FRAG_SEG_2M] = "2MiB",
    [FRAG_SEG_20M] = "20MiB",
    [FRAG_SEG_2M_MULT] = "other_2MiB_multiples",
    [FRAG_SEG_OTHER] = "other_sizes",
};

/* The state of one computation. */
struct frag {
	struct frag_result *res;
	bool has_device;
	int64_t device;
	int pass;
	struct replay rp;
	uint64_t *ages; /* scratch for the median age */
	size_t ages_cap;
	/* after a device's first OOM: its thread's frees until that thread's
	 * next device allocation */
	struct frag_dev *oom_dev;
	uint64_t oom_tid;
};

static struct frag_dev *fdev_get(struct frag *g, int64_t ordinal)
{
	for (size_t i = 0; i < g->res->ndevs; i++)
		if (g->res->devs[i].ordinal == ordinal)
			return &g->res->devs[i];
	g->res->devs = xrealloc(g->res->devs, (g->res->ndevs + 1) * sizeof(*g->res->devs));
	struct frag_dev *d = &g->res->devs[g->res->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	return d;
}

uint64_t frag_rounded(uint64_t size)
{
	uint64_t g = size > LARGE_CUTOFF ? LARGE_PAGE : SMALL_GRAIN;
	return (size + g - 1) / g * g;
}

uint64_t frag_waste(const struct frag_dev *d)
{
	return d->pitched.granted - d->pitched.requested + d->pages.granted - d->pages.requested;
}

double frag_ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

static enum frag_class seg_class(uint64_t size)
{
	if (size == 2 * MiB)
		return FRAG_SEG_2M;
	if (size == 20 * MiB)
		return FRAG_SEG_20M;
	return size && size % (2 * MiB) == 0 ? FRAG_SEG_2M_MULT : FRAG_SEG_OTHER;
}

bool frag_pytorch_like(const struct frag_segs *s)
{
	uint64_t m = s->count - s->class_count[FRAG_SEG_OTHER];
	return s->count && (double)m >= PT_SHARE * (double)s->count &&
	       s->class_count[FRAG_SEG_2M] + s->class_count[FRAG_SEG_20M] > 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A live entry that is a segment of device `ord`. */
static bool is_segment(const struct rp_live *l, int64_t ord)
{
	const struct api_info *a = api_lookup(l->api);
	return l->bucket == BK_DEVICE && l->device == ord && (!a || a->kind != GMT_KIND_ASYNC);
}

/* The segment inventory of device `ord`, now. */
static void inventory(struct frag *g, int64_t ord, uint64_t time, struct frag_segs *s)
{
	memset(s, 0, sizeof(*s));
	s->taken = true;
	s->time_ns = time;
	size_t n = 0;
	int spaces[2] = {GMT_SPACE_ADDR, GMT_SPACE_VMM_HANDLE};
	for (int k = 0; k < 2; k++) {
		struct rp_live *l, *tmp;
		RP_EACH(&g->rp, spaces[k], l, tmp)
		{
			if (!is_segment(l, ord))
				continue;
			enum frag_class c = seg_class(l->size);
			s->count++;
			s->bytes += l->size;
			s->class_count[c]++;
			s->class_bytes[c] += l->size;
			if (n == g->ages_cap) {
				g->ages_cap = g->ages_cap ? 2 * g->ages_cap : 256;
				g->ages = xrealloc(g->ages, g->ages_cap * sizeof(*g->ages));
			}
			g->ages[n++] = time > l->time_ns ? time - l->time_ns : 0;
		}
	}
	if (!n)
		return;
	qsort(g->ages, n, sizeof(*g->ages), u64_cmp);
	s->oldest_ns = g->ages[n - 1];
	s->median_age_ns = g->ages[(n - 1) / 2];
}

static bool selected(const struct frag *g, int64_t ord)
{
	return !g->has_device || g->device == ord;
}

static bool is_vmm(uint32_t api)
{
	return api >= GMT_API_cuMemCreate && api <= GMT_API_cuMemImportFromShareableHandle;
}

static void vmm_update(struct frag *g)
{
	struct frag_vmm *v = &g->res->vmm;
	v->used = true;
	v->reserved = g->rp.buckets[BK_VA].bytes;
	v->mapped = 0;
	struct rp_map *m, *mt;
	HASH_ITER(hh, g->rp.maps, m, mt)
	{
		v->mapped += m->size;
	}
	v->physical = 0;
	struct rp_live *l, *lt;
	RP_EACH(&g->rp, GMT_SPACE_VMM_HANDLE, l, lt)
	{
		if (l->api == GMT_API_cuMemCreate)
			v->physical += l->size;
	}
	if (v->reserved > v->reserved_peak)
		v->reserved_peak = v->reserved;
	if (v->mapped > v->mapped_peak)
		v->mapped_peak = v->mapped;
	if (v->physical > v->physical_peak)
		v->physical_peak = v->physical;
}

/* Requested against granted, by kind; the size histogram. */
static void count_alloc(struct frag_dev *d, const struct gmt_event *e, const struct api_info *a)
{
	int b = 0;
	for (uint64_t s = e->size; s > 1; s >>= 1)
		b++;
	if (e->size == 0)
		b = 64; /* the zero-size bucket */
	d->hist_count[b]++;
	d->hist_bytes[b] += e->size;
	d->allocs++;
	struct frag_grant *gr;
	uint64_t asked = e->size, got = e->size;
	if (a->kind == GMT_KIND_ASYNC) {
		gr = &d->async;
		got = 0;
	} else if (a->kind == GMT_KIND_VMM_PHYS) {
		gr = &d->handles;
		d->handles_2m += e->size % (2 * MiB) == 0;
	} else if (e->aux && e->aux2 && e->aux2 <= e->aux) { /* pitch: size = pitch * rows */
		gr = &d->pitched;
		asked = e->aux2 * (e->size / e->aux);
	} else {
		gr = &d->pages;
		got = frag_rounded(e->size);
	}
	gr->count++;
	gr->requested += asked;
	gr->granted += got;
}

/* Pass 1, before replay_apply: stream-ordered and pool counts, the
 * allocations, and the frees that follow a device's first OOM. */
static void pass1_before(struct frag *g, const struct gmt_event *e, const struct api_info *a)
{
	struct frag_result *res = g->res;
	if (a->op == GMT_OP_FREE && a->space == GMT_SPACE_ADDR) {
		struct rp_live *l = replay_find(&g->rp, GMT_SPACE_ADDR, e->ptr);
		const struct api_info *la = l ? api_lookup(l->api) : NULL;
		if (la && la->kind == GMT_KIND_ASYNC)
			res->async_live -= l->size < res->async_live ? l->size : res->async_live;
	}
	if (g->oom_dev && e->tid == g->oom_tid && a->op == GMT_OP_FREE) {
		struct rp_live *l = replay_find(&g->rp, a->space, e->ptr);
		if (l && is_segment(l, g->oom_dev->ordinal)) {
			g->oom_dev->oom_freed += l->size;
			g->oom_dev->oom_frees++;
		}
	}
	bool dev = a->op == GMT_OP_ALLOC && gmt_device_memory(a->kind, e->aux);
	if (dev && g->oom_dev && e->tid == g->oom_tid && e->time_ns > g->oom_dev->at_oom.time_ns)
		g->oom_dev = NULL; /* its next device allocation: the frees are done */
	if (a->op == GMT_OP_ALLOC && a->kind == GMT_KIND_ASYNC) {
		res->async_live += e->size;
		if (res->async_live > res->async_peak)
			res->async_peak = res->async_live;
	}
	res->pools_created += a->op == GMT_OP_ALLOC && a->kind == GMT_KIND_POOL;
	res->pool_trims += a->op == GMT_OP_POOL_TRIM;
	if (dev && selected(g, e->device))
		count_alloc(fdev_get(g, e->device), e, a);
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct frag *g = ctx;
	const struct api_info *a = api_lookup(e->api);
	bool ok = !gmt_failed(e->result, e->flags);
	if (g->pass == 1 && a && ok)
		pass1_before(g, e, a);
	replay_apply(&g->rp, e);
	if (g->pass == 2) {
		for (size_t i = 0; i < g->res->ndevs; i++) {
			struct frag_dev *d = &g->res->devs[i];
			if (d->peak_seq && g->rp.seq == d->peak_seq)
				inventory(g, d->ordinal, e->time_ns, &d->at_peak);
		}
		return;
	}
	if (a && is_vmm(e->api))
		vmm_update(g);
	if (!ok && a && a->op == GMT_OP_ALLOC && gmt_out_of_memory(e->result) &&
	    gmt_device_memory(a->kind, e->aux) && selected(g, e->device)) {
		struct frag_dev *d = fdev_get(g, e->device);
		if (!d->at_oom.taken) {
			inventory(g, d->ordinal, e->time_ns, &d->at_oom);
			g->oom_dev = d;
			g->oom_tid = e->tid;
		}
	}
}

static int dev_cmp(const void *a, const void *b)
{
	const struct frag_dev *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/* Two passes over one trace: the first counts and finds each device's
 * peak, the second takes the inventory there. Returns the trace's exit
 * code, or -1. */
static int frag_replay(struct frag *g, struct trace *t)
{
	int r = -1;
	for (g->pass = 1; g->pass <= 2; g->pass++) {
		replay_init(&g->rp);
		r = trace_replay(t, NULL, on_event, g);
		for (size_t k = 0; g->pass == 1 && k < g->res->ndevs; k++) {
			struct frag_dev *d = &g->res->devs[k];
			struct rp_dev *rd = replay_dev(&g->rp, d->ordinal);
			d->peak = rd->lv.peak;
			d->peak_seq = rd->lv.peak_seq;
			/* at the trace's end, the instant every report's "at the
			 * end" names (the ages run to it), not the last event */
			inventory(g, d->ordinal, trace_end_ns(t), &d->at_end);
		}
		replay_free(&g->rp);
		if (r >= 0)
			break;
	}
	return r;
}

void frag_totals(const struct frag_result *g, struct frag_total *tot)
{
	for (size_t k = 0; k < g->ndevs; k++) {
		const struct frag_dev *d = &g->devs[k];
		tot->peak_live += d->peak;
		tot->waste += frag_waste(d);
		tot->segments += d->at_peak.count;
		tot->segment_bytes += d->at_peak.bytes;
	}
}

static void fill_counters(const struct counters_set *set, struct frag_dev *d)
{
	const struct counters_series *s = counters_for_device(set, d->ordinal);
	const struct counters_point *p =
	    counters_for_moment(s, d->at_peak.taken ? d->at_peak.time_ns : UINT64_MAX, d->peak);
	uint64_t free_bytes;
	if (!p || !counters_cache_free(p, &free_bytes))
		return;
	d->counters = (struct frag_counters){
	    .known = true,
	    .reserved = p->reserved,
	    .allocated = p->reserved - free_bytes,
	    .source = s->api,
	    .device_name = s->device_name,
	    .time_ns = p->time_ns,
	    .has_split = p->has & CNT_INACTIVE_SPLIT,
	    .inactive_split = p->inactive_split,
	    .max_free = s->max_cache_free,
	    .readings = s->n,
	};
}

static void fill_blocks(const struct fw_snapshot *s, int64_t device, struct frag_blocks *b)
{
	if (!s)
		return;
	b->known = true;
	b->time_ns = s->time_ns;
	b->seq = s->seq;
	b->reason = s->reason;
	fwhist_blocks(s, device, &b->fig);
}

int frag_compute(struct trace *t, bool has_device, int64_t device, struct frag_result *out)
{
	memset(out, 0, sizeof(*out));
	struct frag g = {.res = out, .has_device = has_device, .device = device};
	if (has_device)
		fdev_get(&g, device);
	int r = frag_replay(&g, t);
	if (out->ndevs)
		qsort(out->devs, out->ndevs, sizeof(*out->devs), dev_cmp);
	struct counters_set set;
	counters_load(t, &set);
	for (size_t i = 0; i < out->ndevs; i++) {
		struct frag_dev *d = &out->devs[i];
		fill_counters(&set, d);
		fill_blocks(fwhist_last(t, d->ordinal), d->ordinal, &d->blocks_last);
		fill_blocks(fwhist_first(t, GMT_FWSNAP_WHY_OOM, d->ordinal), d->ordinal,
			    &d->blocks_oom);
	}
	counters_free(&set);
	free(g.ages);
	return r;
}

void frag_free(struct frag_result *r)
{
	free(r->devs);
	r->devs = NULL;
	r->ndevs = 0;
}
