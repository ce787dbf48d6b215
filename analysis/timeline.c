/* plot's model (timeline.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/snapshot.h"
#include "analysis/timeline.h"

static struct timeline_panel *panel_for(struct timeline *p, int64_t ordinal)
{
	for (size_t i = 0; i < p->npanels; i++)
		if (p->panels[i].ordinal == ordinal)
			return &p->panels[i];
	GROW(p->panels, p->npanels, p->panels_cap);
	struct timeline_panel *pn = &p->panels[p->npanels++];
	memset(pn, 0, sizeof(*pn));
	pn->ordinal = ordinal;
	pn->cols = xcalloc(TIMELINE_COLS, sizeof(*pn->cols));
	return pn;
}

static int group_named(struct timeline *p, const char *name)
{
	for (int i = 0; i < p->ngroups; i++)
		if (strcmp(p->names[i], name) == 0)
			return i;
	if (p->ngroups == TIMELINE_GROUPS - 1) /* the last slot is "other" */
		return TIMELINE_GROUPS - 1;
	p->names[p->ngroups] = xstrdup(name);
	return p->ngroups++;
}

static int group_of(struct timeline *p, const struct rp_live *l)
{
	if (!p->by_library)
		return dev_kind_of(l);
	struct timeline_group *sg;
	HASH_FIND(hh, p->cache, &l->stack_id, sizeof(l->stack_id), sg);
	if (sg)
		return sg->group;
	sg = xcalloc(1, sizeof(*sg));
	sg->stack_id = l->stack_id;
	sg->group = group_named(p, trace_library(p->t, l->stack_id));
	HASH_ADD(hh, p->cache, stack_id, sizeof(sg->stack_id), sg);
	return sg->group;
}

static int column_at(const struct timeline *p, uint64_t time_ns)
{
	uint64_t rel = time_ns > p->t0 ? time_ns - p->t0 : 0;
	uint64_t c = p->span ? (uint64_t)((double)rel / (double)p->span * TIMELINE_COLS) : 0;
	return c >= TIMELINE_COLS ? TIMELINE_COLS - 1 : (int)c;
}

/* After the replay: the columns left, and each layer's highest in the
 * window (one allocated before it and held through it counts too). */
static void open_columns(struct timeline_panel *pn, int upto);
static void close_panel(struct timeline_panel *pn)
{
	open_columns(pn, TIMELINE_COLS - 1);
	memset(pn->group_max, 0, sizeof(pn->group_max));
	for (int c = 0; c < TIMELINE_COLS; c++)
		for (int g = 0; g < TIMELINE_GROUPS; g++)
			if (pn->cols[c].g[g] > pn->group_max[g])
				pn->group_max[g] = pn->cols[c].g[g];
}

/* Columns up to `upto` start from the state before the next change. */
static void open_columns(struct timeline_panel *pn, int upto)
{
	for (; pn->opened <= upto; pn->opened++) {
		struct timeline_column *c = &pn->cols[pn->opened];
		c->total = pn->total;
		memcpy(c->g, pn->cur, sizeof(c->g));
	}
}

static void on_change(void *ctx, const struct rp_live *l, bool counted)
{
	struct timeline *p = ctx;
	if (dev_kind_of(l) < 0 || (p->has_only_dev && l->device != p->only_dev))
		return;
	int g = group_of(p, l);
	struct timeline_panel *pn = panel_for(p, l->device);
	/* before the window: the state it opens with; after it: nothing */
	bool before = p->now<p->t0, after = p->now> p->t0 + p->span;
	if (after)
		return;
	int col = column_at(p, p->now);
	if (!before)
		open_columns(pn, col);
	if (counted) {
		pn->cur[g] += l->size;
		pn->total += l->size;
	} else {
		pn->cur[g] -= l->size < pn->cur[g] ? l->size : pn->cur[g];
		pn->total -= l->size < pn->total ? l->size : pn->total;
	}
	if (before)
		return;
	if (pn->cur[g] > pn->group_max[g])
		pn->group_max[g] = pn->cur[g];
	struct timeline_column *c = &pn->cols[col];
	if (pn->total > c->total) {
		c->total = pn->total;
		memcpy(c->g, pn->cur, sizeof(c->g));
	}
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct timeline *p = ctx;
	p->now = e->time_ns;
	replay_apply(&p->rp, e);
	const struct api_info *a = api_lookup(e->api);
	bool failed = gmt_failed(e->result, e->flags);
	if (failed && a && a->op == GMT_OP_ALLOC &&
	    replay_kind_bucket(a->kind, e->aux) == BK_DEVICE &&
	    !(p->has_only_dev && e->device != p->only_dev)) {
		if (p->nooms < TIMELINE_OOMS)
			p->ooms[p->nooms++] = (struct timeline_oom){e->time_ns, e->size, e->device};
		else
			p->ooms_dropped++;
		panel_for(p, e->device);
	}
}

static int panel_cmp(const void *a, const void *b)
{
	const struct timeline_panel *x = a, *y = b;
	return (x->ordinal > y->ordinal) - (x->ordinal < y->ordinal);
}

void timeline_activity(const struct trace *t, uint64_t *lo, uint64_t *hi)
{
	uint64_t origin = t->hdr.start_mono_ns, end = trace_end_ns(t);
	*lo = origin;
	*hi = end > origin ? end : origin;
	if (t->events && t->last_time_ns >= t->first_time_ns) {
		uint64_t a = t->first_time_ns, b = t->last_time_ns;
		uint64_t margin = (b - a) / 50 ? (b - a) / 50 : 1000000; /* 2%, or 1 ms */
		*lo = a > origin + margin ? a - margin : origin;
		*hi = b + margin < *hi ? b + margin : *hi;
	}
}

int timeline_compute(struct timeline *tl)
{
	counters_load(tl->t, &tl->counters);
	tl->ngroups = tl->by_library ? 0 : DK_COUNT;
	replay_init(&tl->rp);
	tl->rp.on_change = on_change;
	tl->rp.on_change_ctx = tl;
	int rc = trace_replay(tl->t, NULL, on_event, tl);
	if (rc >= 0)
		return rc;
	for (size_t i = 0; i < tl->npanels; i++) {
		close_panel(&tl->panels[i]);
		for (size_t k = 0; k < tl->rp.ndevs; k++)
			if (tl->rp.devs[k].ordinal == tl->panels[i].ordinal)
				tl->panels[i].lv = tl->rp.devs[k].lv;
	}
	if (tl->npanels > 1)
		qsort(tl->panels, tl->npanels, sizeof(*tl->panels), panel_cmp);
	return rc;
}

void timeline_free(struct timeline *tl)
{
	for (size_t i = 0; i < tl->npanels; i++)
		free(tl->panels[i].cols);
	free(tl->panels);
	for (int i = 0; i < tl->ngroups; i++)
		free(tl->names[i]);
	struct timeline_group *sg, *tmp;
	HASH_ITER(hh, tl->cache, sg, tmp)
	{
		HASH_DEL(tl->cache, sg);
		free(sg);
	}
	replay_free(&tl->rp);
	counters_free(&tl->counters);
}

size_t timeline_phases(const struct trace *t, struct timeline_phase **out)
{
	struct timeline_phase *v = NULL;
	size_t n = 0, cap = 0;
	struct open_range {
		int tid;
		uint64_t id;
		bool by_id;
		size_t idx;
	} *open = NULL;
	size_t nopen = 0, open_cap = 0;
	uint64_t end = trace_end_ns(t);
	for (size_t i = 0; i < t->nranges; i++) {
		const struct trace_range *r = &t->ranges[i];
		if (r->op == GMT_RANGE_PUSH || r->op == GMT_RANGE_START ||
		    r->op == GMT_RANGE_MARK) {
			int depth = 0;
			for (size_t k = 0; k < nopen; k++)
				depth += open[k].tid == r->tid && !open[k].by_id;
			GROW(v, n, cap);
			v[n] = (struct timeline_phase){r->time_ns, end, r->text, depth,
						       r->op == GMT_RANGE_MARK};
			if (r->op != GMT_RANGE_MARK) {
				GROW(open, nopen, open_cap);
				open[nopen++] =
				    (struct open_range){r->tid, r->id, r->op == GMT_RANGE_START, n};
			}
			n++;
			continue;
		}
		/* POP: the innermost push of the thread; END: the start with that id */
		for (size_t k = nopen; k-- > 0;) {
			bool match = r->op == GMT_RANGE_END
					 ? open[k].by_id && open[k].id == r->id
					 : !open[k].by_id && open[k].tid == r->tid;
			if (match) {
				v[open[k].idx].end = r->time_ns;
				memmove(&open[k], &open[k + 1], (nopen - k - 1) * sizeof(*open));
				nopen--;
				break;
			}
		}
	}
	free(open);
	*out = v;
	return n;
}
