/* How device memory grew, per device: see growth.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/growth.h"
#include "common/api.h"
#include "common/events.h"
#include "common/text.h"
#include "reader/xalloc.h"

/* A repeating allocation: (site, size, device), how often it was
 * allocated while none of it was live (a cycle), and when. */
struct growth_pat {
	UT_hash_handle hh;
	struct {
		uint64_t stack_id, size;
		int64_t device;
	} key;
	uint64_t live, order;
	uint64_t last; /* the last cycle's start */
	size_t n;
};

static struct growth_dev *gdev_get(struct growth_result *g, int64_t ordinal)
{
	for (size_t i = 0; i < g->ndevs; i++)
		if (g->devs[i].ordinal == ordinal)
			return &g->devs[i];
	g->devs = xrealloc(g->devs, (g->ndevs + 1) * sizeof(*g->devs));
	struct growth_dev *d = &g->devs[g->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	d->cols = xrealloc(NULL, (size_t)g->ncols * sizeof(*d->cols));
	memset(d->cols, 0, (size_t)g->ncols * sizeof(*d->cols));
	d->last_col = -1;
	return d;
}

static int column(const struct growth_result *g, uint64_t time)
{
	if (time <= g->t0 || g->t1 <= g->t0)
		return 0;
	unsigned __int128 x = (unsigned __int128)(time - g->t0) * (unsigned)g->ncols;
	uint64_t c = (uint64_t)(x / (g->t1 - g->t0 + 1));
	return c >= (uint64_t)g->ncols ? g->ncols - 1 : (int)c;
}

static void chart_fill(struct growth_result *g, struct growth_dev *d, int upto)
{
	while (d->last_col < upto) {
		d->last_col++;
		d->cols[d->last_col] = d->last_bytes;
	}
}

static uint64_t live_now(const struct growth_result *g, int64_t ordinal)
{
	for (size_t i = 0; i < g->rp.ndevs; i++)
		if (g->rp.devs[i].ordinal == ordinal)
			return g->rp.devs[i].lv.bytes;
	return 0;
}

/* Boundary k (pass 2): live bytes now; the iteration before it ends. */
static void boundary(struct growth_result *g, size_t k)
{
	for (size_t i = 0; i < g->ndevs; i++) {
		struct growth_dev *d = &g->devs[i];
		if (!d->mk_live) {
			d->mk_live = xcalloc(g->mk.n, sizeof(*d->mk_live));
			d->floor = xcalloc(g->mk.n, sizeof(*d->floor));
		}
		uint64_t live = live_now(g, d->ordinal);
		d->mk_live[k] = live;
		if (k)
			d->floor[k - 1] = d->cur_min;
		d->cur_min = live;
	}
}

/* Boundaries up to time (all with time UINT64_MAX): events at a boundary's
 * time count before it. */
static void boundaries_before(struct growth_result *g, uint64_t time)
{
	while (g->mk.next < g->mk.filled && g->mk.times[g->mk.next] < time)
		boundary(g, g->mk.next++);
}

/* Which of found boundaries are kept: every stride-th and the last. */
static size_t stride_for(size_t found)
{
	size_t max = GROWTH_MAX_ITERATIONS + 1;
	return found <= max ? 1 : (found - 1 + (max - 2)) / (max - 1);
}

static bool kept(size_t i, size_t found, size_t stride)
{
	return i % stride == 0 || i == found - 1;
}

static size_t kept_count(size_t found, size_t stride)
{
	return found ? (found - 1) / stride + 1 + ((found - 1) % stride != 0) : 0;
}

/* Markers' boundaries past GROWTH_MAX_ITERATIONS + 1, merged in place. */
static void thin_markers(struct growth_markers *mk)
{
	mk->found = mk->n;
	mk->stride = stride_for(mk->n);
	size_t k = 0;
	for (size_t i = 0; i < mk->n; i++)
		if (kept(i, mk->n, mk->stride))
			mk->times[k++] = mk->times[i];
	mk->n = mk->filled = k;
}

/* Pass 2 of a pattern: its cycles' starts are the boundaries (pass 1
 * counted them without keeping their times: one per cycle would grow with
 * the trace). */
static void pattern_cycle(struct growth_markers *mk, const struct rp_live *l, bool counted)
{
	if (l->stack_id != mk->pattern_stack || l->size != mk->pattern_size ||
	    l->device != mk->pattern_device)
		return;
	if (!counted) {
		if (mk->live)
			mk->live--;
		return;
	}
	if (mk->live++)
		return;
	size_t c = mk->cycle++;
	if (c < mk->found && kept(c, mk->found, mk->stride) && mk->filled < mk->n)
		mk->times[mk->filled++] = l->time_ns;
}

/* The device allocations live now on d's device, once: where a leak's
 * bytes are held. */
static void snapshot(struct growth_result *g, struct growth_dev *d)
{
	d->snapped = true;
	for (int sp = 0; sp < GMT_SPACES; sp++) {
		struct rp_live *l, *tmp;
		RP_EACH(&g->rp, sp, l, tmp)
		{
			if (l->bucket != BK_DEVICE || l->device != d->ordinal)
				continue;
			if (d->nheld == d->held_cap) {
				d->held_cap = d->held_cap ? 2 * d->held_cap : 64;
				d->held = xrealloc(d->held, d->held_cap * sizeof(*d->held));
			}
			d->held[d->nheld++] =
			    (struct growth_held){l->time_ns, l->stack_id, l->size};
		}
	}
}

static void snapshots_before(struct growth_result *g, uint64_t time)
{
	for (size_t i = 0; i < g->ndevs; i++)
		if (!g->devs[i].snapped && g->devs[i].snap_time < time)
			snapshot(g, &g->devs[i]);
}

/* Pass 1, without markers: counts each (site, size)'s cycles. */
static void on_change(void *ctx, const struct rp_live *l, bool counted)
{
	struct growth_result *g = ctx;
	if (l->bucket != BK_DEVICE)
		return;
	if (g->pass == 2) {
		pattern_cycle(&g->mk, l, counted);
		return;
	}
	struct growth_pat *p, probe;
	memset(&probe, 0, sizeof(probe));
	probe.key.stack_id = l->stack_id;
	probe.key.size = l->size;
	probe.key.device = l->device;
	HASH_FIND(hh, g->pats, &probe.key, sizeof(probe.key), p);
	if (!counted) {
		if (p && p->live)
			p->live--;
		return;
	}
	if (!p) {
		if (HASH_COUNT(g->pats) >= GROWTH_MAX_KEYS)
			return;
		p = xcalloc(1, sizeof(*p));
		p->key = probe.key;
		p->order = HASH_COUNT(g->pats);
		HASH_ADD(hh, g->pats, key, sizeof(p->key), p);
	}
	if (!p->live++) {
		p->last = l->time_ns;
		p->n++;
	}
}

/* Iterations from the most repeated cycle (ties: the first seen), if it
 * repeats GROWTH_PATTERN_MIN times; frees the counts. Their times come in
 * pass 2 (pattern_cycle); the last one's is known now. */
static void plan_pattern(struct growth_result *g)
{
	struct growth_pat *p, *tmp, *best = NULL;
	HASH_ITER(hh, g->pats, p, tmp)
	{
		if (p->n >= GROWTH_PATTERN_MIN &&
		    (!best || p->n > best->n || (p->n == best->n && p->order < best->order)))
			best = p;
	}
	if (best) {
		struct growth_markers *mk = &g->mk;
		char b[32];
		mk->source = "pattern";
		snprintf(mk->pattern_name, sizeof(mk->pattern_name), "%s allocation",
			 fmt_size(b, best->key.size));
		mk->name = mk->pattern_name;
		mk->pattern_stack = best->key.stack_id;
		mk->pattern_size = best->key.size;
		mk->pattern_device = best->key.device;
		mk->found = best->n;
		mk->stride = stride_for(best->n);
		mk->n = kept_count(best->n, mk->stride);
		mk->times = xcalloc(mk->n, sizeof(*mk->times));
		mk->times[mk->n - 1] = best->last;
	}
	HASH_ITER(hh, g->pats, p, tmp)
	{
		HASH_DEL(g->pats, p);
		free(p);
	}
}

/* A new high-water mark on d, made by e. */
static void raise_peak(struct growth_dev *d, const struct gmt_event *e, uint64_t peak)
{
	d->steps_total++;
	if (d->nsteps < GROWTH_MAX_STEPS) {
		if (d->nsteps == d->steps_cap) {
			d->steps_cap = d->steps_cap ? 2 * d->steps_cap : 64;
			d->steps = xrealloc(d->steps, d->steps_cap * sizeof(*d->steps));
		}
		d->steps[d->nsteps++] = (struct growth_step){
		    e->time_ns, peak, peak - d->peak, e->size, e->stack_id, e->api};
	}
	struct growth_chunk *ch;
	HASH_FIND(hh, d->chunks, &e->size, sizeof(e->size), ch);
	if (!ch) {
		ch = xcalloc(1, sizeof(*ch));
		ch->size = e->size;
		HASH_ADD(hh, d->chunks, size, sizeof(ch->size), ch);
	}
	ch->count++;
	d->peak = peak;
	d->peak_time = e->time_ns;
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct growth_result *g = ctx;
	if (g->pass == 2) {
		boundaries_before(g, e->time_ns);
		snapshots_before(g, e->time_ns);
	}
	replay_apply(&g->rp, e);
	const struct api_info *a = api_lookup(e->api);
	if (g->pass == 1 && a && a->op == GMT_OP_ALLOC && gmt_failed(e->result, e->flags) &&
	    gmt_out_of_memory(e->result)) {
		g->ooms++;
		g->last_oom = e->time_ns;
	}
	uint64_t total = 0;
	for (size_t i = 0; i < g->rp.ndevs; i++) {
		const struct rp_dev *rd = &g->rp.devs[i];
		if (g->p.has_device && rd->ordinal != g->p.device)
			continue;
		total += rd->lv.bytes;
		struct growth_dev *d = gdev_get(g, rd->ordinal);
		if (g->pass == 2) {
			if (rd->lv.bytes < d->cur_min)
				d->cur_min = rd->lv.bytes;
			continue;
		}
		if (rd->lv.bytes == d->last_bytes && rd->lv.peak == d->peak)
			continue;
		int c = column(g, e->time_ns);
		chart_fill(g, d, c);
		if (rd->lv.bytes > d->cols[c])
			d->cols[c] = rd->lv.bytes;
		if (rd->lv.peak > d->peak)
			raise_peak(d, e, rd->lv.peak);
		d->last_bytes = rd->lv.bytes;
	}
	if (g->pass == 1) {
		g->process_live = total;
		if (total > g->process_peak)
			g->process_peak = total;
	}
}

struct text_at {
	const char *text;
	size_t at; /* first seen first */
};

static int text_at_cmp(const void *a, const void *b)
{
	const struct text_at *x = a, *y = b;
	int c = strcmp(x->text, y->text);
	return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The most frequent of n texts, with at least GROWTH_MARKER_MIN; ties: the one
 * seen first. Sorted, not compared pairwise: a run with a range per step
 * has as many texts as steps (50,000 took 5 s pairwise). */
static const char *most_frequent(const char **texts, size_t n, size_t *count)
{
	const char *best = NULL;
	size_t best_at = 0;
	*count = 0;
	struct text_at *v = xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = (struct text_at){texts[i], i};
	if (n > 1)
		qsort(v, n, sizeof(*v), text_at_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(v[j].text, v[i].text); j++)
			;
		size_t c = j - i;
		if (c > *count || (c == *count && v[i].at < best_at)) {
			*count = c;
			best = v[i].text;
			best_at = v[i].at;
		}
	}
	free(v);
	return *count >= GROWTH_MARKER_MIN ? best : NULL;
}

static void plan_markers(struct trace *t, struct growth_markers *mk)
{
	memset(mk, 0, sizeof(*mk));
	const char **texts = xcalloc(t->nranges, sizeof(*texts));
	size_t n = 0, count;
	for (size_t i = 0; i < t->nranges; i++)
		if (t->ranges[i].op == GMT_RANGE_MARK)
			texts[n++] = t->ranges[i].text;
	const char *name = most_frequent(texts, n, &count);
	if (name) {
		mk->source = "mark";
		mk->name = name;
		mk->times = xcalloc(count, sizeof(*mk->times));
		for (size_t i = 0; i < t->nranges; i++)
			if (t->ranges[i].op == GMT_RANGE_MARK && !strcmp(t->ranges[i].text, name))
				mk->times[mk->n++] = t->ranges[i].time_ns;
		free(texts);
		thin_markers(mk);
		return;
	}
	/* top-level ranges: pushes at depth 0 on their thread, and starts */
	struct {
		int tid;
		size_t depth;
	} *th = xcalloc(t->nranges + 1, sizeof(*th));
	size_t nth = 0;
	n = 0;
	for (size_t i = 0; i < t->nranges; i++) {
		const struct trace_range *r = &t->ranges[i];
		size_t k = 0;
		while (k < nth && th[k].tid != r->tid)
			k++;
		if (k == nth)
			th[nth++].tid = r->tid;
		if (r->op == GMT_RANGE_PUSH && th[k].depth++ == 0)
			texts[n++] = r->text;
		else if (r->op == GMT_RANGE_POP && th[k].depth)
			th[k].depth--;
		else if (r->op == GMT_RANGE_START)
			texts[n++] = r->text;
	}
	name = most_frequent(texts, n, &count);
	free(texts);
	if (!name) {
		free(th);
		return;
	}
	mk->source = "range";
	mk->name = name;
	mk->times = xcalloc(count + 1, sizeof(*mk->times));
	/* the starts, then the end of the last one */
	uint64_t last_id = 0;
	int last_tid = 0;
	bool last_push = false;
	nth = 0;
	uint64_t end = 0;
	for (size_t i = 0; i < t->nranges; i++) {
		const struct trace_range *r = &t->ranges[i];
		size_t k = 0;
		while (k < nth && th[k].tid != r->tid)
			k++;
		if (k == nth) {
			th[nth].tid = r->tid;
			th[nth++].depth = 0;
		}
		if (r->op == GMT_RANGE_PUSH) {
			if (th[k].depth++ == 0 && !strcmp(r->text, name)) {
				mk->times[mk->n++] = r->time_ns;
				last_push = true;
				last_tid = r->tid;
				end = 0;
			}
		} else if (r->op == GMT_RANGE_POP && th[k].depth) {
			if (--th[k].depth == 0 && last_push && r->tid == last_tid && !end)
				end = r->time_ns;
		} else if (r->op == GMT_RANGE_START && !strcmp(r->text, name)) {
			mk->times[mk->n++] = r->time_ns;
			last_push = false;
			last_id = r->id;
			end = 0;
		} else if (r->op == GMT_RANGE_END && !last_push && r->id == last_id && !end) {
			end = r->time_ns;
		}
	}
	if (end)
		mk->times[mk->n++] = end;
	free(th);
	thin_markers(mk);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int64_t growth_median_per_iteration(const struct growth_markers *mk, const struct growth_dev *d)
{
	size_t n = mk->n - 1;
	int64_t *v = xcalloc(n, sizeof(*v));
	uint64_t *sorted = xcalloc(n, sizeof(*sorted));
	for (size_t i = 0; i < n; i++) {
		v[i] = (int64_t)(d->mk_live[i + 1] - d->mk_live[i]);
		sorted[i] = (uint64_t)v[i] ^ (1ull << 63); /* signed order as unsigned */
	}
	qsort(sorted, n, sizeof(*sorted), u64_cmp);
	int64_t lo = (int64_t)(sorted[(n - 1) / 2] ^ (1ull << 63));
	int64_t hi = (int64_t)(sorted[n / 2] ^ (1ull << 63));
	free(v);
	free(sorted);
	return lo / 2 + hi / 2 + (lo % 2 + hi % 2) / 2;
}

bool growth_has_markers(const struct growth_result *g, const struct growth_dev *d)
{
	return g->mk.n >= 2 && d->mk_live;
}

static int chunk_cmp(struct growth_chunk *a, struct growth_chunk *b)
{
	uint64_t ba = a->size * a->count, bb = b->size * b->count;
	if (ba != bb)
		return ba > bb ? -1 : 1;
	return a->size < b->size ? -1 : a->size > b->size;
}

static int dev_cmp(const void *a, const void *b)
{
	const struct growth_dev *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/* The allocator's growth policy, guessed from the steps: "doubling" (three
 * steps in a row each twice the one before), "preallocation" (one
 * allocation of half the device or more), "fixed blocks" (one size makes
 * 80% or more of at least 3 steps), else "mixed" ("" without steps). */
const char *growth_pattern(const struct growth_dev *d, uint64_t total, uint64_t *block)
{
	*block = 0;
	if (!d->nsteps)
		return "";
	int run = 0;
	for (size_t i = 1; i < d->nsteps; i++) {
		run =
		    d->steps[i].size && d->steps[i].size == 2 * d->steps[i - 1].size ? run + 1 : 0;
		if (run >= 2)
			return "doubling";
	}
	struct growth_chunk *ch, *ct, *top = NULL;
	HASH_ITER(hh, d->chunks, ch, ct)
	{
		if (total && ch->size * 2 >= total) {
			*block = ch->size;
			return "preallocation";
		}
		if (!top || ch->count > top->count)
			top = ch;
	}
	if (top && d->steps_total >= 3 && (double)top->count >= 0.8 * (double)d->steps_total) {
		*block = top->size;
		return "fixed blocks";
	}
	return "mixed";
}

static void gdev_free(struct growth_dev *d)
{
	free(d->steps);
	free(d->cols);
	free(d->mk_live);
	free(d->floor);
	free(d->held);
	struct growth_chunk *ch, *ct;
	HASH_ITER(hh, d->chunks, ch, ct)
	{
		HASH_DEL(d->chunks, ch);
		free(ch);
	}
}

/* After pass 1: iterations from a pattern where no markers, and when each
 * device's window ends (the last boundary, or the last step). */
static void plan_pass2(struct growth_result *g)
{
	if (!g->mk.source)
		plan_pattern(g);
	for (size_t k = 0; k < g->ndevs; k++) {
		struct growth_dev *d = &g->devs[k];
		chart_fill(g, d, g->ncols - 1);
		/* without iterations, what was never freed */
		d->snap_time = g->mk.n >= 2 ? g->mk.times[g->mk.n - 1] : UINT64_MAX;
	}
}

/* Two passes over one trace: the first fills the chart and the steps, the
 * second measures each iteration. Returns the read's exit code, or -1. */
static int growth_replay(struct growth_result *g, struct trace *t)
{
	int r = -1;
	for (g->pass = 1; g->pass <= 2; g->pass++) {
		replay_init(&g->rp);
		if ((g->pass == 1 && !g->mk.source) ||
		    (g->pass == 2 && g->mk.source && !strcmp(g->mk.source, "pattern"))) {
			g->rp.on_change = on_change;
			g->rp.on_change_ctx = g;
		}
		r = trace_replay(t, NULL, on_event, g);
		if (g->pass == 1) {
			plan_pass2(g);
		} else {
			/* a pattern's cycles came as pass 1 counted them; if not, only
			 * those that came */
			g->mk.n = g->mk.filled;
			boundaries_before(g, UINT64_MAX);
			for (size_t k = 0; k < g->ndevs; k++)
				if (!g->devs[k].snapped)
					snapshot(g, &g->devs[k]);
		}
		replay_free(&g->rp);
		if (r >= 0)
			break; /* a read error: report what pass 1 found */
	}
	if (g->pass == 1) { /* a read error in pass 1: no iterations measured */
		plan_pattern(g);
		g->mk.n = 0;
	}
	return r;
}

int growth_compute(struct trace *t, const struct growth_params *p, struct growth_result *g)
{
	memset(g, 0, sizeof(*g));
	g->t = t;
	g->p = *p;
	g->ncols = p->ncols;
	g->t0 = t->events ? t->first_time_ns : 0;
	/* an event stamped before the trace's start (a context made before the
	 * tracer's clock) must not give the chart a negative time */
	if (g->t0 < t->hdr.start_mono_ns && t->last_time_ns >= t->hdr.start_mono_ns)
		g->t0 = t->hdr.start_mono_ns;
	g->t1 = t->events ? t->last_time_ns : 0;
	plan_markers(t, &g->mk);
	if (p->has_device)
		gdev_get(g, p->device);
	int r = growth_replay(g, t);
	if (g->ndevs)
		qsort(g->devs, g->ndevs, sizeof(*g->devs), dev_cmp);
	for (size_t k = 0; k < g->ndevs; k++)
		HASH_SORT(g->devs[k].chunks, chunk_cmp);
	growth_verdicts(g);
	return r;
}

void growth_result_free(struct growth_result *g)
{
	for (size_t k = 0; k < g->ndevs; k++)
		gdev_free(&g->devs[k]);
	free(g->devs);
	free(g->mk.times);
	memset(g, 0, sizeof(*g));
}
