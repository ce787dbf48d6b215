/* Growth at the tensors' level (analysis/fwgrowth.h). */
#include <stdlib.h>
#include <string.h>

#include "common/fwhist.h"
#include "reader/xalloc.h"
#include "analysis/fwgrowth.h"
#include "analysis/fwhist.h"
#include "analysis/trace.h"

#define MERGE_ITERS  2 /* as growth's: rises within 2 iterations are one step */
#define STEADY_ITERS 8 /* 8 iterations without a rise: a steady state */

/* ---- the tensors' repeating allocation ---- */

struct pat_key {
	uint64_t stack, size;
};
struct pat {
	UT_hash_handle hh;
	struct pat_key key;
	uint64_t live, cycles;
};

struct pat_pass {
	struct pat *pats;
	struct pat_key best; /* pass 2: the one whose cycles are the boundaries */
	struct fwg_result *out;
	size_t cap;
};

static struct pat *pat_get(struct pat **head, uint64_t stack, uint64_t size)
{
	struct pat_key k = {stack, size};
	struct pat *p;
	HASH_FIND(hh, *head, &k, sizeof k, p);
	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->key = k;
		HASH_ADD(hh, *head, key, sizeof p->key, p);
	}
	return p;
}

/* Before the entry: a free's tensor is still in the state. */
static void pat_entry(void *ctx, const struct fw_event *ev, const struct fw_state *st)
{
	struct pat_pass *pp = ctx;
	const struct gmt_fw_entry *e = ev->e;
	if (e->action == GMT_FW_ALLOC && e->stack_id) {
		struct pat *p = pat_get(&pp->pats, e->stack_id, e->size);
		if (!p->live++) {
			p->cycles++;
			if (pp->out && p->key.stack == pp->best.stack &&
			    p->key.size == pp->best.size && ev->time_ns) {
				GROW(pp->out->times, pp->out->ntimes, pp->cap);
				pp->out->times[pp->out->ntimes++] = ev->time_ns;
			}
		}
	} else if (e->action == GMT_FW_FREE_REQUESTED) {
		struct fw_key k;
		memset(&k, 0, sizeof k);
		k.device = ev->device;
		k.addr = e->addr;
		struct fw_tensor *x = NULL;
		HASH_FIND(hh, st->tensors, &k, sizeof k, x);
		if (x && !x->pending && x->stack_id) {
			struct pat *p = pat_get(&pp->pats, x->stack_id, x->size);
			p->live -= p->live > 0;
		}
	}
}

static void free_pats(struct pat **head)
{
	struct pat *p, *tmp;
	HASH_ITER(hh, *head, p, tmp)
	{
		HASH_DEL(*head, p);
		free(p);
	}
}

static int find_pattern(struct trace *t, struct fwg_result *out)
{
	struct pat_pass pp = {0};
	struct fw_replay_cbs cb = {.before = pat_entry, .ctx = &pp};
	int rc = fwhist_replay_cb(t, &cb);
	struct pat *best = NULL, *p, *tmp;
	HASH_ITER(hh, pp.pats, p, tmp)
	if (!best || p->cycles > best->cycles ||
	    (p->cycles == best->cycles && p->key.size > best->key.size))
		best = p;
	if (rc >= 0 || !best || best->cycles < GROWTH_PATTERN_MIN) {
		free_pats(&pp.pats);
		return rc;
	}
	struct pat_pass p2 = {.best = best->key, .out = out};
	out->pattern_stack = best->key.stack;
	out->pattern_size = best->key.size;
	out->source = "the tensors' repeating allocation";
	free_pats(&pp.pats);
	cb.ctx = &p2;
	rc = fwhist_replay_cb(t, &cb);
	free_pats(&p2.pats);
	return rc;
}

/* ---- each iteration's lowest tensor bytes ---- */

struct held {
	int64_t device;
	uint64_t time_ns, stack_id, size;
};

struct floor_pass {
	struct fwg_result *out;
	struct held *held; /* live at the end */
	size_t nheld, held_cap;
	struct {
		int64_t device;
		uint64_t allocated; /* after the device's last entry */
	} * last;
	size_t nlast, last_cap;
};

/* The device's tensor bytes before this entry (its previous entry's
 * after), now set to after. The first entry, or a window's rebuilt start:
 * after itself. */
static uint64_t level_before(struct floor_pass *fp, const struct fw_event *ev, uint64_t after)
{
	size_t i = 0;
	while (i < fp->nlast && fp->last[i].device != ev->device)
		i++;
	if (i == fp->nlast) {
		GROW(fp->last, fp->nlast, fp->last_cap);
		fp->last[fp->nlast++].device = ev->device;
		fp->last[i].allocated = after;
	}
	uint64_t before = ev->window_start ? after : fp->last[i].allocated;
	fp->last[i].allocated = after;
	return before;
}

static struct fwg_dev *dev_of(struct fwg_result *r, int64_t device)
{
	for (size_t i = 0; i < r->ndevs; i++)
		if (r->devs[i].device == device)
			return &r->devs[i];
	r->devs = xrealloc(r->devs, (r->ndevs + 1) * sizeof(*r->devs));
	struct fwg_dev *d = &r->devs[r->ndevs++];
	memset(d, 0, sizeof(*d));
	d->device = device;
	d->nfloor = r->ntimes - 1;
	d->floor = xcalloc(d->nfloor + 1, sizeof(*d->floor));
	for (size_t i = 0; i < d->nfloor; i++)
		d->floor[i] = UINT64_MAX;
	return d;
}

/* The iteration holding time t: boundaries[i] <= t < boundaries[i + 1]. */
static size_t iteration_of(const struct fwg_result *r, uint64_t t, bool *inside)
{
	size_t lo = 0, hi = r->ntimes;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->times[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	*inside = lo > 0 && lo < r->ntimes;
	return lo - 1;
}

static void offer(struct fwg_dev *g, size_t i, uint64_t low)
{
	if (i < g->nfloor && low < g->floor[i])
		g->floor[i] = low;
}

static void floor_entry(void *ctx, const struct fw_event *ev, const struct fw_state *st)
{
	struct floor_pass *fp = ctx;
	const struct fwg_result *r = fp->out;
	bool inside;
	size_t i = iteration_of(r, ev->time_ns, &inside);
	const struct fw_dev *d = fw_state_dev(st, ev->device);
	if (!d)
		return;
	/* the level as an iteration begins is its own too: with the state
	 * before each entry, the start counts where its first entry adds */
	uint64_t before = level_before(fp, ev, d->allocated);
	if (!ev->time_ns)
		return;
	/* an entry this close to a boundary may belong to either side: the
	 * levels about it are offered to both, so a step's first tensor stamped
	 * a microsecond early cannot lift that step's floor */
	size_t k = SIZE_MAX, next = i + 1; /* i is SIZE_MAX before the first boundary */
	if (next < r->ntimes && r->times[next] - ev->time_ns <= FWG_CLOCK_SLACK_NS)
		k = next;
	else if (i != SIZE_MAX && ev->time_ns - r->times[i] <= FWG_CLOCK_SLACK_NS)
		k = i;
	if (!inside && k == SIZE_MAX)
		return;
	struct fwg_dev *g = dev_of(fp->out, ev->device);
	uint64_t low = before < d->allocated ? before : d->allocated;
	if (inside)
		offer(g, i, low);
	if (k != SIZE_MAX) {
		if (k)
			offer(g, k - 1, low);
		offer(g, k, low);
	}
}

static void floor_end(void *ctx, const struct fw_state *st)
{
	struct floor_pass *fp = ctx;
	for (const struct fw_tensor *x = st->tensors; x; x = x->hh.next) {
		if (x->pending)
			continue;
		GROW(fp->held, fp->nheld, fp->held_cap);
		fp->held[fp->nheld++] =
		    (struct held){x->key.device, x->time_ns, x->stack_id, x->size};
	}
}

static int held_cmp(const void *a, const void *b)
{
	const struct held *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int site_cmp(const void *a, const void *b)
{
	const struct fwg_site *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int size_cmp(const void *a, const void *b)
{
	const size_t *x = a, *y = b;
	return *x < *y ? -1 : *x > *y;
}

/* The held tensors [i, j) of one stack on d: bytes, count and distinct
 * iterations of those allocated from `from` on. */
static struct fwg_site held_site(const struct fwg_result *r, const struct fwg_dev *d,
				 const struct floor_pass *fp, size_t i, size_t j, uint64_t from)
{
	struct fwg_site s = {fp->held[i].stack_id, 0, 0, 0};
	size_t *it = xcalloc(j - i + 1, sizeof(*it));
	for (size_t k = i; k < j; k++)
		if (fp->held[k].device == d->device && fp->held[k].time_ns >= from) {
			bool inside;
			s.bytes += fp->held[k].size;
			it[s.count++] = iteration_of(r, fp->held[k].time_ns, &inside);
		}
	if (s.count > 1)
		qsort(it, s.count, sizeof(*it), size_cmp);
	for (size_t k = 0; k < s.count; k++)
		s.iterations += !k || it[k] != it[k - 1];
	free(it);
	return s;
}

/* A leak's lines: the tensors live at the end allocated from its first
 * step on, by stack, largest first; the lines that keep them from
 * FWG_SITE_ITERATIONS iterations at least, if any does. */
static void leak_sites(struct fwg_result *r, struct fwg_dev *d, struct floor_pass *fp)
{
	size_t start = d->v.start_x ? d->v.start_x - 1 : 0;
	uint64_t from = r->times[start < r->ntimes ? start : 0];
	struct fwg_site all[64];
	size_t n = 0;
	bool repeated = false;
	for (size_t i = 0, j; i < fp->nheld; i = j) {
		for (j = i; j < fp->nheld && !held_cmp(&fp->held[j], &fp->held[i]); j++)
			;
		struct fwg_site s = held_site(r, d, fp, i, j, from);
		repeated |= s.iterations >= FWG_SITE_ITERATIONS;
		if (!s.count)
			continue;
		if (n < 64)
			all[n++] = s;
		else if (s.bytes > all[63].bytes)
			all[63] = s;
		if (n == 64) /* the smallest last */
			qsort(all, n, sizeof(*all), site_cmp);
	}
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (repeated && all[i].iterations < FWG_SITE_ITERATIONS)
			continue;
		d->held_bytes += all[i].bytes;
		d->held_count += all[i].count;
		all[kept++] = all[i];
	}
	n = kept;
	if (n > 1)
		qsort(all, n, sizeof(*all), site_cmp);
	d->nsites = n < FWG_SITES ? n : FWG_SITES;
	memcpy(d->sites, all, d->nsites * sizeof(*all));
}

static void decide(struct fwg_result *r, struct fwg_dev *d, struct floor_pass *fp)
{
	size_t n = d->nfloor;
	for (size_t i = 1; i < n; i++) /* an iteration without entries keeps the level */
		if (d->floor[i] == UINT64_MAX)
			d->floor[i] = d->floor[i - 1];
	if (n && d->floor[0] == UINT64_MAX)
		d->floor[0] = 0;
	struct growth_rise *rises = xcalloc(n + 1, sizeof(*rises));
	size_t k = 0;
	uint64_t level = n ? d->floor[0] : 0;
	for (size_t i = 1; i < n; i++)
		if (d->floor[i] > level) {
			level = d->floor[i];
			rises[k++] = (struct growth_rise){i, level};
		}
	struct growth_series s = {.rises = rises,
				  .n = k,
				  .xend = n ? n - 1 : 0,
				  .xlast = n ? n - 1 : 0,
				  .base = n ? d->floor[0] : 0,
				  .merge = MERGE_ITERS,
				  .min_steady = STEADY_ITERS};
	growth_decide(&s, &d->v);
	free(rises);
	if (d->v.kind == GV_LEAK)
		leak_sites(r, d, fp);
}

int fwg_compute(struct trace *t, const struct growth_result *g, struct fwg_result *out)
{
	memset(out, 0, sizeof(*out));
	if (!fwhist_present(t))
		return -1;
	int rc = -1;
	if (g && g->mk.n >= GROWTH_MARKER_MIN && g->mk.times) {
		out->source = "the trace's iterations";
		out->ntimes = g->mk.n;
		out->times = xcalloc(g->mk.n + 1, sizeof(*out->times));
		memcpy(out->times, g->mk.times, g->mk.n * sizeof(*out->times));
	} else {
		rc = find_pattern(t, out);
	}
	if (rc >= 0 || out->ntimes < 3)
		return rc;
	struct floor_pass fp = {.out = out};
	struct fw_replay_cbs cb = {.after = floor_entry, .end = floor_end, .ctx = &fp};
	rc = fwhist_replay_cb(t, &cb);
	if (fp.nheld > 1)
		qsort(fp.held, fp.nheld, sizeof(*fp.held), held_cmp);
	for (size_t i = 0; rc < 0 && i < out->ndevs; i++)
		decide(out, &out->devs[i], &fp);
	free(fp.held);
	free(fp.last);
	return rc;
}

void fwg_free(struct fwg_result *r)
{
	for (size_t i = 0; i < r->ndevs; i++)
		free(r->devs[i].floor);
	free(r->devs);
	free(r->times);
	memset(r, 0, sizeof(*r));
}
