/* The tensors inside a framework's segments at given moments
 * (analysis/fwtensors.h). */
#include <stdlib.h>
#include <string.h>

#include "common/fwhist.h"
#include "reader/xalloc.h"
#include "analysis/fwhist.h"
#include "analysis/fwtensors.h"
#include "analysis/trace.h"

struct tot {
	UT_hash_handle hh;
	struct {
		int64_t device;
		uint64_t stack_id;
	} k;
	uint64_t bytes, calls;
};

struct capture {
	struct fwt_set *s;
	struct tot *tots;
	bool *done, *after;
	size_t segs_cap[64]; /* per device slot (the first 64 devices) */
};

static struct fwt_dev *slot(struct fwt_set *s, int64_t device, size_t *at)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->devs[i].device == device) {
			*at = i;
			return &s->devs[i];
		}
	return NULL;
}

static int by_addr(const void *a, const void *b)
{
	const struct fwt_tensor *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The device's tensors from the replay's state. */
static void take(struct fwt_dev *d, const struct fw_state *st)
{
	size_t cap = 0;
	const struct fw_dev *fd = fw_state_dev(st, d->device);
	d->reserved = fd ? fd->reserved : 0;
	for (const struct fw_tensor *x = st->tensors; x; x = x->hh.next) {
		if (x->key.device != d->device)
			continue;
		GROW(d->v, d->n, cap);
		d->v[d->n++] = (struct fwt_tensor){x->key.addr, x->size, x->stack_id, x->before};
		d->bytes += x->size;
	}
	if (d->n > 1)
		qsort(d->v, d->n, sizeof(*d->v), by_addr);
}

static void add_seg(struct capture *c, size_t i, uint64_t addr)
{
	struct fwt_dev *d = &c->s->devs[i];
	size_t cap = i < 64 ? c->segs_cap[i] : d->nsegs;
	if (i >= 64)
		return;
	GROW(d->segs, d->nsegs, cap);
	c->segs_cap[i] = cap;
	d->segs[d->nsegs++] = addr;
}

static void count(struct capture *c, const struct fw_event *ev)
{
	struct tot *x, key;
	memset(&key, 0, sizeof(key));
	key.k.device = ev->device;
	key.k.stack_id = ev->e->stack_id;
	HASH_FIND(hh, c->tots, &key.k, sizeof(key.k), x);
	if (!x) {
		x = xcalloc(1, sizeof(*x));
		x->k = key.k;
		HASH_ADD(hh, c->tots, k, sizeof(x->k), x);
		c->s->ntotals++;
	}
	x->bytes += ev->e->size;
	x->calls++;
}

/* A driver allocation and the framework's entry for it are stamped on
 * different clocks: an entry this much before the driver's stamp may still
 * be its. */
#define SLACK_NS 1000000ull

static void before(void *ctx, const struct fw_event *ev, const struct fw_state *st)
{
	struct capture *c = ctx;
	size_t i;
	struct fwt_dev *d = slot(c->s, ev->device, &i);
	if (!d)
		return;
	uint32_t a = ev->e->action;
	bool seg = a == GMT_FW_SEGMENT_ALLOC || a == GMT_FW_SEGMENT_FREE ||
		   a == GMT_FW_SEGMENT_MAP || a == GMT_FW_SEGMENT_UNMAP;
	if (a == GMT_FW_SEGMENT_ALLOC)
		add_seg(c, i, ev->e->addr);
	if (a == GMT_FW_ALLOC)
		count(c, ev);
	if (!d->first_ns)
		d->first_ns = ev->time_ns;
	bool late = ev->time_ns && ev->time_ns > d->time_ns;
	if (c->done[i]) {
	} else if (d->addr && a == GMT_FW_SEGMENT_ALLOC && ev->e->addr == d->addr && ev->time_ns &&
		   ev->time_ns + SLACK_NS > d->time_ns) {
		/* the driver's segment, then the tensor it was made for */
		d->addr = 0;
		d->past = true;
		d->early = !d->seen;
	} else if (d->addr && late && (seg || ev->time_ns > d->time_ns + SLACK_NS)) {
		/* not the framework's allocation: the moment is before this */
		take(d, st);
		c->done[i] = true;
		d->early = !d->seen;
	} else if (d->addr) {
	} else if (d->past && a == GMT_FW_ALLOC) {
		c->after[i] = true;
	} else if (!d->past && late) {
		take(d, st);
		c->done[i] = true;
		d->early = !d->seen;
	}
	d->seen = true;
}

static void after(void *ctx, const struct fw_event *ev, const struct fw_state *st)
{
	struct capture *c = ctx;
	size_t i;
	struct fwt_dev *d = slot(c->s, ev->device, &i);
	if (d && c->after[i] && !c->done[i]) {
		take(d, st);
		c->done[i] = true;
	}
}

static void end(void *ctx, const struct fw_state *st)
{
	struct capture *c = ctx;
	for (size_t i = 0; i < c->s->n; i++) {
		struct fwt_dev *d = &c->s->devs[i];
		const struct fw_dev *fd = fw_state_dev(st, d->device);
		if (fd) {
			d->peak_allocated = fd->peak_allocated;
			d->peak_allocated_ns = fd->peak_allocated_ns;
			d->peak_reserved = fd->peak_reserved;
			d->peak_reserved_ns = fd->peak_reserved_ns;
			d->end_allocated = fd->allocated;
			d->end_tensors = fd->tensors;
			d->end_reserved = fd->reserved;
		}
	}
	for (size_t i = 0; i < c->s->n; i++)
		if (!c->done[i]) {
			take(&c->s->devs[i], st);
			c->done[i] = true;
		}
}

int fwt_capture(struct trace *t, size_t n, const int64_t *devices, const uint64_t *times,
		const uint64_t *addrs, struct fwt_set *out)
{
	memset(out, 0, sizeof(*out));
	out->devs = xcalloc(n + 1, sizeof(*out->devs));
	out->n = n;
	struct capture c = {
	    .s = out, .done = xcalloc(n + 1, sizeof(bool)), .after = xcalloc(n + 1, sizeof(bool))};
	for (size_t i = 0; i < n; i++) {
		out->devs[i].device = devices[i];
		out->devs[i].time_ns = times[i];
		out->devs[i].addr = addrs ? addrs[i] : 0;
	}
	/* every segment a snapshot names, and (in the replay) every one allocated */
	const struct fwhist *h = t->fw;
	for (size_t k = 0; h && k < h->nsnaps; k++)
		for (size_t j = 0; j < h->snaps[k].nsegs; j++) {
			const struct fw_segment *g = &h->snaps[k].segs[j];
			size_t i;
			if (!(g->flags & GMT_FWSEG_EXPANDABLE) && slot(out, g->device, &i))
				add_seg(&c, i, g->address);
		}
	struct fw_replay_cbs cb = {.before = before, .after = after, .end = end, .ctx = &c};
	int rc = fwhist_replay_cb(t, &cb);
	for (size_t i = 0; i < n; i++) {
		struct fwt_dev *d = &out->devs[i];
		if (d->nsegs > 1)
			qsort(d->segs, d->nsegs, sizeof(*d->segs), u64_cmp);
	}
	out->totals = xcalloc(out->ntotals + 1, sizeof(*out->totals));
	size_t k = 0;
	struct tot *x, *tmp;
	HASH_ITER(hh, c.tots, x, tmp)
	{
		out->totals[k++] =
		    (struct fwt_total){x->k.device, x->k.stack_id, x->bytes, x->calls};
		HASH_DEL(c.tots, x);
		free(x);
	}
	free(c.done);
	free(c.after);
	return rc;
}

void fwt_free(struct fwt_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->devs[i].v);
		free(s->devs[i].segs);
	}
	free(s->devs);
	free(s->totals);
	memset(s, 0, sizeof(*s));
}

uint64_t fwt_peak_ptr(const struct fwt_peaks *p, int64_t device)
{
	for (size_t k = 0; k < p->n; k++)
		if (p->v[k].device == device)
			return p->v[k].ptr;
	return 0;
}

const struct fwt_dev *fwt_dev(const struct fwt_set *s, int64_t device)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->devs[i].device == device)
			return &s->devs[i];
	return NULL;
}

static bool has(const uint64_t *v, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == key;
}

bool fwt_split(const struct fwt_set *s, int64_t device, uint64_t addr, uint64_t size, fwt_fn fn,
	       void *ctx, uint64_t *rest)
{
	const struct fwt_dev *d = fwt_dev(s, device);
	if (!d || !has(d->segs, d->nsegs, addr))
		return false;
	size_t lo = 0, hi = d->n;
	while (lo < hi) { /* the first tensor at or above addr */
		size_t mid = (lo + hi) / 2;
		if (d->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t held = 0;
	for (size_t i = lo; i < d->n && d->v[i].addr - addr < size; i++) {
		if (fn)
			fn(ctx, &d->v[i]);
		held += d->v[i].size;
	}
	*rest = held < size ? size - held : 0;
	return true;
}
