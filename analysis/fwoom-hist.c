/* A PyTorch allocator history's oom entries as framework errors: a
 * snapshot pickle (or a run --framework-history without the counters'
 * helper) has no FWOOM record, yet each oom entry is the moment PyTorch's
 * out-of-memory observer fires (CUDACachingAllocator's malloc: the entry
 * is recorded, then the observers are called, with the same figures). A
 * fraction OOM makes no driver call: without this, oom and explain on a
 * snapshot would say "no allocation failed". */
#include "analysis/fwoom.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/fwhist.h"
#include "reader/xalloc.h"

#define MAX_DEVS 64

struct hctx {
	struct trace *t;
	long last[MAX_DEVS]; /* each device's latest oom record, -1: none */
};

static void add_value(struct trace_fwoom *f, const char *name, uint64_t v)
{
	f->v[f->n].name = xstrdup(name);
	f->v[f->n++].value = v;
}

static void on_entry(void *ctx, const struct fw_event *ev, const struct fw_state *st)
{
	struct hctx *h = ctx;
	struct trace *t = h->t;
	bool dev_ok = ev->device >= 0 && ev->device < MAX_DEVS;
	if (ev->e->action == GMT_FW_ALLOC && dev_ok && h->last[ev->device] >= 0) {
		struct trace_fwoom *f = &t->fwooms[h->last[ev->device]];
		f->v[f->n - 1].value++; /* the program went on: it caught the error */
		return;
	}
	if (ev->e->action != GMT_FW_OOM)
		return;
	if (t->fwooms_total++ >= TRACE_MAX_FWOOM)
		return;
	GROW(t->fwooms, t->nfwooms, t->fwooms_cap);
	struct trace_fwoom *f = &t->fwooms[t->nfwooms++];
	*f = (struct trace_fwoom){.time_ns = ev->time_ns,
				  .how = GMT_FWOOM_OBSERVER,
				  .source = xstrdup("torch"),
				  .type = xstrdup(""),
				  .message = xstrdup(""),
				  .device = ev->device,
				  .v = xcalloc(5, sizeof(struct trace_counter))};
	/* the observer's arguments: the request (rounded, as the allocator
	 * asks), the device's free bytes (an oom entry's addr) */
	add_value(f, "alloc_size", ev->e->size);
	add_value(f, "device_free", ev->e->addr);
	const struct fw_dev *d = fw_state_dev(st, ev->device);
	if (d) { /* memory_stats then: tensors' bytes as asked (the blocks round up) */
		add_value(f, "reserved_bytes.all.current", d->reserved);
		add_value(f, "allocated_bytes.all.current", d->allocated);
	}
	/* the history's allocations on the device after it, counted on: 0
	 * when the history ends in it (the run stopped there, or dumped its
	 * snapshot in the handler) */
	add_value(f, FWOOM_HIST_AFTER, 0);
	if (dev_ok)
		h->last[ev->device] = (long)(t->nfwooms - 1);
}

void fwoom_add_history(struct trace *t)
{
	if (t->nfwooms || t->fwooms_total || !t->fw || !t->fw->entries)
		return;
	struct hctx h = {t, {0}};
	for (int i = 0; i < MAX_DEVS; i++)
		h.last[i] = -1;
	fwhist_replay(t, on_entry, &h); /* a read error is the caller's to report */
}

bool fwoom_from_history(const struct fwoom *f)
{
	const struct trace_fwoom *r = f->observer;
	return r && r->n && !strcmp(r->v[r->n - 1].name, FWOOM_HIST_AFTER);
}

bool fwoom_history_ended(const struct fwoom *f)
{
	return fwoom_from_history(f) && f->observer->v[f->observer->n - 1].value == 0;
}
