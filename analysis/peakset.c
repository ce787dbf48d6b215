/* Live set at each device's peak in one pass: see peakset.h. */
#include <stdint.h>
#include <string.h>

/* The key is three 64-bit words (struct pk_key): a multiply per word mixes
 * them for far less than Jenkins' hash. Only this file hashes into the
 * table. */
#define HASH_FUNCTION(keyptr, keylen, hashv)                                                       \
	do {                                                                                       \
		uint64_t w_[3];                                                                    \
		memcpy(w_, keyptr, sizeof(w_));                                                    \
		uint64_t h_ = (w_[0] * 0x9e3779b97f4a7c15ull) ^ (w_[1] * 0xc2b2ae3d27d4eb4full) ^  \
			      (w_[2] * 0x165667b19e3779f9ull);                                     \
		(hashv) = (unsigned)(h_ >> 32);                                                    \
	} while (0)

#include "analysis/peakset.h"

#include <stdlib.h>
#include <string.h>

#include "common/api.h"
#include "common/text.h"
#include "analysis/diag.h"
#include "reader/reader.h"
#include "reader/xalloc.h"

static bool is_big(uint32_t api, uint64_t size)
{
	const struct api_info *a = api_lookup(api);
	return a && a->kind == GMT_KIND_DEVICE && size > PK_BIG;
}

static const struct rp_dev *dev_of(const struct replay *rp, int64_t ordinal)
{
	for (size_t i = 0; i < rp->ndevs; i++)
		if (rp->devs[i].ordinal == ordinal)
			return &rp->devs[i];
	return NULL;
}

static void on_change(void *ctx, const struct rp_live *l, bool counted)
{
	struct peakset *ps = ctx;
	if (counted || l->bucket != BK_DEVICE)
		return;
	const struct rp_dev *d = dev_of(ps->rp, l->device);
	uint64_t peak = d ? d->lv.peak_seq : 0;
	if (!peak || l->seq > peak)
		return; /* not live at the peak */
	struct pk_key k = {l->device, l->stack_id, l->api};
	struct pk_group *g = ps->last;
	if (!g || memcmp(&g->key, &k, sizeof(k)) != 0) {
		HASH_FIND(hh, ps->groups, &k, sizeof(k), g);
		if (!g) {
			g = xcalloc(1, sizeof(*g));
			g->key = k;
			HASH_ADD(hh, ps->groups, key, sizeof(g->key), g);
		}
		ps->last = g;
	}
	if (g->epoch != peak) { /* counted for an older peak: stale */
		g->epoch = peak;
		g->bytes = g->count = g->big = g->rounding = 0;
	}
	g->bytes += l->size;
	g->count++;
	if (is_big(l->api, l->size)) {
		g->big++;
		g->rounding += (PK_PAGE - l->size % PK_PAGE) % PK_PAGE;
	}
}

void peakset_attach(struct peakset *ps, struct replay *rp)
{
	memset(ps, 0, sizeof(*ps));
	ps->rp = rp;
	rp->on_change = on_change;
	rp->on_change_ctx = ps;
	rp->on_change_peak_ends = true; /* on_change has nothing to do for the others */
}

void peakset_free(struct peakset *ps)
{
	struct pk_group *g, *gt;
	HASH_ITER(hh, ps->groups, g, gt)
	{
		HASH_DEL(ps->groups, g);
		free(g);
	}
	memset(ps, 0, sizeof(*ps));
}

void peakset_each(const struct peakset *ps, int64_t ordinal, peakset_fn fn, void *ctx)
{
	const struct replay *rp = ps->rp;
	const struct rp_dev *d = dev_of(rp, ordinal);
	uint64_t peak = d ? d->lv.peak_seq : 0;
	if (!peak)
		return;
	GMT_EACH_SPACE(sp)
	{
		struct rp_live *l, *lt;
		RP_EACH(rp, sp, l, lt)
		{
			if (l->bucket != BK_DEVICE || l->device != ordinal || l->seq > peak)
				continue;
			bool big = is_big(l->api, l->size);
			fn(ctx, l->stack_id, l->api, l->size, 1, big,
			   big ? (PK_PAGE - l->size % PK_PAGE) % PK_PAGE : 0);
		}
	}
	struct pk_group *g, *gt;
	HASH_ITER(hh, ps->groups, g, gt)
	{
		if (g->key.device == ordinal && g->epoch == peak && g->count)
			fn(ctx, g->key.stack_id, (uint32_t)g->key.api, g->bytes, g->count, g->big,
			   g->rounding);
	}
}
