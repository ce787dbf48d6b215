/* A PyTorch allocator history through the model (analysis/allocreplay.h).
 * Two reads of the trace's history entries: pass A learns, per device,
 * what lay before the history's first entry; pass B follows the history
 * with the model (under both tie-break orders; the better one is kept)
 * and runs the requests freely under the recorded and the asked
 * settings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/hash.h"

#include "analysis/allocreplay.h"
#include "analysis/fwhist.h"
#include "analysis/trace.h"
#include "reader/xalloc.h"

#define NORDER	 2
#define FAKE_VA	 (1ull << 56) /* free runs' made-up addresses: above any real one */
#define MAX_DEVS 4096

/* ---- small sets ---- */

struct addr_ent {
	uint64_t addr, size, req, stream;
	bool pending;
	UT_hash_handle hh;
};

static struct addr_ent *set_find(struct addr_ent *set, uint64_t addr)
{
	struct addr_ent *e;
	HASH_FIND(hh, set, &addr, sizeof addr, e);
	return e;
}

static struct addr_ent *set_put(struct addr_ent **set, uint64_t addr)
{
	struct addr_ent *e = set_find(*set, addr);
	if (!e) {
		e = xcalloc(1, sizeof *e);
		e->addr = addr;
		HASH_ADD(hh, *set, addr, sizeof e->addr, e);
	}
	return e;
}

static void set_del(struct addr_ent **set, struct addr_ent *e)
{
	HASH_DEL(*set, e);
	free(e);
}

static void set_free(struct addr_ent **set)
{
	struct addr_ent *e, *tmp;
	HASH_ITER(hh, *set, e, tmp)
	{
		HASH_DEL(*set, e);
		free(e);
	}
}

/* ---- a free run's device: made-up addresses, a capacity ---- */

struct fdev {
	uint64_t cap, used, next;
};

static int f_malloc(void *ctx, uint64_t size, uint64_t *ptr)
{
	struct fdev *d = ctx;
	if (d->cap && d->used + size > d->cap)
		return -1;
	d->used += size;
	*ptr = d->next;
	d->next += (size + (2ull << 20) - 1) / (2ull << 20) * (2ull << 20) + (2ull << 20);
	return 0;
}

static void f_free(void *ctx, uint64_t ptr, uint64_t size)
{
	struct fdev *d = ctx;
	(void)ptr;
	d->used -= size < d->used ? size : d->used;
}

static int f_reserve(void *ctx, uint64_t size, uint64_t *va)
{
	struct fdev *d = ctx;
	*va = d->next;
	d->next += size + (2ull << 20);
	return 0;
}

static int f_map(void *ctx, uint64_t va, uint64_t page, uint64_t n)
{
	struct fdev *d = ctx;
	(void)va;
	if (d->cap && d->used + page * n > d->cap)
		return -1;
	d->used += page * n;
	return 0;
}

static void f_unmap(void *ctx, uint64_t va, uint64_t page, uint64_t n)
{
	f_free(ctx, va, page * n);
}

static uint64_t f_free_bytes(void *ctx)
{
	struct fdev *d = ctx;
	return d->cap > d->used ? d->cap - d->used : 0;
}

/* ---- per device ---- */

struct run {
	struct ta *m;
	struct fdev fd;
	struct addr_ent *map; /* recorded address -> the model's */
	struct ar_run out;
};

struct endseg {
	int64_t device;
	uint64_t addr, size, stream;
	bool small, expandable, private_pool;
	size_t first_block, nblocks;
};

struct endblk {
	uint64_t addr, size, req;
	int state;
};

#define MAX_PENDING_MAPS 64

/* segment_map entries waiting for the alloc they were made for */
struct pmaps {
	uint64_t addr[MAX_PENDING_MAPS], size[MAX_PENDING_MAPS];
	int n;
	uint64_t total;
};

struct range {
	uint64_t lo, hi;
};

struct dstate {
	bool used;
	/* pass A */
	struct addr_ent *live;	 /* blocks the history allocated, not yet freed */
	struct addr_ent *pend;	 /* freed, not completed */
	struct addr_ent *segs;	 /* segments the history made, live */
	struct addr_ent *pre;	 /* blocks freed that the history never allocated */
	struct addr_ent *preseg; /* segments freed that the history never made */
	struct addr_ent *mapped; /* expandable ranges the history mapped (by start) */
	struct addr_ent *premap; /* ranges unmapped that it never mapped */
	/* pass B */
	struct ta *follow[NORDER];
	struct run rec[NORDER], ask[NORDER];
	int pending_seg; /* 1: a segment_alloc, 2: segment_map(s), waiting for their alloc */
	struct pmaps pm;
	/* segments reserved before the history (their age is not known), sorted */
	struct range *before;
	size_t nbefore, before_cap;
	uint64_t differ_age[NORDER]; /* divergences between two such segments' blocks */
	uint64_t pend_seg_addr, pend_seg_size, pend_seg_stream;
	int release_burst; /* segment frees seen, their kind not known yet */
	uint64_t peak_reserved_seen;
	struct ar_divergence first_div[NORDER];
	uint64_t same[NORDER], same_cached[NORDER], same_new[NORDER], differ[NORDER];
	/* the device's size, estimated: segment bytes the history added up to
	 * its first oom, and the device's free bytes then */
	int64_t rel_reserved, oom_rel;
	uint64_t oom_free;
	bool had_oom;
	struct ar_device out;
};

struct ctx {
	const struct ar_options *o;
	struct ar_result *r;
	struct trace *t;
	struct dstate *d;
	int64_t nd;
	struct endseg *es;
	size_t nes, escap;
	struct endblk *eb;
	size_t neb, ebcap;
	struct ta_config recorded;
	bool have_settings;
};

static struct dstate *dev(struct ctx *c, int64_t d)
{
	if (d < 0 || d >= MAX_DEVS)
		return NULL;
	if (d >= c->nd) {
		c->d = xrealloc(c->d, (size_t)(d + 1) * sizeof *c->d);
		memset(c->d + c->nd, 0, (size_t)(d + 1 - c->nd) * sizeof *c->d);
		c->nd = d + 1;
	}
	c->d[d].used = true;
	c->d[d].out.device = d;
	return &c->d[d];
}

static bool wanted(const struct ctx *c, int64_t d)
{
	return c->o->only_device < 0 || c->o->only_device == d;
}

/* ---- settings ---- */

static bool text_u64(const char *v, uint64_t *out)
{
	char *end;
	if (!v || !*v)
		return false;
	if (*v == '-') { /* SIZE_MAX pickled as -1: no limit */
		strtoll(v, &end, 10);
		*out = UINT64_MAX;
		return !*end;
	}
	*out = strtoull(v, &end, 10);
	return !*end;
}

void ar_config_from(struct ta_config *c, const struct fw_snapshot *s)
{
	ta_config_default(c);
	if (!s)
		return;
	const char *v;
	uint64_t u;
	/* the conf string first (it has keys the dict lacks), the dict over it */
	if ((v = fwhist_setting(s, "PYTORCH_CUDA_ALLOC_CONF")) && *v) {
		char err[128];
		struct ta_config tmp = *c;
		if (!ta_config_parse(&tmp, v, err, sizeof err))
			*c = tmp;
	}
	if (text_u64(fwhist_setting(s, "max_split_size"), &u))
		c->max_split_size = u;
	if ((v = fwhist_setting(s, "garbage_collection_threshold")) && *v) {
		char *end;
		double d = strtod(v, &end);
		if (!*end && d >= 0 && d < 1)
			c->gc_threshold = d;
	}
	if ((v = fwhist_setting(s, "expandable_segments")))
		c->expandable_segments =
		    !strcmp(v, "True") || !strcmp(v, "true") || !strcmp(v, "1");
	/* "1:0,2:0,4:0,...": divisions per interval, keyed by its MiB */
	if ((v = fwhist_setting(s, "roundup_power2_divisions")) && *v) {
		char buf[512];
		snprintf(buf, sizeof buf, "%s", v);
		char *save = NULL;
		for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *colon = strchr(tok, ':'), *end;
			if (!colon)
				continue;
			unsigned long mb = strtoul(tok, &end, 10), n = strtoul(colon + 1, NULL, 10);
			if (end != colon || !mb || (mb & (mb - 1)))
				continue;
			int idx = __builtin_ctzl(mb);
			if (idx < TA_ROUNDUP_ENTRIES)
				c->roundup[idx] = (uint32_t)n;
		}
	}
}

/* ---- pass A ---- */

static void learn_segment(struct ctx *c, const struct fw_segment *g)
{
	struct dstate *d = dev(c, g->device);
	if (!d)
		return;
	struct ar_end *e = &d->out.end;
	e->segments++;
	e->reserved += g->size;
	GROW(c->es, c->nes, c->escap);
	struct endseg *s = &c->es[c->nes++];
	*s = (struct endseg){g->device,
			     g->address,
			     g->size,
			     g->stream,
			     (g->flags & GMT_FWSEG_SMALL) != 0,
			     (g->flags & GMT_FWSEG_EXPANDABLE) != 0,
			     g->pool_a || g->pool_b,
			     c->neb,
			     0};
	c->r->private_pool_segments += s->private_pool;
	for (size_t i = 0; i < g->nblocks; i++) {
		const struct fw_block *b = &g->blocks[i];
		if (b->state == GMT_FWBLOCK_ACTIVE_ALLOCATED) {
			e->allocated += b->size;
			e->requested += b->requested;
		} else if (b->state == GMT_FWBLOCK_ACTIVE_PENDING_FREE) {
			e->pending += b->size;
		} else {
			e->inactive += b->size;
		}
		if (b->state != GMT_FWBLOCK_ACTIVE_ALLOCATED &&
		    b->state != GMT_FWBLOCK_ACTIVE_PENDING_FREE)
			continue;
		GROW(c->eb, c->neb, c->ebcap);
		c->eb[c->neb++] = (struct endblk){b->address, b->size, b->requested, (int)b->state};
		s->nblocks++;
	}
}

static void learn_entry(struct ctx *c, int64_t device, const struct gmt_fw_entry *e)
{
	struct dstate *d = dev(c, device);
	if (!d)
		return;
	struct addr_ent *x;
	switch (e->action) {
	case GMT_FW_ALLOC:
		x = set_put(&d->live, e->addr);
		x->req = e->size;
		x->stream = e->stream;
		break;
	case GMT_FW_FREE_REQUESTED:
		if ((x = set_find(d->live, e->addr))) {
			set_del(&d->live, x);
		} else if (!set_find(d->pre, e->addr)) {
			x = set_put(&d->pre, e->addr);
			x->req = e->size;
			x->stream = e->stream;
		}
		set_put(&d->pend, e->addr);
		break;
	case GMT_FW_FREE_COMPLETED:
		if ((x = set_find(d->pend, e->addr))) {
			set_del(&d->pend, x);
		} else if (!set_find(d->pre, e->addr)) { /* requested before the window */
			x = set_put(&d->pre, e->addr);
			x->req = e->size;
			x->stream = e->stream;
			x->pending = true;
		}
		break;
	case GMT_FW_SEGMENT_ALLOC:
		x = set_put(&d->segs, e->addr);
		x->size = e->size;
		d->rel_reserved += (int64_t)e->size;
		break;
	case GMT_FW_SEGMENT_FREE:
		d->rel_reserved -= (int64_t)e->size;
		if ((x = set_find(d->segs, e->addr))) {
			set_del(&d->segs, x);
		} else if (!set_find(d->preseg, e->addr)) {
			x = set_put(&d->preseg, e->addr);
			x->size = e->size;
			x->stream = e->stream;
		}
		break;
	case GMT_FW_SEGMENT_MAP:
		x = set_put(&d->mapped, e->addr);
		x->size = e->size;
		d->rel_reserved += (int64_t)e->size;
		break;
	case GMT_FW_SEGMENT_UNMAP:
		d->rel_reserved -= (int64_t)e->size;
		if ((x = set_find(d->mapped, e->addr)) && x->size == e->size) {
			set_del(&d->mapped, x);
		} else if (!x) {
			x = set_put(&d->premap, e->addr);
			x->size = e->size;
			x->stream = e->stream;
		}
		break;
	case GMT_FW_OOM:
		if (!d->had_oom) {
			d->had_oom = true;
			d->oom_rel = d->rel_reserved;
			d->oom_free = e->addr; /* an oom entry's addr is the device's free bytes */
		}
		break;
	default:
		break;
	}
}

static void on_learn(void *ctx, const struct fw_event *ev, const struct fw_state *st)
{
	struct ctx *c = ctx;
	(void)st;
	learn_entry(c, ev->device, ev->e);
	if (ev->window_start && ev->index)
		c->r->gaps++;
}

static int pass_a(struct ctx *c)
{
	const struct fw_snapshot *last = NULL;
	const struct fwhist *h = c->t->fw;
	for (size_t i = h ? h->nsnaps : 0; i-- > 0;)
		if (h->snaps[i].time_ns || h->snaps[i].nsettings) {
			last = &h->snaps[i];
			break;
		}
	ar_config_from(&c->recorded, last);
	c->have_settings = last && last->nsettings;
	const char *conf = last ? fwhist_setting(last, "PYTORCH_CUDA_ALLOC_CONF") : NULL;
	snprintf(c->r->conf, sizeof c->r->conf, "%s", conf ? conf : "");
	/* the end state: each device's last snapshot with its segments */
	for (size_t i = 0; h && i < h->nsnaps; i++)
		for (size_t j = 0; j < h->snaps[i].nsegs; j++) {
			const struct fw_segment *g = &h->snaps[i].segs[j];
			if (fwhist_last(c->t, g->device) == &h->snaps[i])
				learn_segment(c, g);
		}
	return fwhist_replay(c->t, on_learn, c);
}

/* ---- the state before the window, into a model ---- */

static void note_before(struct dstate *d, uint64_t addr, uint64_t size)
{
	GROW(d->before, d->nbefore, d->before_cap);
	d->before[d->nbefore++] = (struct range){addr, addr + size};
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static bool in_before(const struct dstate *d, uint64_t addr)
{
	size_t lo = 0, hi = d->nbefore;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->before[mid].hi <= addr)
			lo = mid + 1;
		else if (d->before[mid].lo > addr)
			hi = mid;
		else
			return true;
	}
	return false;
}

static void add_seg(struct ta *m, uint64_t addr, uint64_t size, uint64_t stream, bool small,
		    bool expandable)
{
	if (expandable)
		ta_map(m, addr, size, stream, small);
	else
		ta_add_segment(m, addr, size, stream, small);
}

/* What was live before the history, into model m (addresses as recorded). */
static void seed(struct ctx *c, int64_t di, struct ta *m, bool count)
{
	struct dstate *d = &c->d[di];
	struct ar_device *o = &d->out;
	/* segments: the end's that the history did not make, then the ones it
	 * freed without making */
	for (size_t i = 0; i < c->nes; i++) {
		const struct endseg *s = &c->es[i];
		if (s->device != di || (!s->expandable && set_find(d->segs, s->addr)) ||
		    (s->expandable && set_find(d->mapped, s->addr)))
			continue;
		add_seg(m, s->addr, s->size, s->stream, s->small, s->expandable);
		if (count) {
			note_before(d, s->addr, s->size);
			o->before_segments++;
			o->before_segment_bytes += s->size;
		}
	}
	struct addr_ent *x, *tmp;
	HASH_ITER(hh, d->preseg, x, tmp)
	{
		add_seg(m, x->addr, x->size, x->stream, x->size == TA_SMALL_BUFFER, false);
		if (count) {
			note_before(d, x->addr, x->size);
			o->before_segments++;
			o->before_segment_bytes += x->size;
		}
	}
	HASH_ITER(hh, d->premap, x, tmp)
	{
		add_seg(m, x->addr, x->size, x->stream, false, true);
		if (count) {
			note_before(d, x->addr, x->size);
			o->before_segments++;
			o->before_segment_bytes += x->size;
		}
	}
	if (count && d->nbefore) /* qsort's base may not be NULL, even for 0 */
		qsort(d->before, d->nbefore, sizeof *d->before, range_cmp);
	/* blocks: the end's allocated ones the history did not allocate, and
	 * the ones it freed without allocating */
	for (size_t i = 0; i < c->nes; i++) {
		const struct endseg *s = &c->es[i];
		if (s->device != di)
			continue;
		for (size_t k = 0; k < s->nblocks; k++) {
			const struct endblk *b = &c->eb[s->first_block + k];
			if (set_find(d->live, b->addr) || set_find(d->pend, b->addr))
				continue;
			if (ta_assume_live(m, b->addr, b->size, b->req))
				continue;
			if (b->state == GMT_FWBLOCK_ACTIVE_PENDING_FREE)
				ta_free_requested(m, b->addr, true);
			if (count) {
				o->before_blocks++;
				o->before_block_bytes += b->size;
			}
		}
	}
	const struct ta_config *cfg = ta_config(m);
	HASH_ITER(hh, d->pre, x, tmp)
	{
		uint64_t size = ta_round_size(cfg, x->req);
		if (ta_assume_live(m, x->addr, size, x->req))
			continue;
		if (x->pending)
			ta_free_requested(m, x->addr, true);
		if (count) {
			o->before_blocks++;
			o->before_block_bytes += size;
		}
	}
}

/* ---- pass B ---- */

/* One history entry, as pass B takes it. */
struct hent {
	int64_t device;
	uint64_t index, addr, size, stream, time_us, device_free, stack_id;
	uint32_t action; /* GMT_FW_* */
};

static void new_run(struct ctx *c, int64_t di, struct run *r, const struct ta_config *cfg,
		    const struct fdev *cap)
{
	r->fd = (struct fdev){.cap = cap->cap, .next = FAKE_VA};
	struct ta_backend b = {.ctx = &r->fd,
			       .malloc = f_malloc,
			       .free = f_free,
			       .reserve = f_reserve,
			       .map = f_map,
			       .unmap = f_unmap,
			       .device_free = f_free_bytes};
	r->m = ta_new(cfg, &b);
	if (!r->m)
		xalloc_failed();
	seed(c, di, r->m, false);
	r->fd.used = ta_stats(r->m)->reserved;
}

static void note_peak(struct run *r)
{
	const struct ta_stats *s = ta_stats(r->m);
	if (s->reserved > r->out.reserved_peak) {
		r->out.reserved_peak = s->reserved;
		r->out.segments_at_peak = s->segments + s->mapped_ranges;
		r->out.free_at_peak = s->reserved - s->allocated;
		r->out.largest_free_at_peak = ta_largest_free(r->m);
	}
	if (s->allocated > r->out.allocated_peak)
		r->out.allocated_peak = s->allocated;
}

/* The free runs' device size: given, the trace's DEVICE record, or
 * estimated from the history's first oom. */
static uint64_t device_size(struct ctx *c, int64_t di, struct dstate *d, uint64_t before)
{
	const struct trace_device *td = trace_device(c->t, di);
	d->out.size_source = 0;
	if (c->o->device_size) {
		d->out.size_source = 1;
		return c->o->device_size;
	}
	if (td && td->total_bytes) {
		d->out.size_source = 2;
		return td->total_bytes;
	}
	if (d->had_oom && (int64_t)before + d->oom_rel > 0) {
		d->out.size_source = 3;
		return (uint64_t)((int64_t)before + d->oom_rel) + d->oom_free;
	}
	return 0;
}

/* The asked settings: the recorded ones with --alloc-conf and --fraction
 * over them. */
static void asked_config(struct ctx *c, struct ta_config *ask, uint64_t size)
{
	*ask = c->recorded;
	char err[160];
	if (c->o->asked_conf && ta_config_parse(ask, c->o->asked_conf, err, sizeof err))
		*ask = c->recorded; /* checked by the caller before the read */
	if (c->o->asked_fraction > 0 && size)
		ask->allowed_max = (uint64_t)(c->o->asked_fraction * (double)size);
	c->r->asked_config = *ask;
}

static void init_models(struct ctx *c)
{
	for (int64_t di = 0; di < c->nd; di++) {
		struct dstate *d = &c->d[di];
		if (!d->used || !wanted(c, di))
			continue;
		uint64_t size = 0;
		for (int o = 0; o < NORDER; o++) {
			struct ta_config cfg = c->recorded;
			cfg.order = (enum ta_order)o;
			if (!(d->follow[o] = ta_new(&cfg, NULL)))
				xalloc_failed();
			seed(c, di, d->follow[o], o == 0);
			if (o == 0)
				size = d->out.device_size =
				    device_size(c, di, d, ta_stats(d->follow[0])->reserved);
			cfg.device_total = size;
			struct fdev cap = {.cap = size};
			new_run(c, di, &d->rec[o], &cfg, &cap);
			note_peak(&d->rec[o]);
			if (c->o->have_asked) {
				struct ta_config ask;
				asked_config(c, &ask, size);
				ask.order = (enum ta_order)o;
				ask.device_total = size;
				new_run(c, di, &d->ask[o], &ask, &cap);
				note_peak(&d->ask[o]);
			}
		}
		d->peak_reserved_seen = ta_stats(d->follow[0])->reserved;
		d->out.recorded_reserved_peak = d->peak_reserved_seen;
		d->out.recorded_segments_at_peak =
		    ta_stats(d->follow[0])->segments + ta_stats(d->follow[0])->mapped_ranges;
	}
}

/* "forward (model.py:42) <- step (train.py:55)": Python frames first. */
static void stack_text(struct trace *t, char *buf, size_t size, uint64_t stack_id)
{
	struct trace_frame *fr = NULL;
	int n = trace_frames(t, stack_id, &fr);
	size_t len = 0;
	int shown = 0;
	buf[0] = 0;
	for (int pass = 0; pass < 2 && !shown; pass++)
		for (int i = 0; i < n && shown < 4 && len < size; i++) {
			const struct trace_frame *f = &fr[i];
			if (pass == 0 && !f->python)
				continue;
			char tb[256];
			len += (size_t)snprintf(buf + len, size - len, "%s%s", shown ? " <- " : "",
						trace_frame_text(f, tb, sizeof tb));
			shown++;
		}
	free(fr);
}

static void runs_each(struct dstate *d, bool asked, void (*fn)(struct run *r, void *arg), void *arg)
{
	for (int o = 0; o < NORDER; o++) {
		fn(&d->rec[o], arg);
		if (asked)
			fn(&d->ask[o], arg);
	}
}

static void run_empty_cache(struct run *r, void *arg)
{
	(void)arg;
	ta_empty_cache(r->m);
	r->out.empty_caches++;
}

/* A burst of segment frees ends: the program's empty_cache, or the
 * allocator's own release (a segment or an OOM follows), which a model
 * that knows the device's size decides for itself. */
static void end_burst(struct ctx *c, struct dstate *d, bool internal)
{
	if (!d->release_burst)
		return;
	d->release_burst = 0;
	if (!internal || !d->out.device_size)
		runs_each(d, c->o->have_asked, run_empty_cache, NULL);
}

static uint64_t run_addr(struct run *r, uint64_t recorded)
{
	struct addr_ent *x = set_find(r->map, recorded);
	return x ? x->size : recorded; /* not mapped: live before the history, as recorded */
}

struct req {
	const struct hent *e;
	bool oom_probe;
};

static void run_alloc(struct run *r, void *arg)
{
	const struct req *q = arg;
	uint64_t ptr;
	int rc = ta_malloc(r->m, q->e->size, q->e->stream, &ptr);
	if (rc == -2)
		xalloc_failed();
	if (rc) {
		if (!r->out.ooms++)
			r->out.first_oom_request = q->e->size;
		r->out.ooms_recorded += q->oom_probe;
		return;
	}
	note_peak(r);
	if (q->oom_probe) { /* the program did not get it: given back at once */
		ta_free(r->m, ptr);
		return;
	}
	set_put(&r->map, q->e->addr)->size = ptr;
}

static void run_free(struct run *r, void *arg)
{
	const struct hent *e = arg;
	uint64_t ptr = run_addr(r, e->addr);
	if (e->action == GMT_FW_FREE_REQUESTED) {
		ta_free_requested(r->m, ptr, true);
		return;
	}
	ta_free_completed(r->m, ptr);
	struct addr_ent *x = set_find(r->map, e->addr);
	if (x)
		set_del(&r->map, x);
}

/* A segment made (or pages mapped) that no alloc took: into the models as
 * free cache, so the recorded reserved bytes count it. PyTorch records a
 * segment_alloc right before the alloc it was made for; a history that
 * reorders them (or one that ends, or OOMs, in between) must not lose it. */
static void flush_pending(struct dstate *d)
{
	struct pmaps *pm = &d->pm;
	for (int o = 0; o < NORDER && d->pending_seg; o++) {
		struct ta *m = d->follow[o];
		if (d->pending_seg == 1)
			ta_add_segment(m, d->pend_seg_addr, d->pend_seg_size, d->pend_seg_stream,
				       d->pend_seg_size <= TA_SMALL_BUFFER);
		for (int i = 0; d->pending_seg == 2 && i < pm->n; i++)
			ta_map(m, pm->addr[i], pm->size[i], d->pend_seg_stream, false);
	}
	d->pending_seg = 0;
	pm->n = 0;
	pm->total = 0;
}

/* The recorded choice for the alloc e: a new segment (or mapping), else
 * the cached block it took. */
static struct ar_choice recorded_choice(const struct dstate *d, const struct pmaps *pm,
					const struct hent *e)
{
	struct ar_choice ch = {.ptr = e->addr};
	if (d->pending_seg == 1) {
		ch.new_segment = true;
		ch.size = d->pend_seg_size;
	} else if (d->pending_seg == 2) {
		ch.new_segment = true;
		ch.size = pm->total;
	}
	return ch;
}

static bool same_choice(const struct ar_choice *m, const struct ar_choice *r, bool expandable)
{
	if (m->new_segment != r->new_segment)
		return false;
	if (!m->new_segment)
		return m->ptr == r->ptr;
	return m->size == r->size && (!expandable || !m->ptr || m->ptr == r->ptr);
}

static void follow_alloc(struct ctx *c, struct dstate *d, struct pmaps *pm, const struct hent *e)
{
	if (d->pending_seg == 1 &&
	    (e->addr < d->pend_seg_addr || e->addr - d->pend_seg_addr >= d->pend_seg_size))
		flush_pending(d); /* not made for this alloc: it takes a cached block */
	struct ar_choice rec = recorded_choice(d, pm, e);
	bool small = ta_round_size(&c->recorded, e->size) <= TA_SMALL_SIZE;
	for (int o = 0; o < NORDER; o++) {
		struct ta *m = d->follow[o];
		struct ar_choice mine = {0};
		ta_choose(m, e->size, e->stream, &mine.ptr, &mine.new_segment, &mine.size);
		if (same_choice(&mine, &rec, c->recorded.expandable_segments)) {
			d->same[o]++;
			d->same_cached[o] += !rec.new_segment;
			d->same_new[o] += rec.new_segment;
		} else if (!mine.new_segment && !rec.new_segment && in_before(d, mine.ptr) &&
			   in_before(d, rec.ptr)) {
			/* two cached blocks in segments older than the history: their
			 * order (segment age) is not in it */
			d->differ_age[o]++;
			d->differ[o]++;
		} else if (!d->differ[o]++) {
			struct ar_divergence *v = &d->first_div[o];
			v->found = true;
			v->entry = e->index;
			v->time_us = e->time_us;
			v->request = e->size;
			v->stream = e->stream;
			v->model = mine;
			v->recorded = rec;
			stack_text(c->t, v->stack, sizeof v->stack, e->stack_id);
		}
		/* then what the allocator did */
		if (d->pending_seg == 1)
			ta_add_segment(m, d->pend_seg_addr, d->pend_seg_size, e->stream, small);
		for (int i = 0; d->pending_seg == 2 && i < pm->n; i++)
			ta_map(m, pm->addr[i], pm->size[i], e->stream, small);
		if (ta_take(m, e->addr, e->size, e->stream)) {
			/* not where the model has it free: carve it, to go on */
			if (ta_assume_live(m, e->addr, ta_round_size(ta_config(m), e->size),
					   e->size) &&
			    o == 0)
				d->out.unfollowed++;
		}
	}
	d->pending_seg = 0;
	pm->n = 0;
	pm->total = 0;
}

static void follow_peak(struct dstate *d)
{
	const struct ta_stats *s = ta_stats(d->follow[0]);
	if (s->reserved > d->peak_reserved_seen) {
		d->peak_reserved_seen = s->reserved;
		d->out.recorded_reserved_peak = s->reserved;
		d->out.recorded_segments_at_peak = s->segments + s->mapped_ranges;
	}
	if (s->allocated > d->out.recorded_allocated_peak)
		d->out.recorded_allocated_peak = s->allocated;
}

static void step(struct ctx *c, const struct hent *e)
{
	struct dstate *d = dev(c, e->device);
	if (!d || !wanted(c, e->device) || !d->follow[0])
		return;
	struct pmaps *pm = &d->pm;
	d->out.entries++;
	bool asked = c->o->have_asked;
	if (e->action != GMT_FW_ALLOC && e->action != GMT_FW_SEGMENT_MAP &&
	    e->action != GMT_FW_SEGMENT_ALLOC)
		flush_pending(d);
	switch (e->action) {
	case GMT_FW_SEGMENT_ALLOC:
		end_burst(c, d, true);
		flush_pending(d);
		d->pending_seg = 1;
		d->pend_seg_addr = e->addr;
		d->pend_seg_size = e->size;
		d->pend_seg_stream = e->stream;
		break;
	case GMT_FW_SEGMENT_MAP:
		end_burst(c, d, true);
		if (d->pending_seg == 1)
			flush_pending(d);
		d->pending_seg = 2;
		d->pend_seg_stream = e->stream;
		if (pm->n < MAX_PENDING_MAPS) {
			pm->addr[pm->n] = e->addr;
			pm->size[pm->n++] = e->size;
		}
		pm->total += e->size;
		break;
	case GMT_FW_ALLOC: {
		end_burst(c, d, false);
		d->out.allocs++;
		d->out.allocs_after_oom += d->out.recorded_ooms > 0;
		follow_alloc(c, d, pm, e);
		struct req q = {e, false};
		runs_each(d, asked, run_alloc, &q);
		break;
	}
	case GMT_FW_FREE_REQUESTED:
	case GMT_FW_FREE_COMPLETED:
		end_burst(c, d, false);
		d->out.frees += e->action == GMT_FW_FREE_REQUESTED;
		for (int o = 0; o < NORDER; o++) {
			if (e->action == GMT_FW_FREE_REQUESTED)
				ta_free_requested(d->follow[o], e->addr, true);
			else
				ta_free_completed(d->follow[o], e->addr);
		}
		runs_each(d, asked, run_free, (void *)e);
		break;
	case GMT_FW_SEGMENT_FREE:
	case GMT_FW_SEGMENT_UNMAP:
		for (int o = 0; o < NORDER; o++)
			if (e->action == GMT_FW_SEGMENT_FREE)
				ta_release_segment(d->follow[o], e->addr);
			else
				ta_unmap(d->follow[o], e->addr, e->size);
		d->release_burst++;
		break;
	case GMT_FW_OOM: {
		end_burst(c, d, true);
		if (!d->out.recorded_ooms++) {
			struct ar_oom *x = &d->out.first_oom;
			*x = (struct ar_oom){.found = true,
					     .entry = e->index,
					     .time_us = e->time_us,
					     .request = e->size,
					     .device_free = e->device_free,
					     .stream = e->stream};
			stack_text(c->t, x->stack, sizeof x->stack, e->stack_id);
		}
		d->out.allocs_after_oom = 0;
		struct hent probe = *e;
		struct req q = {&probe, true};
		runs_each(d, asked, run_alloc, &q);
		break;
	}
	default:
		break;
	}
	follow_peak(d);
}

static void on_step(void *ctx, const struct fw_event *ev, const struct fw_state *st)
{
	(void)st;
	const struct gmt_fw_entry *e = ev->e;
	struct hent h = {.device = ev->device,
			 .index = ev->index,
			 .addr = e->action == GMT_FW_OOM ? 0 : e->addr,
			 .device_free = e->action == GMT_FW_OOM ? e->addr : 0,
			 .size = e->size,
			 .stream = e->stream,
			 .time_us = e->time_us,
			 .stack_id = e->stack_id,
			 .action = e->action};
	step(ctx, &h);
}

static int pass_b(struct ctx *c)
{
	init_models(c);
	return fwhist_replay(c->t, on_step, c);
}

/* ---- results ---- */

static void finish_device(struct ctx *c, struct dstate *d, int best)
{
	struct ar_device *o = &d->out;
	o->same = d->same[best];
	o->same_cached = d->same_cached[best];
	o->same_new = d->same_new[best];
	o->differ = d->differ[best];
	o->differ_age = d->differ_age[best];
	o->first = d->first_div[best];
	o->as_recorded = d->rec[best].out;
	o->have_asked = c->o->have_asked;
	if (o->have_asked)
		o->asked = d->ask[best].out;
}

static void free_device(struct dstate *d)
{
	for (int o = 0; o < NORDER; o++) {
		ta_free_model(d->follow[o]);
		ta_free_model(d->rec[o].m);
		ta_free_model(d->ask[o].m);
		set_free(&d->rec[o].map);
		set_free(&d->ask[o].map);
	}
	set_free(&d->live);
	set_free(&d->pend);
	set_free(&d->segs);
	set_free(&d->pre);
	set_free(&d->preseg);
	set_free(&d->mapped);
	set_free(&d->premap);
	free(d->before);
}

int ar_check_conf(const char *conf, char *err, size_t errsize)
{
	struct ta_config c;
	ta_config_default(&c);
	char key[64];
	if (ta_config_unknown_key(conf, key, sizeof key)) {
		snprintf(err, errsize,
			 "'%s' is not one of PyTorch's allocator options (it refuses it too; "
			 "see "
			 "PYTORCH_ALLOC_CONF in PyTorch's CUDA notes)",
			 key);
		return -1;
	}
	return ta_config_parse(&c, conf, err, errsize);
}

const char *ar_config_text(const struct ta_config *c, char *buf, size_t size)
{
	return ta_config_text(c, buf, size);
}

bool ar_has_history(const struct trace *t)
{
	return fwhist_present(t) && t->fw->entries > 0;
}

int ar_replay(struct trace *t, const struct ar_options *o, struct ar_result *r)
{
	memset(r, 0, sizeof *r);
	struct ctx c = {.o = o, .r = r, .t = t};
	ta_config_default(&c.recorded);
	int rc = pass_a(&c);
	if (rc < 0)
		rc = pass_b(&c);
	r->have_settings = c.have_settings;
	r->recorded_config = c.recorded;
	if (rc < 0) {
		/* the order that made the allocator's choice more often */
		uint64_t score[NORDER] = {0};
		for (int64_t i = 0; i < c.nd; i++)
			for (int k = 0; k < NORDER; k++)
				score[k] += c.d[i].same[k];
		int best =
		    score[TA_ORDER_ADDRESS] > score[TA_ORDER_AGE] ? TA_ORDER_ADDRESS : TA_ORDER_AGE;
		r->order = (enum ta_order)best;
		r->order_tied = score[TA_ORDER_ADDRESS] == score[TA_ORDER_AGE];
		for (int64_t i = 0; i < c.nd; i++) {
			struct dstate *d = &c.d[i];
			if (!d->used || !wanted(&c, i) || !d->follow[0])
				continue;
			finish_device(&c, d, best);
			r->dev = xrealloc(r->dev, (r->ndev + 1) * sizeof *r->dev);
			r->dev[r->ndev++] = d->out;
		}
	}
	for (int64_t i = 0; i < c.nd; i++)
		free_device(&c.d[i]);
	free(c.d);
	free(c.es);
	free(c.eb);
	return rc;
}

void ar_free(struct ar_result *r)
{
	free(r->dev);
	memset(r, 0, sizeof *r);
}
