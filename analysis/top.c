/* top's passes (top.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/fwhist.h"
#include "analysis/peakset.h"
#include "analysis/top.h"

struct charge {
	struct top *tp;
	const struct rp_live *l;
	int metric;
};

static void charge_tensor(void *ctx, const struct fwt_tensor *x)
{
	struct charge *c = ctx;
	struct trace *t = &c->tp->cur->t;
	struct trace_row *r = trace_rows_get(&c->tp->rows, t, c->l->device, x->stack_id, c->l->api);
	trace_row_add(r, t, x->stack_id, c->metric, x->size);
	if (c->metric == TM_PEAK)
		r->peak_allocs++;
	else
		r->end_allocs++;
}

/* A framework segment: its tensors and what the cache held free, each in
 * its own row. false: not a segment. */
static bool charge_segment(struct top *tp, const struct rp_live *l, int metric)
{
	uint64_t rest;
	struct charge c = {tp, l, metric};
	if (!tp->fwt || !fwt_split(tp->fwt, l->device, l->key, l->size, charge_tensor, &c, &rest))
		return false;
	if (rest) {
		struct trace_row *r =
		    trace_rows_get_key(&tp->rows, l->device, TOP_CACHED, l->stack_id, l->api);
		trace_row_add(r, &tp->cur->t, l->stack_id, metric, rest);
	}
	return true;
}

/* The row an event's allocation counts in. */
static struct trace_row *event_row(struct top *tp, const struct gmt_event *e)
{
	if (tp->rows.by != GROUP_RANGE)
		return trace_rows_get(&tp->rows, &tp->cur->t, e->device, e->stack_id, e->api);
	struct phase *ph = phase_of(&tp->phases, e->tid);
	const struct api_info *a = api_lookup(e->api);
	if (a && !gmt_failed(e->result, e->flags))
		phase_remember(&tp->phases, a->space, e->ptr, ph);
	return trace_rows_get_key(&tp->rows, e->device, ph->name, e->stack_id, e->api);
}

static void range_pass(struct top *tp, const struct gmt_event *e)
{
	const struct api_info *a = api_lookup(e->api);
	phase_advance(&tp->phases, e->time_ns, 0);
	if (a && a->op == GMT_OP_ALLOC && trace_alloc_bucket(e) == BK_DEVICE)
		event_row(tp, e);
}

static void on_event1(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	struct top *tp = ctx;
	const struct api_info *a = api_lookup(e->api);
	if (tp->tensors)
		fwt_note_peak(&tp->cur->peak_ptrs, e, rp);
	if (tp->rows.by == GROUP_RANGE)
		phase_advance(&tp->phases, e->time_ns, 0);
	if (!a || a->op != GMT_OP_ALLOC)
		return;
	bool failed = gmt_failed(e->result, e->flags);
	if (failed) {
		if (gmt_device_memory(a->kind, e->aux))
			event_row(tp, e)->failed++;
		return;
	}
	if (trace_alloc_bucket(e) != BK_DEVICE)
		return;
	uint64_t rest;
	if (tp->segs && fwt_split(tp->segs, e->device, e->ptr, e->size, NULL, NULL, &rest)) {
		/* a segment: its tensors count instead (charge_totals) */
		tp->seg_api = e->api;
		if (!tp->cur->first_seg_ns || e->time_ns < tp->cur->first_seg_ns)
			tp->cur->first_seg_ns = e->time_ns;
		return;
	}
	struct trace_row *r = event_row(tp, e);
	trace_row_add(r, &tp->cur->t, e->stack_id, TM_TOTAL, e->size);
	trace_row_add(r, &tp->cur->t, e->stack_id, TM_CALLS, 1);
}

/* A driver call and the framework's entry for it stand on two clocks. */
#define SEG_SLACK_NS 1000000ull

/* --tensors: the tensors' allocations over the history, in total and calls
 * (in place of the segments' driver calls). */
static void charge_totals(struct top *tp, const struct fwt_set *s)
{
	struct top_trace *tt = tp->cur;
	for (size_t i = 0; i < s->ntotals; i++) {
		const struct fwt_total *x = &s->totals[i];
		struct trace_row *r =
		    trace_rows_get(&tp->rows, &tt->t, x->device, x->stack_id, tp->seg_api);
		trace_row_add(r, &tt->t, x->stack_id, TM_TOTAL, x->bytes);
		trace_row_add(r, &tt->t, x->stack_id, TM_CALLS, x->calls);
	}
	for (size_t i = 0; i < s->n; i++) {
		uint64_t f = s->devs[i].first_ns;
		if (f && (!tt->hist_from_ns || f < tt->hist_from_ns))
			tt->hist_from_ns = f;
	}
	/* the first window's dropped entries are the history's late start */
	const struct fwhist *h = tt->t.fw;
	tt->hist_late = (tt->first_seg_ns && tt->hist_from_ns > tt->first_seg_ns + SEG_SLACK_NS) ||
			(h && h->nsnaps && h->snaps[0].gap);
	for (size_t i = 1; h && i < h->nsnaps; i++)
		tt->hist_gaps += h->snaps[i].gap;
}

static void charge_live(struct top *tp, struct replay *rp, int64_t device, int metric)
{
	GMT_EACH_SPACE(sp)
	{
		struct rp_live *l, *lt;
		RP_EACH(rp, sp, l, lt)
		{
			if (l->bucket != BK_DEVICE || (device != INT64_MIN && l->device != device))
				continue;
			if (charge_segment(tp, l, metric))
				continue;
			struct trace_row *r =
			    tp->rows.by == GROUP_RANGE
				? trace_rows_get_key(
				      &tp->rows, l->device,
				      phase_recall(&tp->phases, l->space, l->key)->name,
				      l->stack_id, l->api)
				: trace_rows_get(&tp->rows, &tp->cur->t, l->device, l->stack_id,
						 l->api);
			trace_row_add(r, &tp->cur->t, l->stack_id, metric, l->size);
			if (metric == TM_PEAK)
				r->peak_allocs++;
			else
				r->end_allocs++;
		}
	}
}

static void on_event2(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	struct top *tp = ctx;
	struct top_trace *tt = tp->cur;
	if (tp->rows.by == GROUP_RANGE)
		range_pass(tp, e);
	while (tt->next < tt->ntargets && tt->targets[tt->next]->lv.peak_seq == rp->seq)
		charge_live(tp, rp, tt->targets[tt->next++]->ordinal, TM_PEAK);
}

static int target_cmp(const void *a, const void *b)
{
	const struct rp_dev *x = *(struct rp_dev *const *)a, *y = *(struct rp_dev *const *)b;
	return x->lv.peak_seq < y->lv.peak_seq ? -1 : x->lv.peak_seq > y->lv.peak_seq;
}

static int devpeak_cmp(const void *a, const void *b)
{
	const struct rp_dev *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/* --tensors: the tensors at each device's peak (peaks) or at the end. */
static int capture_tensors(struct top *tp, struct top_trace *tt, bool peaks, struct fwt_set *set)
{
	struct trace *t = &tt->t;
	size_t n = peaks ? tt->ndevs : t->ndevs;
	int64_t *devs = xcalloc(n + 1, sizeof(*devs));
	uint64_t *times = xcalloc(n + 1, sizeof(*times));
	uint64_t *ptrs = xcalloc(n + 1, sizeof(*ptrs));
	for (size_t i = 0; i < n; i++) {
		devs[i] = peaks ? tt->devs[i].ordinal : t->devs[i].ordinal;
		times[i] = peaks ? tt->devs[i].lv.peak_time_ns : UINT64_MAX;
		ptrs[i] = peaks ? fwt_peak_ptr(&tt->peak_ptrs, devs[i]) : 0;
	}
	int rc = fwt_capture(t, n, devs, times, ptrs, set);
	free(devs);
	free(times);
	free(ptrs);
	return rc;
}

int top_add_trace(struct top *tp, struct top_trace *tt)
{
	struct replay rp;
	struct fwt_set end_set = {0}, peak_set = {0};
	bool fw = tp->tensors && fwhist_present(&tt->t);
	tp->cur = tt;
	tp->fwt = NULL;
	int rc = fw ? capture_tensors(tp, tt, false, &end_set) : -1;
	if (rc >= 0)
		return rc;
	replay_init(&rp);
	phase_init(&tp->phases, &tt->t);
	tp->segs = fw ? &end_set : NULL;
	rc = trace_replay(&tt->t, &rp, on_event1, tp);
	tp->segs = NULL;
	if (rc >= 0) {
		fwt_free(&end_set);
		replay_free(&rp);
		phase_free(&tp->phases);
		return rc;
	}
	tp->fwt = fw ? &end_set : NULL;
	charge_live(tp, &rp, INT64_MIN, TM_END);
	tp->fwt = NULL;
	if (fw)
		charge_totals(tp, &end_set);
	fwt_free(&end_set);
	phase_free(&tp->phases);
	tt->ndevs = rp.ndevs;
	tt->devs = xrealloc(NULL, rp.ndevs * sizeof(*tt->devs));
	tt->targets = xrealloc(NULL, rp.ndevs * sizeof(*tt->targets));
	for (size_t i = 0; i < rp.ndevs; i++) {
		tt->devs[i] = rp.devs[i];
		if (rp.devs[i].lv.peak > tt->peak)
			tt->peak = rp.devs[i].lv.peak;
	}
	if (tt->ndevs)
		qsort(tt->devs, tt->ndevs, sizeof(*tt->devs), devpeak_cmp);
	for (size_t i = 0; i < tt->ndevs; i++)
		if (tt->devs[i].lv.peak_seq)
			tt->targets[tt->ntargets++] = &tt->devs[i];
	replay_free(&rp);
	if (tt->ntargets && fw && (rc = capture_tensors(tp, tt, true, &peak_set)) >= 0)
		return rc;
	for (size_t i = 0; i < peak_set.n; i++)
		tt->early |= peak_set.devs[i].early && peak_set.devs[i].seen;
	if (tt->ntargets) {
		if (tt->ntargets)
			qsort(tt->targets, tt->ntargets, sizeof(*tt->targets), target_cmp);
		tp->fwt = fw ? &peak_set : NULL;
		replay_init(&rp);
		phase_init(&tp->phases, &tt->t);
		rc = trace_replay(&tt->t, &rp, on_event2, tp);
		replay_free(&rp);
		phase_free(&tp->phases);
		tp->fwt = NULL;
	}
	fwt_free(&peak_set);
	trace_rows_fold(&tp->rows);
	return rc;
}

/* ---- one read of the file (top_read_trace) ----------------------------- */

/* What the pass counted for one (device, stack, api): made into rows once
 * the file is read, when the stacks' names are known (SYMBOL records may
 * come last), in the order first seen (the rows' order, as before). */
struct top_pend {
	UT_hash_handle hh;
	struct top_pend_key {
		int64_t device;
		uint64_t stack_id;
		uint64_t api;
	} k;
	uint64_t total, calls, failed;
	struct top_pend *next;
};

struct top_one {
	struct top *tp;
	struct top_pend *by_key, *first, **last;
};

static struct top_pend *pend_get(struct top_one *o, const struct gmt_event *e)
{
	struct top_pend_key k = {e->device, e->stack_id, e->api};
	struct top_pend *p;
	HASH_FIND(hh, o->by_key, &k, sizeof(k), p);
	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->k = k;
		HASH_ADD(hh, o->by_key, k, sizeof(p->k), p);
		*o->last = p;
		o->last = &p->next;
	}
	return p;
}

/* on_event1's counting, deferred (no --tensors, no --by range). */
static void on_event_one(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	struct top_one *o = ctx;
	const struct api_info *a = api_lookup(e->api);
	if (!a || a->op != GMT_OP_ALLOC)
		return;
	if (gmt_failed(e->result, e->flags)) {
		if (gmt_device_memory(a->kind, e->aux))
			pend_get(o, e)->failed++;
		return;
	}
	if (trace_alloc_bucket(e) != BK_DEVICE)
		return;
	struct top_pend *p = pend_get(o, e);
	p->total += e->size;
	p->calls++;
}

struct peak_charge {
	struct top *tp;
	int64_t device;
};

static void charge_peak_group(void *ctx, uint64_t stack_id, uint32_t api, uint64_t bytes,
			      uint64_t count, uint64_t big, uint64_t rounding)
{
	struct peak_charge *c = ctx;
	struct trace *t = &c->tp->cur->t;
	struct trace_row *r = trace_rows_get(&c->tp->rows, t, c->device, stack_id, api);
	trace_row_add(r, t, stack_id, TM_PEAK, bytes);
	r->peak_allocs += count;
}

/* The pass's counts into rows, then the end's and each peak's live set. */
static void one_pass_rows(struct top *tp, struct top_trace *tt, struct top_one *o,
			  struct replay *rp, struct peakset *ps)
{
	struct trace *t = &tt->t;
	for (struct top_pend *p = o->first; p; p = p->next) {
		struct trace_row *r =
		    trace_rows_get(&tp->rows, t, p->k.device, p->k.stack_id, (uint32_t)p->k.api);
		if (p->calls) {
			trace_row_add(r, t, p->k.stack_id, TM_TOTAL, p->total);
			trace_row_add(r, t, p->k.stack_id, TM_CALLS, p->calls);
		}
		r->failed += p->failed;
	}
	struct top_pend *p, *pt;
	HASH_ITER(hh, o->by_key, p, pt)
	{
		HASH_DEL(o->by_key, p);
		free(p);
	}
	charge_live(tp, rp, INT64_MIN, TM_END);
	tt->ndevs = rp->ndevs;
	tt->devs = xrealloc(NULL, rp->ndevs * sizeof(*tt->devs));
	tt->targets = NULL;
	for (size_t i = 0; i < rp->ndevs; i++) {
		tt->devs[i] = rp->devs[i];
		if (rp->devs[i].lv.peak > tt->peak)
			tt->peak = rp->devs[i].lv.peak;
	}
	if (tt->ndevs)
		qsort(tt->devs, tt->ndevs, sizeof(*tt->devs), devpeak_cmp);
	for (size_t i = 0; i < tt->ndevs; i++) {
		struct peak_charge c = {tp, tt->devs[i].ordinal};
		if (tt->devs[i].lv.peak_seq)
			peakset_each(ps, tt->devs[i].ordinal, charge_peak_group, &c);
	}
}

int top_read_trace(struct top *tp, struct top_trace *tt, const char *cmd, const char *path,
		   const struct site_opts *sites, bool short_names)
{
	if (tp->tensors || tp->rows.by == GROUP_RANGE) {
		int rc = trace_open(&tt->t, cmd, path);
		if (rc >= 0)
			return rc;
		tt->t.site_opts = sites;
		tt->t.short_names = short_names;
		return top_add_trace(tp, tt);
	}
	struct replay rp;
	struct peakset ps;
	struct top_one o = {tp, NULL, NULL, NULL};
	o.last = &o.first;
	replay_init(&rp);
	peakset_attach(&ps, &rp);
	tp->cur = tt;
	tp->fwt = NULL;
	int rc = trace_open_replay(&tt->t, cmd, path, &rp, on_event_one, &o);
	if (rc < 0) {
		tt->t.site_opts = sites;
		tt->t.short_names = short_names;
		one_pass_rows(tp, tt, &o, &rp, &ps);
		trace_rows_fold(&tp->rows);
	} else {
		struct top_pend *p, *pt;
		HASH_ITER(hh, o.by_key, p, pt)
		{
			HASH_DEL(o.by_key, p);
			free(p);
		}
	}
	peakset_free(&ps);
	replay_free(&rp);
	return rc;
}

void top_trace_free(struct top_trace *tt)
{
	free(tt->devs);
	free(tt->targets);
	free(tt->peak_ptrs.v);
	tt->devs = NULL;
	tt->targets = NULL;
	tt->peak_ptrs.v = NULL;
}
struct top_dev *top_devices(const struct top_trace *ts, int n, size_t *ndev)
{
	size_t cap = 0, nd = 0;
	for (int i = 0; i < n; i++)
		cap += ts[i].ndevs;
	struct top_dev *d = xrealloc(NULL, cap * sizeof(*d));
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < ts[i].ndevs; k++) {
			const struct rp_dev *p = &ts[i].devs[k];
			size_t j = 0;
			while (j < nd && d[j].ordinal != p->ordinal)
				j++;
			if (j == nd)
				d[nd++] = (struct top_dev){p->ordinal, 0, 0, 0};
			d[j].peak += p->lv.peak;
			d[j].peak_time =
			    p->lv.peak_seq ? trace_rel(&ts[i].t, p->lv.peak_time_ns) : 0;
			d[j].ntraces++;
		}
	for (size_t i = 1; i < nd; i++)
		for (size_t j = i; j > 0 && d[j - 1].ordinal > d[j].ordinal; j--) {
			struct top_dev x = d[j];
			d[j] = d[j - 1];
			d[j - 1] = x;
		}
	*ndev = nd;
	return d;
}
