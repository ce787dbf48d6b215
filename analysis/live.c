/* The live view of a growing trace (analysis/live.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/counters.h"
#include "analysis/live.h"

#define LIVE_REORDER_LIMIT (1u << 18) /* 24 MiB of events at most, whatever their times */
#define NS_PER_S	   1000000000ull

const char *const live_group_name[LIVE_GROUPS] = {"sites", "libraries", "threads"};
const char *const live_sort_name[LIVE_SORTS] = {"live", "since start", "since step"};

struct live_step_at {
	uint64_t time_ns;
	char *text;
};

struct live_cache {
	UT_hash_handle hh;
	struct {
		int64_t device;
		uint64_t stack_id;
	} k;
	struct live_row *site, *lib;
};

struct live_thread {
	UT_hash_handle hh;
	uint64_t tid;
	size_t depth; /* ranges open (PUSH) */
	char *name;
};

/* ---- devices and rows ---------------------------------------------------- */

static struct live_dev *dev_get(struct live *lv, int64_t ordinal)
{
	size_t i = 0;
	while (i < lv->ndevs && lv->devs[i].ordinal < ordinal)
		i++;
	if (i < lv->ndevs && lv->devs[i].ordinal == ordinal)
		return &lv->devs[i];
	GROW(lv->devs, lv->ndevs, lv->devs_cap);
	memmove(&lv->devs[i + 1], &lv->devs[i], (lv->ndevs - i) * sizeof(*lv->devs));
	lv->ndevs++;
	struct live_dev *d = &lv->devs[i];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	d->born_step = lv->steps;
	d->hist_sec = -1;
	return d;
}

const struct live_dev *live_dev(const struct live *lv, int64_t ordinal)
{
	for (size_t i = 0; i < lv->ndevs; i++)
		if (lv->devs[i].ordinal == ordinal)
			return &lv->devs[i];
	return NULL;
}

static struct live_row *row_get(struct live *lv, int group, int64_t device, const char *key,
				uint64_t stack_id, uint32_t api)
{
	size_t n = strlen(key) + 48;
	char *id = xrealloc(NULL, n);
	snprintf(id, n, "%d|%" PRId64 "|%s", group, device, key);
	struct live_row *r;
	HASH_FIND_STR(lv->rows, id, r);
	if (r) {
		free(id);
		return r;
	}
	r = xcalloc(1, sizeof(*r));
	r->id = id;
	r->key = strchr(strchr(id, '|') + 1, '|') + 1;
	r->group = group;
	r->device = device;
	r->born_step = lv->steps;
	r->stack_id = stack_id;
	r->api = api;
	HASH_ADD_KEYPTR(hh, lv->rows, r->id, strlen(r->id), r);
	lv->nrows++;
	return r;
}

static struct live_thread *thread_get(struct live *lv, uint64_t tid)
{
	struct live_thread *th;
	HASH_FIND(hh, lv->threads, &tid, sizeof(tid), th);
	if (!th) {
		th = xcalloc(1, sizeof(*th));
		th->tid = tid;
		HASH_ADD(hh, lv->threads, tid, sizeof(th->tid), th);
	}
	return th;
}

const char *live_thread_name(const struct live *lv, uint64_t tid)
{
	struct live_thread *th;
	HASH_FIND(hh, lv->threads, &tid, sizeof(tid), th);
	return th ? th->name : NULL;
}

/* The site and library rows of a stack on a device: named once. */
static struct live_cache *rows_of_stack(struct live *lv, int64_t device, uint64_t stack_id,
					uint32_t api)
{
	struct live_cache probe, *c;
	memset(&probe, 0, sizeof(probe));
	probe.k.device = device;
	probe.k.stack_id = stack_id;
	HASH_FIND(hh, lv->cache, &probe.k, sizeof(probe.k), c);
	if (c)
		return c;
	c = xcalloc(1, sizeof(*c));
	c->k = probe.k;
	char buf[1024];
	trace_group_key(&lv->t, GROUP_STACK, 0, stack_id, api, buf, sizeof(buf));
	c->site = row_get(lv, LIVE_BY_SITE, device, buf, stack_id, api);
	trace_group_key(&lv->t, GROUP_LIBRARY, 0, stack_id, api, buf, sizeof(buf));
	c->lib = row_get(lv, LIVE_BY_LIBRARY, device, buf, stack_id, api);
	HASH_ADD(hh, lv->cache, k, sizeof(c->k), c);
	return c;
}

static void row_change(struct live_row *r, uint64_t size, bool add)
{
	if (add) {
		r->live += size;
		r->count++;
	} else {
		r->live -= size < r->live ? size : r->live;
		r->count -= r->count ? 1 : 0;
	}
}

/* Told by the replay whenever an allocation starts or stops counting. */
static void on_change(void *ctx, const struct rp_live *l, bool counted)
{
	struct live *lv = ctx;
	if (l->bucket != BK_DEVICE)
		return;
	struct live_cache *c = rows_of_stack(lv, l->device, l->stack_id, l->api);
	row_change(c->site, l->size, counted);
	row_change(c->lib, l->size, counted);
	char key[32];
	snprintf(key, sizeof(key), "tid %" PRIu32, l->tid);
	row_change(row_get(lv, LIVE_BY_THREAD, l->device, key, 0, 0), l->size, counted);
	dev_get(lv, l->device); /* made now, read after the event (apply_event) */
}

/* ---- the history of live bytes -------------------------------------------- */

static int64_t rel_sec(const struct live *lv, uint64_t time_ns)
{
	int64_t rel = trace_rel(&lv->t, time_ns);
	return rel > 0 ? rel / (int64_t)NS_PER_S : 0;
}

/* Carries the device's live bytes into every second up to sec. */
static void hist_advance(struct live_dev *d, int64_t sec)
{
	if (sec <= d->hist_sec)
		return;
	int64_t from = d->hist_sec + 1;
	if (sec - from >= LIVE_HISTORY_S)
		from = sec - LIVE_HISTORY_S + 1;
	for (int64_t s = from; s <= sec; s++)
		d->hist[s % LIVE_HISTORY_S] = d->live;
	d->hist_sec = sec;
}

/* ---- steps ----------------------------------------------------------------- */

static uint64_t value_at(uint64_t born, const uint64_t *ring, uint64_t boundary)
{
	return boundary < born ? 0 : ring[boundary % LIVE_STEPS];
}

static void fire_step(struct live *lv, struct live_step_at *st)
{
	uint64_t b = lv->steps++;
	for (size_t i = 0; i < lv->ndevs; i++)
		lv->devs[i].at_step[b % LIVE_STEPS] = lv->devs[i].live;
	for (struct live_row *r = lv->rows; r; r = r->hh.next)
		r->at_step[b % LIVE_STEPS] = r->live;
	free(lv->step_text);
	lv->step_text = st->text;
	lv->step_time_ns = st->time_ns;
}

/* Fires the boundaries at or before time_ns (all with `all`), in order. */
static void fire_steps(struct live *lv, uint64_t time_ns, bool all)
{
	size_t k = 0;
	while (k < lv->npending && (all || lv->pending[k].time_ns <= time_ns))
		fire_step(lv, &lv->pending[k++]);
	if (k) {
		memmove(lv->pending, lv->pending + k, (lv->npending - k) * sizeof(*lv->pending));
		lv->npending -= k;
	}
}

static void add_step(struct live *lv, const struct trace_range *r)
{
	GROW(lv->pending, lv->npending, lv->pending_cap);
	size_t i = lv->npending;
	while (i > 0 && lv->pending[i - 1].time_ns > r->time_ns)
		i--;
	memmove(&lv->pending[i + 1], &lv->pending[i], (lv->npending - i) * sizeof(*lv->pending));
	lv->pending[i] = (struct live_step_at){r->time_ns, xstrdup(r->text)};
	lv->npending++;
}

/* A range as it is read (file order: each thread's in time order): a step
 * is a MARK, a START, or a PUSH at depth 0 on its thread, whose text
 * matches the step expression. Taken at once, before the events after it
 * are applied. */
static void take_range(struct live *lv, const struct trace_range *r)
{
	bool top = true;
	if (r->op == GMT_RANGE_PUSH || r->op == GMT_RANGE_POP) {
		struct live_thread *th = thread_get(lv, (uint64_t)r->tid);
		if (r->op == GMT_RANGE_POP) {
			th->depth -= th->depth ? 1 : 0;
			return;
		}
		top = th->depth++ == 0;
	}
	if (r->op == GMT_RANGE_END || !top)
		return;
	if (r->time_ns > lv->newest_ns)
		lv->newest_ns = r->time_ns;
	if (regexec(&lv->step_re, r->text, 0, NULL, 0) == 0)
		add_step(lv, r);
}

/* ---- NVML samples, framework counters ------------------------------------ */

static void read_samples(struct live *lv)
{
	const struct trace *t = &lv->t;
	for (size_t i = 0; i < t->nsamples; i++) {
		const struct trace_sample *s = &t->samples[i];
		if (s->device < 0)
			continue;
		struct live_dev *d = dev_get(lv, s->device);
		d->has_nvml = true;
		d->nvml_used = s->used_bytes;
		d->nvml_total = s->total_bytes;
		d->nvml_process_known = s->process_known;
		d->nvml_process = s->process_used_bytes;
		uint64_t tot = s->total_bytes ? s->total_bytes : d->total;
		uint64_t big = s->used_bytes > (s->process_known ? s->process_used_bytes : 0)
				   ? s->used_bytes
				   : s->process_used_bytes;
		if (tot && big > tot && big > d->nvml_inconsistent)
			d->nvml_inconsistent = big;
		if (s->time_ns > lv->newest_ns)
			lv->newest_ns = s->time_ns;
	}
}

static void read_counters(struct live *lv)
{
	struct counters_set set;
	counters_load(&lv->t, &set);
	for (size_t i = 0; i < set.n; i++) {
		const struct counters_series *s = &set.s[i];
		if (s->device < 0 || !s->n || counters_for_device(&set, s->device) != s)
			continue;
		const struct counters_point *p = &s->pts[s->n - 1];
		struct live_dev *d = dev_get(lv, s->device);
		d->has_reserved = p->has & CNT_RESERVED;
		d->has_allocated = p->has & CNT_ALLOCATED;
		d->reserved = p->reserved;
		d->allocated = p->allocated;
		snprintf(d->source, sizeof(d->source), "%s", s->source);
		if (p->time_ns > lv->newest_ns)
			lv->newest_ns = p->time_ns;
	}
	counters_free(&set);
}

/* ---- events ------------------------------------------------------------ */

static void apply_event(struct live *lv, const struct gmt_event *e);

/* An event as it is read: held for time order, and those older than the
 * window applied at once, so a poll that reads hours of trace (watch
 * started late) holds only the window's events. */
static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct live *lv = ctx;
	reorder_push(&lv->q, e);
	if (e->time_ns > lv->newest_ns)
		lv->newest_ns = e->time_ns;
	const struct gmt_event *go;
	while ((go = reorder_next(&lv->q, false)))
		apply_event(lv, go);
}

static void on_record(void *ctx, const struct gmt_record *rec)
{
	struct live *lv = ctx;
	if (rec->type == GMT_REC_RANGE && lv->t.nranges) {
		take_range(lv, &lv->t.ranges[lv->t.nranges - 1]); /* trace_on_record's */
		return;
	}
	if (rec->type != GMT_REC_THREAD)
		return;
	struct live_thread *th = thread_get(lv, rec->u.thread.tid);
	free(th->name);
	th->name = xstrdup(rec->u.thread.name.s);
}

static void apply_event(struct live *lv, const struct gmt_event *e)
{
	fire_steps(lv, e->time_ns, false);
	int64_t sec = rel_sec(lv, e->time_ns);
	replay_apply(&lv->rp, e);
	for (size_t i = 0; i < lv->ndevs; i++) {
		struct live_dev *d = &lv->devs[i];
		hist_advance(d, sec); /* the seconds before carry what was live then */
		const struct rp_level *lvl = &replay_dev(&lv->rp, d->ordinal)->lv;
		d->live = lvl->bytes;
		d->count = lvl->count;
		d->peak = lvl->peak;
		if (d->live > d->hist[sec % LIVE_HISTORY_S])
			d->hist[sec % LIVE_HISTORY_S] = d->live;
	}
	lv->applied_ns = e->time_ns;
	lv->events++;
}

/* SYMBOL records came after the site rows were named (a process that
 * named its frames writes them at its end): each site row is named again
 * from its stack, rows that now share a name merge (their figures add up),
 * and each stack is named anew as it next changes. */
static void rename_sites(struct live *lv)
{
	struct live_cache *c, *ct;
	HASH_ITER(hh, lv->cache, c, ct)
	{
		HASH_DEL(lv->cache, c);
		free(c);
	}
	size_t n = 0;
	struct live_row *r, *rt, **sites = xcalloc(lv->nrows ? lv->nrows : 1, sizeof(*sites));
	HASH_ITER(hh, lv->rows, r, rt)
	{
		if (r->group == LIVE_BY_SITE) {
			HASH_DEL(lv->rows, r);
			lv->nrows--;
			sites[n++] = r;
		}
	}
	char buf[1024];
	for (size_t i = 0; i < n; i++) {
		r = sites[i];
		trace_group_key(&lv->t, GROUP_STACK, 0, r->stack_id, r->api, buf, sizeof(buf));
		struct live_row *to =
		    row_get(lv, LIVE_BY_SITE, r->device, buf, r->stack_id, r->api);
		to->live += r->live;
		to->count += r->count;
		to->at_start += r->at_start;
		for (int k = 0; k < LIVE_STEPS; k++)
			to->at_step[k] += r->at_step[k];
		if (to->live == r->live && to->count == r->count) /* new: it takes r's age */
			to->born_step = r->born_step;
		else if (r->born_step < to->born_step)
			to->born_step = r->born_step;
		free(r->id);
		free(r);
	}
	free(sites);
}

bool live_poll(struct live *lv)
{
	bool got = trace_follow(&lv->t, on_event, on_record, lv);
	if (lv->t.has_trailer && lv->t.trailer_end_ns > lv->newest_ns)
		lv->newest_ns = lv->t.trailer_end_ns;
	read_samples(lv);
	read_counters(lv);
	for (size_t i = 0; i < lv->t.ndevs; i++) {
		const struct trace_device *td = &lv->t.devs[i];
		dev_get(lv, td->ordinal)->total = td->total_bytes;
	}
	/* nothing new: what waits is all there is, apply it */
	const struct gmt_event *e;
	while ((e = reorder_next(&lv->q, !got)))
		apply_event(lv, e);
	if (!got)
		fire_steps(lv, 0, true);
	size_t nsym = lv->t.symbols_added;
	if (nsym != lv->nsymbols) {
		if (lv->nsymbols || lv->nrows)
			rename_sites(lv);
		lv->nsymbols = nsym;
	}
	trace_follow_forget(&lv->t);
	return got;
}

void live_set_start(struct live *lv)
{
	for (size_t i = 0; i < lv->ndevs; i++)
		lv->devs[i].at_start = lv->devs[i].live;
	for (struct live_row *r = lv->rows; r; r = r->hh.next)
		r->at_start = r->live;
	lv->started = true;
	lv->start_time_ns = lv->newest_ns;
}

/* ---- reading the figures ------------------------------------------------- */

int64_t live_row_since_start(const struct live_row *r)
{
	return (int64_t)(r->live - r->at_start);
}

int64_t live_row_since_step(const struct live *lv, const struct live_row *r)
{
	if (!lv->steps)
		return 0;
	return (int64_t)(r->live - value_at(r->born_step, r->at_step, lv->steps - 1));
}

int64_t live_dev_since_step(const struct live *lv, const struct live_dev *d)
{
	if (!lv->steps)
		return 0;
	return (int64_t)(d->live - value_at(d->born_step, d->at_step, lv->steps - 1));
}

struct sort_ctx {
	const struct live *lv;
	enum live_sort by;
};
static struct sort_ctx sort_by; /* qsort has no context argument */

static int64_t sort_value(const struct live_row *r)
{
	switch (sort_by.by) {
	case LIVE_SORT_START:
		return live_row_since_start(r);
	case LIVE_SORT_STEP:
		return live_row_since_step(sort_by.lv, r);
	default:
		return (int64_t)r->live;
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct live_row *x = *(const struct live_row *const *)a;
	const struct live_row *y = *(const struct live_row *const *)b;
	int64_t vx = sort_value(x), vy = sort_value(y);
	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (x->live != y->live)
		return x->live > y->live ? -1 : 1;
	return strcmp(x->key, y->key);
}

struct live_row **live_rows(struct live *lv, int64_t device, enum live_group g, enum live_sort s,
			    size_t *n)
{
	struct live_row **v = xcalloc(lv->nrows + 1, sizeof(*v));
	size_t k = 0;
	for (struct live_row *r = lv->rows; r; r = r->hh.next)
		if (r->group == (int)g && r->device == device &&
		    (r->live || live_row_since_start(r) || live_row_since_step(lv, r)))
			v[k++] = r;
	sort_by = (struct sort_ctx){lv, s};
	if (k > 1)
		qsort(v, k, sizeof(*v), row_cmp);
	*n = k;
	return v;
}

bool live_leak(const struct live *lv, const struct live_dev *d, struct live_leak *out)
{
	memset(out, 0, sizeof(*out));
	if (lv->steps < LIVE_STEPS)
		return false;
	uint64_t first = lv->steps - LIVE_STEPS, last = lv->steps - 1;
	uint64_t prev = value_at(d->born_step, d->at_step, first), early = 0;
	for (uint64_t b = first + 1; b <= last; b++) {
		uint64_t v = value_at(d->born_step, d->at_step, b);
		if (v < prev)
			return false;
		out->rises += v > prev;
		if (b - first <= (LIVE_STEPS - 1) / 2)
			early = out->rises;
		prev = v;
	}
	out->steps = LIVE_STEPS - 1;
	out->grew = prev - value_at(d->born_step, d->at_step, first);
	if (!early || out->rises == early)
		return false; /* it rose in one half only */
	for (const struct live_row *r = lv->rows; r; r = r->hh.next) {
		if (r->group != LIVE_BY_SITE || r->device != d->ordinal)
			continue;
		uint64_t a = value_at(r->born_step, r->at_step, first);
		uint64_t z = value_at(r->born_step, r->at_step, last);
		if (z > a && (z - a > out->site_grew || (z - a == out->site_grew && out->site &&
							 strcmp(r->key, out->site->key) < 0))) {
			out->site = r;
			out->site_grew = z - a;
		}
	}
	return true;
}

void live_history(const struct live *lv, const struct live_dev *d, uint64_t *cols, size_t ncols,
		  uint64_t *span_s, size_t *empty)
{
	int64_t now = rel_sec(lv, lv->newest_ns);
	int64_t shown = now + 1 < LIVE_HISTORY_S ? now + 1 : LIVE_HISTORY_S;
	int64_t span = ncols ? (shown + (int64_t)ncols - 1) / (int64_t)ncols : 1;
	if (span < 1)
		span = 1;
	*span_s = (uint64_t)span;
	*empty = 0;
	for (size_t c = 0; c < ncols; c++) {
		int64_t hi = now - (int64_t)(ncols - 1 - c) * span, lo = hi - span + 1;
		uint64_t v = 0;
		bool any = false;
		for (int64_t s = lo; s <= hi; s++) {
			if (s < 0 || s <= now - LIVE_HISTORY_S)
				continue;
			any = true;
			uint64_t x = s > d->hist_sec ? d->live : d->hist[s % LIVE_HISTORY_S];
			v = x > v ? x : v;
		}
		*empty += !any;
		cols[c] = v;
	}
}

/* ---- open, close --------------------------------------------------------- */

int live_open(struct live *lv, const char *cmd, const char *path, const struct live_opts *o)
{
	memset(lv, 0, sizeof(*lv));
	const char *re = o && o->step_regex ? o->step_regex : LIVE_STEP_REGEX;
	if (regcomp(&lv->step_re, re, REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0)
		return say_usage_error(cmd, "--step: bad regular expression '%s'", re);
	int rc = trace_open_follow(&lv->t, cmd, path);
	if (rc >= 0) {
		regfree(&lv->step_re);
		return rc;
	}
	lv->t.short_names = true;
	lv->window_ns = o && o->window_ns ? o->window_ns : LIVE_WINDOW_NS;
	replay_init(&lv->rp);
	lv->rp.on_change = on_change;
	lv->rp.on_change_ctx = lv;
	reorder_init(&lv->q, LIVE_REORDER_LIMIT, lv->window_ns);
	return -1;
}

void live_close(struct live *lv)
{
	struct live_row *r, *rt;
	HASH_ITER(hh, lv->rows, r, rt)
	{
		HASH_DEL(lv->rows, r);
		free(r->id);
		free(r);
	}
	struct live_cache *c, *ct;
	HASH_ITER(hh, lv->cache, c, ct)
	{
		HASH_DEL(lv->cache, c);
		free(c);
	}
	struct live_thread *th, *tt;
	HASH_ITER(hh, lv->threads, th, tt)
	{
		HASH_DEL(lv->threads, th);
		free(th->name);
		free(th);
	}
	for (size_t i = 0; i < lv->npending; i++)
		free(lv->pending[i].text);
	free(lv->pending);
	free(lv->step_text);
	free(lv->devs);
	reorder_free(&lv->q);
	replay_free(&lv->rp);
	trace_close(&lv->t);
	regfree(&lv->step_re);
	memset(lv, 0, sizeof(*lv));
}
