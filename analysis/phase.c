/* Phases from RANGE records: see phase.h. */
#include "analysis/phase.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct phase_thread {
	uint64_t tid;
	struct phase **stack; /* innermost last; each names its enclosing ranges too */
	size_t n, cap;
};

struct phase_open {
	uint64_t id;
	struct phase *ph;
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

void phase_init(struct phase_tracker *pt, struct trace *t)
{
	memset(pt, 0, sizeof(*pt));
	pt->t = t;
	pt->none = intern(pt, PHASE_NONE);
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

static void apply(struct phase_tracker *pt, const struct trace_range *r, uint64_t live)
{
	switch (r->op) {
	case GMT_RANGE_PUSH: {
		struct phase_thread *th = thread_get(pt, (uint64_t)r->tid, true);
		struct phase *ph;
		if (th->n) {
			const char *outer = th->stack[th->n - 1]->name;
			size_t len = strlen(outer) + strlen(r->text) + 2;
			char *name = xrealloc(NULL, len);
			snprintf(name, len, "%s/%s", outer, r->text);
			ph = intern(pt, name);
			free(name);
		} else {
			ph = intern(pt, r->text);
		}
		GROW(th->stack, th->n, th->cap);
		th->stack[th->n++] = ph;
		opened(ph, live);
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
		pt->open[pt->nopen++] = (struct phase_open){r->id, ph};
		opened(ph, live);
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
		apply(pt, &pt->t->ranges[pt->next++], live);
}

struct phase *phase_of(struct phase_tracker *pt, uint64_t tid)
{
	struct phase_thread *th = thread_get(pt, tid, false);
	if (th && th->n)
		return th->stack[th->n - 1];
	if (pt->nopen)
		return pt->open[pt->nopen - 1].ph;
	return pt->none;
}

void phase_note_live(struct phase_tracker *pt, uint64_t live)
{
	for (size_t i = 0; i < pt->nthreads; i++)
		for (size_t k = 0; k < pt->threads[i].n; k++)
			if (live > pt->threads[i].stack[k]->peak)
				pt->threads[i].stack[k]->peak = live;
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
