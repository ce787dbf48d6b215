/* The tensors inside a framework's segments at given moments (analysis/
 * fwhist.h's replay), to split a driver allocation that is one of its
 * segments into the tensors it held and the bytes the cache held free:
 * top, summary and flamegraph --tensors.
 *
 *     struct fwt_set s;
 *     fwt_capture(t, n, devices, times, &s);   // UINT64_MAX: the end
 *     uint64_t rest;
 *     if (fwt_split(&s, dev, addr, size, fn, ctx, &rest)) ... // a segment
 *     fwt_free(&s);
 *
 * Tensor sizes are as requested; what a segment holds beyond them (free
 * blocks, rounding) is its rest. Segments of expandable segments (mapped
 * pages, not one cudaMalloc) are not split. */
#ifndef GMT_ANALYSIS_FWTENSORS_H
#define GMT_ANALYSIS_FWTENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/replay.h"

struct trace;

struct fwt_tensor {
	uint64_t addr, size, stack_id;
	bool before; /* allocated before the history's window */
};

struct fwt_dev {
	int64_t device;
	uint64_t time_ns;     /* the moment asked for */
	uint64_t addr;	      /* the driver allocation that made it (0: none) */
	bool past;	      /* the driver's segment was seen */
	struct fwt_tensor *v; /* live then, by address */
	size_t n;
	uint64_t *segs; /* every segment address the history names, sorted */
	size_t nsegs;
	uint64_t bytes;	   /* the tensors' */
	bool early;	   /* the moment came before the history's first entry: the
			    * tensors are those live when the history begins */
	bool seen;	   /* the history has entries on this device */
	uint64_t reserved; /* the framework's segment bytes at the moment */
	/* over the whole history: */
	uint64_t peak_allocated, peak_allocated_ns, peak_reserved, peak_reserved_ns;
	uint64_t end_allocated, end_tensors, end_reserved;
	uint64_t first_ns; /* the history's first entry on it (the trace's clock; 0: none) */
};

/* A line's tensor allocations over the whole history (its alloc entries, as
 * requested): top's total and calls under --tensors. */
struct fwt_total {
	int64_t device;
	uint64_t stack_id, bytes, calls;
};

struct fwt_set {
	struct fwt_dev *devs;
	size_t n;
	struct fwt_total *totals; /* on the devices asked, in no order */
	size_t ntotals;
};

/* The tensors live on each devices[i] at the driver's moment times[i]
 * (UINT64_MAX: the end), made by the driver allocation at addrs[i] (0: not
 * known, or not the framework's; addrs may be NULL).
 *
 * The framework stamps its entries on its own clock, a little after the
 * driver call they follow; its segment's entry is found by address: the
 * moment is right after the tensor that segment was made for. Without an
 * address, the moment is before the first entry stamped after times[i].
 * Returns -1, or the exit code when reading failed. */
int fwt_capture(struct trace *t, size_t n, const int64_t *devices, const uint64_t *times,
		const uint64_t *addrs, struct fwt_set *out);
void fwt_free(struct fwt_set *s);
const struct fwt_dev *fwt_dev(const struct fwt_set *s, int64_t device);

/* The address each device's peak allocation returned, noted during a
 * replay (after each event is applied): fwt_capture's addrs. */
struct fwt_peaks {
	struct fwt_peak {
		int64_t device;
		uint64_t ptr;
	} * v;
	size_t n, cap;
};
static inline void fwt_note_peak(struct fwt_peaks *p, const struct gmt_event *e,
				 const struct replay *rp)
{
	for (size_t i = 0; i < rp->ndevs; i++) {
		if (rp->devs[i].ordinal != e->device || rp->devs[i].lv.peak_seq != rp->seq)
			continue;
		size_t k = 0;
		while (k < p->n && p->v[k].device != e->device)
			k++;
		if (k == p->n) {
			if (p->n == p->cap) {
				p->cap = p->cap ? 2 * p->cap : 4;
				p->v = realloc(p->v, p->cap * sizeof(*p->v));
				if (!p->v) {
					p->n = p->cap = 0;
					return;
				}
			}
			p->n++;
		}
		p->v[k] = (struct fwt_peak){e->device, e->ptr};
	}
}
uint64_t fwt_peak_ptr(const struct fwt_peaks *p, int64_t device);

/* Whether [addr, addr + size) on device is one of the framework's
 * segments; if so, calls fn for each tensor inside it (live at the
 * moment captured) and sets *rest to the bytes no tensor held. */
typedef void (*fwt_fn)(void *ctx, const struct fwt_tensor *x);
bool fwt_split(const struct fwt_set *s, int64_t device, uint64_t addr, uint64_t size, fwt_fn fn,
	       void *ctx, uint64_t *rest);

#endif
