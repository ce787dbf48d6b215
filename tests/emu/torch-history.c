/* PyTorch's allocator history, emulated (torch-history.h). */
#include <stdlib.h>
#include <time.h>

#include "gpumemtrace/format.h"
#include "gpumemtrace/gpumemtrace.h"

#include "emu.h"
#include "torch-history.h"

struct emu_hist_entry {
	uint64_t action, addr, size, stream, time_us;
	int site;
};

static struct {
	bool on;
	const struct emu_frame *frames;
	size_t nframes;
	const struct emu_site *sites;
	size_t nsites;
	struct emu_hist_entry *v;
	size_t n, cap;
	size_t written; /* entries an earlier snapshot wrote */
	uint64_t seq;	/* the last snapshot's */
	uint64_t *frame_ids;
} emu_hist;
static __thread int emu_hist_site;

void emu_history_init(const struct emu_frame *frames, size_t nframes, const struct emu_site *sites,
		      size_t nsites)
{
	emu_hist.on = emu_history_on();
	emu_hist.frames = frames;
	emu_hist.nframes = nframes;
	emu_hist.sites = sites;
	emu_hist.nsites = nsites;
}

bool emu_history_on(void)
{
	return emu_env_on("EMU_HISTORY");
}

/* The emulated script is at sites[site] on this thread. */
void emu_history_site(int site)
{
	emu_hist_site = site;
}

/* One entry (GMT_FW_* action numbers, which are PyTorch's order). Called
 * under the allocator's lock. */
void emu_history_entry(unsigned action, uint64_t addr, uint64_t size, uint64_t stream)
{
	if (!emu_hist.on)
		return;
	if (emu_hist.n == emu_hist.cap) {
		emu_hist.cap = emu_hist.cap ? 2 * emu_hist.cap : 4096;
		emu_hist.v = realloc(emu_hist.v, emu_hist.cap * sizeof(*emu_hist.v));
		if (!emu_hist.v)
			abort();
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	emu_hist.v[emu_hist.n++] =
	    (struct emu_hist_entry){action,
				    addr,
				    size,
				    stream,
				    (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000,
				    emu_hist_site};
}

/* A site's frame ids into out (innermost first): how many. */
static uint64_t emu_hist_stack(int site, uint64_t *out)
{
	if (site < 0 || (size_t)site >= emu_hist.nsites)
		return 0;
	const struct emu_site *s = &emu_hist.sites[site];
	for (int i = 0; i < s->n; i++)
		out[i] = emu_hist.frame_ids[s->frames[i]];
	return (uint64_t)s->n;
}

/* The site of the last alloc entry at ptr (a block's stack), or -1. */
static int emu_hist_alloc_site(uint64_t ptr)
{
	for (size_t i = emu_hist.n; i-- > 0;)
		if (emu_hist.v[i].action == GMT_FW_ALLOC && emu_hist.v[i].addr == ptr)
			return emu_hist.v[i].site;
	return -1;
}

/* The entries no earlier snapshot wrote (the helper finds them by the last
 * ones it wrote). */
static void emu_hist_entries(void)
{
	enum { BATCH = 2048 };
	static uint64_t vals[BATCH * 6], frames[BATCH * EMU_STACK_MAX];
	for (size_t at = emu_hist.written; at < emu_hist.n; at += BATCH) {
		size_t n = emu_hist.n - at < BATCH ? emu_hist.n - at : BATCH, nf = 0;
		for (size_t i = 0; i < n; i++) {
			const struct emu_hist_entry *e = &emu_hist.v[at + i];
			/* stacks on allocations and OOMs: what the reports read (PyTorch
			 * records the frees' too) */
			uint64_t k = e->action == GMT_FW_ALLOC || e->action == GMT_FW_OOM
					 ? emu_hist_stack(e->site, frames + nf)
					 : 0;
			nf += k;
			uint64_t *v = vals + 6 * i;
			v[0] = e->action, v[1] = e->addr, v[2] = e->size, v[3] = e->stream;
			v[4] = e->time_us, v[5] = k;
		}
		gpumemtrace_fw_entries(emu_hist.seq, 0, 0, n, vals, frames);
	}
	emu_hist.written = emu_hist.n;
}

/* One segment (its blocks b[0..n)) as the helper writes it. */
static void emu_hist_segment(const struct emu_hist_block *b, size_t n)
{
	enum { BATCH = 2048 };
	static uint64_t vals[BATCH * 5], frames[BATCH * EMU_STACK_MAX];
	uint64_t total = 0, none = 0;
	for (size_t i = 0; i < n; i++)
		total += b[i].size;
	uint64_t head[7] = {b[0].ptr,
			    total,
			    b[0].stream,
			    (b[0].expandable ? GMT_FWSEG_EXPANDABLE : 0) |
				(b[0].small ? GMT_FWSEG_SMALL : 0),
			    0,
			    0,
			    0};
	for (size_t at = 0; at < n; at += BATCH) {
		size_t m = n - at < BATCH ? n - at : BATCH, nf = 0;
		for (size_t i = 0; i < m; i++) {
			const struct emu_hist_block *x = &b[at + i];
			uint64_t k = x->allocated
					 ? emu_hist_stack(emu_hist_alloc_site(x->ptr), frames + nf)
					 : 0;
			nf += k;
			uint64_t *v = vals + 5 * i;
			v[0] = x->ptr, v[1] = x->size, v[2] = x->allocated ? x->requested : 0;
			v[3] = !x->allocated ? GMT_FWBLOCK_INACTIVE
			       : x->pending  ? GMT_FWBLOCK_ACTIVE_PENDING_FREE
					     : GMT_FWBLOCK_ACTIVE_ALLOCATED;
			v[4] = k;
		}
		head[3] =
		    (head[3] & ~(uint64_t)GMT_FWSEG_CONTINUED) | (at ? GMT_FWSEG_CONTINUED : 0);
		gpumemtrace_fw_segment(emu_hist.seq, 0, head, &none, m, vals, frames);
	}
}

/* A snapshot: its FWSNAP, its new entries, each segment. */
static void emu_hist_snapshot(unsigned reason, const struct emu_hist_block *blocks, size_t n,
			      const char *conf, uint64_t max_entries)
{
	const char *keys[] = {"PYTORCH_CUDA_ALLOC_CONF"}, *vals[] = {conf ? conf : ""};
	gpumemtrace_fw_snapshot(emu_hist.seq, reason, "torch",
				GMT_FWSNAP_HISTORY | GMT_FWSNAP_PY_STACKS, max_entries, 1, keys,
				vals);
	emu_hist_entries();
	for (size_t i = 0; i < n;) {
		size_t k = i + 1;
		while (k < n && !blocks[k].seg_start)
			k++;
		emu_hist_segment(blocks + i, k - i);
		i = k;
	}
}

/* The first names the frames (torch-history.h). */
void emu_history_write(unsigned reason, const struct emu_hist_block *blocks, size_t n,
		       const char *conf, uint64_t max_entries)
{
	if (!emu_hist.on)
		return;
	if (emu_hist.seq++) {
		emu_hist_snapshot(reason, blocks, n, conf, max_entries);
		return;
	}
	const char *fn[64], *file[64];
	uint64_t line[64];
	static uint64_t ids[64];
	size_t nf = emu_hist.nframes < 64 ? emu_hist.nframes : 64;
	for (size_t i = 0; i < nf; i++) {
		fn[i] = emu_hist.frames[i].function;
		file[i] = emu_hist.frames[i].file;
		line[i] = emu_hist.frames[i].line;
	}
	gpumemtrace_fw_frames(nf, fn, file, line, ids);
	emu_hist.frame_ids = ids;
	emu_hist_snapshot(reason, blocks, n, conf, max_entries);
}
