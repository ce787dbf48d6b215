/* The fragmentation aggregator: see fragmentation.h.
 *
 * Two replays per trace: the first finds each device's peak and counts, the
 * second takes snapshots of the live set (evenly in time, at each peak, at
 * the end). */
#include "analysis/fragmentation.h"

#include <stdlib.h>
#include <string.h>

#define LARGE_PAGE   (2ull << 20) /* granularity of allocations over 1 MiB */
#define SMALL_GRAIN  512ull
#define LARGE_CUTOFF (1ull << 20)

/* The state of one computation. */
struct frag {
	struct frag_result *res;
	bool has_device;
	int64_t device;
	int pass;
	struct replay rp;
	uint64_t t0, t1;
	int last_bucket;
	/* scratch for snapshots */
	struct range {
		uint64_t start, end;
	} * ranges;
	size_t ranges_cap;
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

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* The live device allocations (addresses) of device `ord`, now. */
static void snapshot(struct frag *g, int64_t ord, uint64_t time, struct frag_snap *s)
{
	size_t n = 0;
	memset(s, 0, sizeof(*s));
	s->taken = true;
	s->time_ns = time;
	struct rp_live *l, *tmp;
	RP_EACH(&g->rp, GMT_SPACE_ADDR, l, tmp)
	{
		if (l->bucket != BK_DEVICE || l->device != ord)
			continue;
		if (n == g->ranges_cap) {
			g->ranges_cap = g->ranges_cap ? 2 * g->ranges_cap : 256;
			g->ranges = xrealloc(g->ranges, g->ranges_cap * sizeof(*g->ranges));
		}
		uint64_t end = l->key + l->size < l->key ? UINT64_MAX : l->key + l->size;
		g->ranges[n++] = (struct range){l->key, end};
		s->live += l->size;
		s->live_rounded += frag_rounded(l->size);
	}
	s->count = n;
	if (!n)
		return;
	if (n)
		qsort(g->ranges, n, sizeof(*g->ranges), range_cmp);
	uint64_t cur_end = g->ranges[0].end;
	s->covered = g->ranges[0].end - g->ranges[0].start;
	for (size_t i = 1; i < n; i++) {
		const struct range *r = &g->ranges[i];
		if (r->start > cur_end) {
			uint64_t gap = r->start - cur_end;
			s->gaps++;
			s->free_in_span += gap;
			if (gap > s->largest_gap)
				s->largest_gap = gap;
		}
		if (r->end > cur_end) {
			s->covered += r->end - (r->start > cur_end ? r->start : cur_end);
			cur_end = r->end;
		}
	}
	s->span = cur_end - g->ranges[0].start;
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

static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct frag *g = ctx;
	const struct api_info *a = api_lookup(e->api);
	bool ok = !gmt_failed(e->result, e->flags);
	if (g->pass == 1 && a && ok) {
		if (a->op == GMT_OP_FREE && a->space == GMT_SPACE_ADDR) {
			struct rp_live *l = replay_find(&g->rp, GMT_SPACE_ADDR, e->ptr);
			if (l && api_lookup(l->api) && api_lookup(l->api)->kind == GMT_KIND_ASYNC)
				g->res->async_live -=
				    l->size < g->res->async_live ? l->size : g->res->async_live;
		}
		if (a->op == GMT_OP_ALLOC && a->kind == GMT_KIND_ASYNC) {
			g->res->async_live += e->size;
			if (g->res->async_live > g->res->async_peak)
				g->res->async_peak = g->res->async_live;
		}
		if (a->op == GMT_OP_ALLOC && a->kind == GMT_KIND_POOL)
			g->res->pools_created++;
		if (a->op == GMT_OP_POOL_TRIM)
			g->res->pool_trims++;
		bool dev = a->op == GMT_OP_ALLOC && gmt_device_memory(a->kind, e->aux);
		if (dev && selected(g, e->device)) {
			struct frag_dev *d = fdev_get(g, e->device);
			int b = 0;
			for (uint64_t s = e->size; s > 1; s >>= 1)
				b++;
			if (e->size == 0)
				b = 64; /* the zero-size bucket */
			d->hist_count[b]++;
			d->hist_bytes[b] += e->size;
			d->allocs++;
			d->requested += e->size;
			d->rounded += frag_rounded(e->size);
		}
	}
	replay_apply(&g->rp, e);
	if (g->pass == 1) {
		if (a && is_vmm(e->api))
			vmm_update(g);
		return;
	}
	/* pass 2: snapshots */
	int bucket = 0;
	if (g->t1 > g->t0)
		bucket = (int)((unsigned __int128)(e->time_ns - g->t0) * FRAG_NSAMPLES /
			       (g->t1 - g->t0 + 1));
	bool sample = bucket > g->last_bucket;
	if (sample)
		g->last_bucket = bucket;
	for (size_t i = 0; i < g->res->ndevs; i++) {
		struct frag_dev *d = &g->res->devs[i];
		if (d->peak_seq && g->rp.seq == d->peak_seq)
			snapshot(g, d->ordinal, e->time_ns, &d->at_peak);
		if (sample && d->nsamples < FRAG_NSAMPLES)
			snapshot(g, d->ordinal, e->time_ns, &d->samples[d->nsamples++]);
	}
}

static int dev_cmp(const void *a, const void *b)
{
	const struct frag_dev *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

double frag_ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

/* Two passes over one trace: the first finds each device's peak, the second
 * snapshots the address space there and at the end. Returns the trace's
 * exit code, or -1. */
static int frag_replay(struct frag *g, struct trace *t)
{
	int r = -1;
	for (g->pass = 1; g->pass <= 2; g->pass++) {
		replay_init(&g->rp);
		g->last_bucket = -1;
		r = trace_replay(t, NULL, on_event, g);
		for (size_t k = 0; k < g->res->ndevs; k++) {
			struct frag_dev *d = &g->res->devs[k];
			if (g->pass == 1) {
				struct rp_dev *rd = replay_dev(&g->rp, d->ordinal);
				d->peak = rd->lv.peak;
				d->peak_seq = rd->lv.peak_seq;
			} else {
				snapshot(g, d->ordinal, t->last_time_ns, &d->at_end);
			}
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
		tot->peak_live += d->at_peak.live;
		tot->peak_free += d->at_peak.free_in_span;
		tot->waste += d->rounded - d->requested;
		double r = frag_ratio(d->at_peak.free_in_span, d->at_peak.span);
		tot->worst = r > tot->worst ? r : tot->worst;
	}
}

int frag_compute(struct trace *t, bool has_device, int64_t device, struct frag_result *out)
{
	memset(out, 0, sizeof(*out));
	struct frag g = {.res = out, .has_device = has_device, .device = device};
	g.t0 = t->events ? t->first_time_ns : 0;
	g.t1 = t->events ? t->last_time_ns : 0;
	if (has_device)
		fdev_get(&g, device);
	int r = frag_replay(&g, t);
	if (out->ndevs)
		qsort(out->devs, out->ndevs, sizeof(*out->devs), dev_cmp);
	free(g.ranges);
	return r;
}

void frag_free(struct frag_result *r)
{
	free(r->devs);
	r->devs = NULL;
	r->ndevs = 0;
}
