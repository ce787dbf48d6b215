/* Phases from RANGE records: see phase.h. */
#include "analysis/phase.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct phase_entry {
	struct phase *ph; /* names its enclosing ranges too */
	size_t ri;	  /* its range's index in t->ranges: the order opened */
};

struct phase_thread {
	uint64_t tid;
	struct phase_entry *stack; /* innermost last */
	size_t n, cap;
};

struct phase_open {
	uint64_t id, tid;
	struct phase *ph;
	size_t ri;
};

struct phase_pending {
	int space;
	uint64_t key, size;
};

struct mem_key {
	uint64_t key;
	int64_t space;
};

struct phase_mem {
	UT_hash_handle hh;
	struct mem_key k;
	struct phase *ph;
};

static struct phase *intern(struct phase_tracker *pt, const char *name)
{
	struct phase *ph = NULL;
	HASH_FIND_STR(pt->phases, name, ph);
	if (ph)
		return ph;
	ph = xcalloc(1, sizeof(*ph));
	ph->name = xstrdup(name);
	ph->order = pt->nphases++;
	HASH_ADD_KEYPTR(hh, pt->phases, ph->name, strlen(ph->name), ph);
	return ph;
}

/* Which ranges close in the trace: the PUSH/POP stacks and START/END ids
 * replayed once ahead, since inheriting needs to know it when a range opens. */
static void find_closed(struct phase_tracker *pt)
{
	const struct trace *t = pt->t;
	pt->closed = xcalloc(t->nranges ? t->nranges : 1, sizeof(*pt->closed));
	struct {
		uint64_t tid;
		size_t *v, n, cap;
	} *th = NULL;
	size_t nth = 0, cap = 0, *open = NULL, nopen = 0, open_cap = 0, ucap = 0;
	for (size_t i = 0; i < t->nranges; i++) {
		const struct trace_range *r = &t->ranges[i];
		size_t k = 0;
		if (r->op == GMT_RANGE_PUSH || r->op == GMT_RANGE_POP) {
			while (k < nth && th[k].tid != (uint64_t)r->tid)
				k++;
			if (k == nth) {
				GROW(th, nth, cap);
				memset(&th[nth++], 0, sizeof(*th));
				th[k].tid = (uint64_t)r->tid;
			}
		}
		if (r->op == GMT_RANGE_PUSH) {
			GROW(th[k].v, th[k].n, th[k].cap);
			th[k].v[th[k].n++] = i;
		} else if (r->op == GMT_RANGE_POP && th[k].n) {
			pt->closed[th[k].v[--th[k].n]] = true;
		} else if (r->op == GMT_RANGE_START) {
			GROW(open, nopen, open_cap);
			open[nopen++] = i;
		} else if (r->op == GMT_RANGE_END) {
			size_t j = nopen; /* the latest START of that id, as apply matches */
			while (j > 0 && t->ranges[open[j - 1]].id != r->id)
				j--;
			if (j) {
				pt->closed[open[j - 1]] = true;
				memmove(&open[j - 1], &open[j], (nopen - j) * sizeof(*open));
				nopen--;
			}
		}
	}
	for (size_t i = 0; i < t->nranges; i++) {
		int op = t->ranges[i].op;
		if ((op == GMT_RANGE_PUSH || op == GMT_RANGE_START) && !pt->closed[i]) {
			GROW(pt->unclosed, pt->nunclosed, ucap);
			pt->unclosed[pt->nunclosed++] =
			    (struct phase_unclosed){&t->ranges[i], NULL};
		}
	}
	for (size_t k = 0; k < nth; k++)
		free(th[k].v);
	free(th);
	free(open);
}

void phase_init(struct phase_tracker *pt, struct trace *t)
{
	memset(pt, 0, sizeof(*pt));
	pt->t = t;
	pt->none = intern(pt, PHASE_NONE);
	find_closed(pt);
}

void phase_free(struct phase_tracker *pt)
{
	struct phase *ph, *pht;
	HASH_ITER(hh, pt->phases, ph, pht)
	{
		HASH_DEL(pt->phases, ph);
		free(ph->name);
		free(ph);
	}
	for (size_t i = 0; i < pt->nthreads; i++)
		free(pt->threads[i].stack);
	free(pt->threads);
	free(pt->open);
	free(pt->closed);
	free(pt->unclosed);
	free(pt->pending);
	struct phase_mem *m, *mt;
	HASH_ITER(hh, pt->mem, m, mt)
	{
		HASH_DEL(pt->mem, m);
		free(m);
	}
	memset(pt, 0, sizeof(*pt));
}

static struct phase_thread *thread_get(struct phase_tracker *pt, uint64_t tid, bool create)
{
	for (size_t i = 0; i < pt->nthreads; i++)
		if (pt->threads[i].tid == tid)
			return &pt->threads[i];
	if (!create)
		return NULL;
	GROW(pt->threads, pt->nthreads, pt->threads_cap);
	struct phase_thread *th = &pt->threads[pt->nthreads++];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	return th;
}

static void opened(struct phase *ph, uint64_t live)
{
	if (!ph->seen_open || live > ph->peak)
		ph->peak = live;
	ph->seen_open = true;
}

/* A range that never closes: its phase, for the reports' list. */
static void note_unclosed(struct phase_tracker *pt, const struct trace_range *r, struct phase *ph)
{
	for (size_t i = 0; i < pt->nunclosed; i++)
		if (pt->unclosed[i].r == r)
			pt->unclosed[i].ph = ph;
}

static void apply(struct phase_tracker *pt, size_t ri, uint64_t live)
{
	const struct trace_range *r = &pt->t->ranges[ri];
	pt->dirty = true;
	switch (r->op) {
	case GMT_RANGE_PUSH: {
		struct phase_thread *th = thread_get(pt, (uint64_t)r->tid, true);
		struct phase *ph;
		if (th->n) {
			const char *outer = th->stack[th->n - 1].ph->name;
			size_t len = strlen(outer) + strlen(r->text) + 2;
			char *name = xrealloc(NULL, len);
			snprintf(name, len, "%s/%s", outer, r->text);
			ph = intern(pt, name);
			free(name);
		} else {
			ph = intern(pt, r->text);
		}
		GROW(th->stack, th->n, th->cap);
		th->stack[th->n++] = (struct phase_entry){ph, ri};
		opened(ph, live);
		if (!pt->closed[ri])
			note_unclosed(pt, r, ph);
		break;
	}
	case GMT_RANGE_POP: {
		struct phase_thread *th = thread_get(pt, (uint64_t)r->tid, false);
		if (th && th->n)
			th->n--;
		else
			pt->unmatched_pops++;
		break;
	}
	case GMT_RANGE_START: {
		GROW(pt->open, pt->nopen, pt->open_cap);
		struct phase *ph = intern(pt, r->text);
		pt->open[pt->nopen++] = (struct phase_open){r->id, (uint64_t)r->tid, ph, ri};
		opened(ph, live);
		if (!pt->closed[ri])
			note_unclosed(pt, r, ph);
		break;
	}
	case GMT_RANGE_END: {
		size_t i = pt->nopen;
		while (i > 0 && pt->open[i - 1].id != r->id)
			i--;
		if (!i) {
			pt->unmatched_ends++;
			break;
		}
		memmove(&pt->open[i - 1], &pt->open[i], (pt->nopen - i) * sizeof(*pt->open));
		pt->nopen--;
		break;
	}
	default: /* MARK: an instant, no phase */
		break;
	}
}

void phase_advance(struct phase_tracker *pt, uint64_t time_ns, uint64_t live)
{
	while (pt->next < pt->t->nranges && pt->t->ranges[pt->next].time_ns <= time_ns)
		apply(pt, pt->next++, live);
}

/* The innermost range open in the process that another thread may take:
 * the most recently opened START range or PUSH top of a stack, skipping
 * ranges that never close. */
static void find_inherit(struct phase_tracker *pt)
{
	size_t best = SIZE_MAX;
	pt->inherit = NULL;
	for (size_t i = 0; i < pt->nopen; i++) {
		size_t ri = pt->open[i].ri;
		if (pt->closed[ri] && (best == SIZE_MAX || ri > best))
			best = ri, pt->inherit = pt->open[i].ph, pt->inherit_pushed = false;
	}
	for (size_t i = 0; i < pt->nthreads; i++) {
		const struct phase_thread *th = &pt->threads[i];
		size_t k = th->n;
		while (k > 0 && !pt->closed[th->stack[k - 1].ri])
			k--;
		if (k && (best == SIZE_MAX || th->stack[k - 1].ri > best))
			best = th->stack[k - 1].ri, pt->inherit = th->stack[k - 1].ph,
			pt->inherit_pushed = true;
	}
	pt->dirty = false;
}

struct phase *phase_lookup(struct phase_tracker *pt, uint64_t tid, bool *inherited)
{
	*inherited = false;
	struct phase_thread *th = thread_get(pt, tid, false);
	if (th && th->n)
		return th->stack[th->n - 1].ph;
	/* a START range never ended: its own thread's, as an unpopped PUSH */
	for (size_t i = pt->nopen; i > 0; i--)
		if (!pt->closed[pt->open[i - 1].ri] && pt->open[i - 1].tid == tid)
			return pt->open[i - 1].ph;
	if (pt->dirty)
		find_inherit(pt);
	if (!pt->inherit)
		return pt->none;
	*inherited = pt->inherit_pushed;
	return pt->inherit;
}

struct phase *phase_of(struct phase_tracker *pt, uint64_t tid)
{
	bool inherited;
	return phase_lookup(pt, tid, &inherited);
}

void phase_note_live(struct phase_tracker *pt, uint64_t live)
{
	for (size_t i = 0; i < pt->nthreads; i++)
		for (size_t k = 0; k < pt->threads[i].n; k++)
			if (live > pt->threads[i].stack[k].ph->peak)
				pt->threads[i].stack[k].ph->peak = live;
	for (size_t i = 0; i < pt->nopen; i++)
		if (live > pt->open[i].ph->peak)
			pt->open[i].ph->peak = live;
}

void phase_remember(struct phase_tracker *pt, int space, uint64_t key, struct phase *ph)
{
	struct mem_key k = {key, space};
	struct phase_mem *m = NULL;
	HASH_FIND(hh, pt->mem, &k, sizeof(k), m);
	if (!m) {
		m = xcalloc(1, sizeof(*m));
		m->k = k;
		HASH_ADD(hh, pt->mem, k, sizeof(m->k), m);
	}
	m->ph = ph;
}

struct phase *phase_recall(struct phase_tracker *pt, int space, uint64_t key)
{
	struct mem_key k = {key, space};
	struct phase_mem *m = NULL;
	HASH_FIND(hh, pt->mem, &k, sizeof(k), m);
	return m ? m->ph : pt->none;
}

static void forget(struct phase_tracker *pt, int space, uint64_t key)
{
	struct mem_key k = {key, space};
	struct phase_mem *m = NULL;
	HASH_FIND(hh, pt->mem, &k, sizeof(k), m);
	if (m) {
		HASH_DEL(pt->mem, m);
		free(m);
	}
}

static void on_change(void *ctx, const struct rp_live *l, bool counted)
{
	struct phase_tracker *pt = ctx;
	if (l->bucket != BK_DEVICE)
		return;
	if (counted) { /* the event's phase is known after replay_apply */
		GROW(pt->pending, pt->npending, pt->pending_cap);
		pt->pending[pt->npending++] = (struct phase_pending){l->space, l->key, l->size};
		return;
	}
	for (size_t i = 0; i < pt->npending; i++) /* not charged yet: never was */
		if (pt->pending[i].space == l->space && pt->pending[i].key == l->key) {
			pt->pending[i] = pt->pending[--pt->npending];
			return;
		}
	struct phase *ph = phase_recall(pt, l->space, l->key);
	ph->frees++;
	ph->bytes_freed += l->size;
	forget(pt, l->space, l->key);
}

void phase_attach(struct phase_tracker *pt, struct replay *rp)
{
	rp->on_change = on_change;
	rp->on_change_ctx = pt;
	rp->on_change_peak_ends = false;
}

void phase_charge(struct phase_tracker *pt, uint64_t tid)
{
	if (!pt->npending)
		return;
	bool inherited;
	struct phase *ph = phase_lookup(pt, tid, &inherited);
	for (size_t i = 0; i < pt->npending; i++) {
		const struct phase_pending *p = &pt->pending[i];
		ph->allocs++;
		ph->bytes_allocated += p->size;
		if (inherited) {
			ph->inherited_allocs++;
			ph->inherited_bytes += p->size;
		}
		phase_remember(pt, p->space, p->key, ph);
	}
	pt->npending = 0;
}

static int order_cmp(const void *a, const void *b)
{
	const struct phase *x = *(struct phase *const *)a, *y = *(struct phase *const *)b;
	return x->order < y->order ? -1 : x->order > y->order;
}

struct phase **phase_list(struct phase_tracker *pt, size_t *n)
{
	*n = HASH_COUNT(pt->phases);
	struct phase **out = xcalloc(*n, sizeof(*out)), *ph, *pht;
	size_t i = 0;
	HASH_ITER(hh, pt->phases, ph, pht) out[i++] = ph;
	if (*n > 1)
		qsort(out, *n, sizeof(*out), order_cmp);
	return out;
}

uint64_t phase_device_bytes(const struct replay *rp)
{
	return rp->buckets[BK_DEVICE].bytes;
}
