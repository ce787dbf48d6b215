/* A framework allocator's own view: its snapshots and its history replayed
 * (analysis/fwhist.h). */
#include <stdlib.h>
#include <string.h>

#include "common/fwhist.h"
#include "reader/xalloc.h"
#include "analysis/fwhist.h"
#include "analysis/trace.h"

/* One window: the entries of one snapshot on one device. */
struct fw_window {
	uint64_t seq;
	int64_t device;
	bool rebuilt;		   /* its start was rebuilt, not carried from the window before */
	bool done;		   /* the rebuild is finished */
	int64_t net_reserved;	   /* the segment bytes its entries added (pass 1) */
	uint64_t start_reserved;   /* rebuilt: the segment bytes when it opened */
	struct fw_tensor *before;  /* rebuilt: the tensors live when it opened */
	uint64_t before_allocated; /* their bytes (not pending) */
};

/* The metadata pass's state per device. */
struct fw_track {
	int64_t device;
	uint64_t seq;		/* of the window being read */
	size_t window;		/* its index */
	struct fw_tensor *live; /* allocated in the window (or carried into it) */
	struct fw_track *next;
};

/* ---- small helpers ---- */

static struct fw_snapshot *snap_get(struct fwhist *h, uint64_t seq)
{
	size_t lo = 0, hi = h->nsnaps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->snaps[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->nsnaps && h->snaps[lo].seq == seq)
		return &h->snaps[lo];
	GROW(h->snaps, h->nsnaps, h->snaps_cap);
	memmove(&h->snaps[lo + 1], &h->snaps[lo], (h->nsnaps - lo) * sizeof(*h->snaps));
	h->nsnaps++;
	struct fw_snapshot *s = &h->snaps[lo];
	memset(s, 0, sizeof(*s));
	s->seq = seq;
	s->source = xstrdup("");
	return s;
}

static struct fwhist *fw_of(struct trace *t)
{
	if (!t->fw)
		t->fw = xcalloc(1, sizeof(*t->fw));
	return t->fw;
}

static void free_tensors(struct fw_tensor **head)
{
	struct fw_tensor *x, *tmp;
	HASH_ITER(hh, *head, x, tmp)
	{
		HASH_DEL(*head, x);
		free(x);
	}
}

static struct fw_tensor *tensor_find(struct fw_tensor *head, int64_t device, uint64_t addr)
{
	struct fw_key k;
	memset(&k, 0, sizeof k);
	k.device = device;
	k.addr = addr;
	struct fw_tensor *x = NULL;
	HASH_FIND(hh, head, &k, sizeof k, x);
	return x;
}

static struct fw_tensor *tensor_add(struct fw_tensor **head, int64_t device, uint64_t addr)
{
	struct fw_tensor *x = xcalloc(1, sizeof(*x));
	x->key.device = device;
	x->key.addr = addr;
	HASH_ADD(hh, *head, key, sizeof x->key, x);
	return x;
}

static void free_segments(struct fw_snapshot *s)
{
	for (size_t i = 0; i < s->nsegs; i++)
		free(s->segs[i].blocks);
	free(s->segs);
	s->segs = NULL;
	s->nsegs = s->segs_cap = 0;
}

static const struct fw_snapshot *find_snap(const struct fwhist *h, uint64_t seq)
{
	size_t lo = 0, hi = h ? h->nsnaps : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->snaps[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return h && lo < h->nsnaps && h->snaps[lo].seq == seq ? &h->snaps[lo] : NULL;
}

/* ---- the metadata pass ---- */

static void on_fwsnap(struct fwhist *h, const struct gmt_record *rec)
{
	struct fw_snapshot *s = snap_get(h, rec->u.fwsnap.seq);
	if (s->time_ns || s->nsettings)
		return; /* the first FWSNAP of a seq wins */
	s->time_ns = rec->u.fwsnap.time_ns;
	s->wall_ns = rec->u.fwsnap.wall_ns;
	s->tid = (int)rec->u.fwsnap.tid;
	s->reason = (int)rec->u.fwsnap.reason;
	free(s->source);
	s->source = xstrdup(rec->u.fwsnap.source.s);
	s->flags = (unsigned)rec->u.fwsnap.flags;
	s->max_entries = rec->u.fwsnap.max_entries;
	s->nsettings = rec->u.fwsnap.count;
	s->settings = xcalloc(s->nsettings + 1, sizeof(*s->settings));
	for (size_t i = 0; i < s->nsettings; i++) {
		s->settings[i].key = xstrdup(rec->u.fwsnap.settings[i].key.s);
		s->settings[i].value = xstrdup(rec->u.fwsnap.settings[i].value.s);
	}
}

/* Keeps the state of the first FW_STATES_MAX - 1 snapshots and of the
 * last one: a new snapshot's state drops the previous last one's. */
static bool keep_state(struct fwhist *h, struct fw_snapshot *s)
{
	if (s->state_dropped)
		return false;
	if (s->nsegs)
		return true;
	size_t kept = 0;
	struct fw_snapshot *last = NULL;
	for (size_t i = 0; i < h->nsnaps; i++)
		if (h->snaps[i].nsegs) {
			kept++;
			last = &h->snaps[i];
		}
	if (kept < FW_STATES_MAX)
		return true;
	if (last && last->seq < s->seq) {
		free_segments(last);
		last->state_dropped = true;
		h->states_dropped++;
		return true;
	}
	s->state_dropped = true;
	h->states_dropped++;
	return false;
}

static void on_fwseg(struct fwhist *h, const struct gmt_record *rec)
{
	struct fw_snapshot *s = snap_get(h, rec->u.fwseg.seq);
	if (!keep_state(h, s))
		return;
	struct fw_segment *g = s->nsegs ? &s->segs[s->nsegs - 1] : NULL;
	bool more = (rec->u.fwseg.flags & GMT_FWSEG_CONTINUED) && g &&
		    g->device == rec->u.fwseg.device && g->address == rec->u.fwseg.address;
	if (!more) {
		GROW(s->segs, s->nsegs, s->segs_cap);
		g = &s->segs[s->nsegs++];
		memset(g, 0, sizeof(*g));
		g->device = rec->u.fwseg.device;
		g->address = rec->u.fwseg.address;
		g->size = rec->u.fwseg.total_size;
		g->stream = rec->u.fwseg.stream;
		g->pool_a = rec->u.fwseg.pool_a;
		g->pool_b = rec->u.fwseg.pool_b;
		g->stack_id = rec->u.fwseg.stack_id;
		g->flags = (unsigned)(rec->u.fwseg.flags & ~(uint64_t)GMT_FWSEG_CONTINUED);
	}
	for (size_t i = 0; i < rec->u.fwseg.count; i++) {
		const struct gmt_fw_block *b = &rec->u.fwseg.v[i];
		GROW(g->blocks, g->nblocks, g->blocks_cap);
		g->blocks[g->nblocks++] = (struct fw_block){b->address, b->size, b->requested_size,
							    b->state, b->stack_id};
	}
}

static struct fw_track *track_get(struct fwhist *h, int64_t device)
{
	for (struct fw_track *k = h->track; k; k = k->next)
		if (k->device == device)
			return k;
	struct fw_track *k = xcalloc(1, sizeof(*k));
	k->device = device;
	k->window = SIZE_MAX;
	k->next = h->track;
	h->track = k;
	return k;
}

static bool block_active(uint32_t state)
{
	return state == GMT_FWBLOCK_ACTIVE_ALLOCATED || state == GMT_FWBLOCK_ACTIVE_PENDING_FREE;
}

/* A rebuilt window's end: every block active in its snapshot that the
 * window did not allocate was live before it; the segment bytes it opened
 * with are its snapshot's less what its entries added. */
static void finish_window(struct fwhist *h, struct fw_track *k)
{
	if (k->window == SIZE_MAX)
		return;
	struct fw_window *w = &h->windows[k->window];
	if (!w->rebuilt || w->done)
		return;
	w->done = true;
	const struct fw_snapshot *s = find_snap(h, w->seq);
	uint64_t end_reserved = 0;
	for (size_t i = 0; s && i < s->nsegs; i++) {
		const struct fw_segment *g = &s->segs[i];
		if (g->device != w->device)
			continue;
		end_reserved += g->size;
		for (size_t j = 0; j < g->nblocks; j++) {
			const struct fw_block *b = &g->blocks[j];
			if (!block_active(b->state) ||
			    tensor_find(k->live, w->device, b->address) ||
			    tensor_find(w->before, w->device, b->address))
				continue;
			struct fw_tensor *x = tensor_add(&w->before, w->device, b->address);
			x->size = b->requested;
			x->stream = g->stream;
			x->stack_id = b->stack_id;
			x->pending = b->state == GMT_FWBLOCK_ACTIVE_PENDING_FREE;
			x->before = true;
			if (!x->pending)
				w->before_allocated += x->size;
		}
	}
	w->start_reserved = (uint64_t)((int64_t)end_reserved - w->net_reserved);
	if ((int64_t)end_reserved < w->net_reserved)
		w->start_reserved = 0;
}

/* A tensor freed in a rebuilt window that it never saw allocated: it was
 * live when the window opened. */
static void discovered(struct fw_window *w, const struct gmt_fw_entry *e)
{
	if (tensor_find(w->before, w->device, e->addr))
		return;
	struct fw_tensor *x = tensor_add(&w->before, w->device, e->addr);
	x->size = e->size;
	x->stream = e->stream;
	x->stack_id = e->stack_id;
	x->pending = e->action == GMT_FW_FREE_COMPLETED;
	x->before = true;
	if (!x->pending)
		w->before_allocated += x->size;
}

/* Pass 1: follows what each window allocates, to rebuild its start. */
static void track_entry(struct fw_track *k, struct fw_window *w, const struct gmt_fw_entry *e)
{
	struct fw_tensor *x;
	switch (e->action) {
	case GMT_FW_ALLOC:
		if (!tensor_find(k->live, k->device, e->addr))
			tensor_add(&k->live, k->device, e->addr);
		break;
	case GMT_FW_FREE_REQUESTED:
	case GMT_FW_FREE_COMPLETED:
		x = tensor_find(k->live, k->device, e->addr);
		if (x && e->action == GMT_FW_FREE_COMPLETED) {
			HASH_DEL(k->live, x);
			free(x);
		} else if (!x && w->rebuilt) {
			discovered(w, e);
		}
		break;
	case GMT_FW_SEGMENT_ALLOC:
	case GMT_FW_SEGMENT_MAP:
		w->net_reserved += (int64_t)e->size;
		break;
	case GMT_FW_SEGMENT_FREE:
	case GMT_FW_SEGMENT_UNMAP:
		w->net_reserved -= (int64_t)e->size;
		break;
	}
}

/* The window this record's entries belong to, or NULL (out of order). */
static struct fw_window *window_for(struct fwhist *h, struct fw_track *k,
				    const struct gmt_record *rec)
{
	uint64_t seq = rec->u.fwtrace.seq;
	if (k->window != SIZE_MAX && seq < k->seq)
		return NULL;
	if (k->window != SIZE_MAX && seq == k->seq)
		return &h->windows[k->window];
	bool chained = k->window != SIZE_MAX && !(rec->u.fwtrace.flags & GMT_FWTRACE_GAP);
	finish_window(h, k);
	if (!chained)
		free_tensors(&k->live);
	GROW(h->windows, h->nwindows, h->windows_cap);
	struct fw_window *w = &h->windows[h->nwindows];
	memset(w, 0, sizeof(*w));
	w->seq = seq;
	w->device = k->device;
	w->rebuilt = !chained;
	k->window = h->nwindows++;
	k->seq = seq;
	return w;
}

static void on_fwtrace(struct fwhist *h, const struct gmt_record *rec)
{
	struct fw_track *k = track_get(h, rec->u.fwtrace.device);
	struct fw_window *w = window_for(h, k, rec);
	if (!w) {
		h->out_of_order += rec->u.fwtrace.count;
		return;
	}
	struct fw_snapshot *s = snap_get(h, rec->u.fwtrace.seq);
	s->entries += rec->u.fwtrace.count;
	s->gap |= (rec->u.fwtrace.flags & GMT_FWTRACE_GAP) != 0;
	h->entries += rec->u.fwtrace.count;
	for (size_t i = 0; i < rec->u.fwtrace.count; i++)
		track_entry(k, w, &rec->u.fwtrace.v[i]);
}

void fwhist_on_record(struct trace *t, const struct gmt_record *rec)
{
	struct fwhist *h = fw_of(t);
	if (rec->type == GMT_REC_FWSNAP)
		on_fwsnap(h, rec);
	else if (rec->type == GMT_REC_FWSEG)
		on_fwseg(h, rec);
	else if (rec->type == GMT_REC_FWTRACE)
		on_fwtrace(h, rec);
}

static int seg_cmp(const void *a, const void *b)
{
	const struct fw_segment *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->address < y->address ? -1 : x->address > y->address;
}

void fwhist_finish(struct trace *t)
{
	struct fwhist *h = t->fw;
	if (!h)
		return;
	for (struct fw_track *k = h->track; k; k = k->next)
		finish_window(h, k);
	while (h->track) {
		struct fw_track *k = h->track;
		h->track = k->next;
		free_tensors(&k->live);
		free(k);
	}
	for (size_t i = 0; i < h->nsnaps; i++)
		if (h->snaps[i].nsegs > 1)
			qsort(h->snaps[i].segs, h->snaps[i].nsegs, sizeof(struct fw_segment),
			      seg_cmp);
}

void fwhist_free(struct fwhist *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->nsnaps; i++) {
		struct fw_snapshot *s = &h->snaps[i];
		free(s->source);
		for (size_t j = 0; j < s->nsettings; j++) {
			free(s->settings[j].key);
			free(s->settings[j].value);
		}
		free(s->settings);
		free_segments(s);
	}
	free(h->snaps);
	for (size_t i = 0; i < h->nwindows; i++)
		free_tensors(&h->windows[i].before);
	free(h->windows);
	while (h->track) {
		struct fw_track *k = h->track;
		h->track = k->next;
		free_tensors(&k->live);
		free(k);
	}
	free(h);
}

/* ---- queries ---- */

bool fwhist_present(const struct trace *t)
{
	return t->fw && t->fw->nsnaps;
}

const struct fw_snapshot *fwhist_snapshot(const struct trace *t, uint64_t seq)
{
	return find_snap(t->fw, seq);
}

const struct fw_snapshot *fwhist_last(const struct trace *t, int64_t device)
{
	const struct fwhist *h = t->fw;
	for (size_t i = h ? h->nsnaps : 0; i-- > 0;) {
		const struct fw_snapshot *s = &h->snaps[i];
		for (size_t j = 0; j < s->nsegs; j++)
			if (device < 0 || s->segs[j].device == device)
				return s;
	}
	return NULL;
}

uint64_t fwhist_time_ns(const struct fw_snapshot *s, uint64_t time_us)
{
	if (!s || !s->wall_ns || !s->time_ns || !time_us || time_us > UINT64_MAX / 1000)
		return 0;
	/* time_ns - (wall_ns - time_us * 1000), kept from wrapping below 0 */
	uint64_t wall = time_us * 1000;
	if (wall >= s->wall_ns)
		return s->time_ns + (wall - s->wall_ns);
	uint64_t back = s->wall_ns - wall;
	return back < s->time_ns ? s->time_ns - back : 0;
}

const char *fwhist_setting(const struct fw_snapshot *s, const char *key)
{
	for (size_t i = 0; s && i < s->nsettings; i++)
		if (!strcmp(s->settings[i].key, key))
			return s->settings[i].value;
	return NULL;
}

void fwhist_figures(const struct fw_snapshot *s, int64_t device, struct fw_state_figures *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; s && i < s->nsegs; i++) {
		const struct fw_segment *g = &s->segs[i];
		if (device >= 0 && g->device != device)
			continue;
		out->reserved += g->size;
		out->segments++;
		for (size_t j = 0; j < g->nblocks; j++) {
			const struct fw_block *b = &g->blocks[j];
			if (b->state == GMT_FWBLOCK_ACTIVE_ALLOCATED) {
				out->allocated += b->size;
				out->allocated_requested += b->requested;
				out->blocks_allocated++;
			} else if (b->state == GMT_FWBLOCK_ACTIVE_PENDING_FREE) {
				out->active_pending += b->size;
			} else if (b->state == GMT_FWBLOCK_INACTIVE) {
				out->inactive += b->size;
				if (g->nblocks > 1)
					out->inactive_split += b->size;
			}
		}
	}
}

static struct fw_stream_fig *stream_fig(struct fw_blocks_fig *o, uint64_t stream)
{
	for (size_t i = 0; i < o->nstreams; i++)
		if (o->streams[i].stream == stream)
			return &o->streams[i];
	o->streams_total++;
	if (o->nstreams == FW_STREAMS_MAX)
		return NULL;
	o->streams[o->nstreams] = (struct fw_stream_fig){stream, 0, 0};
	return &o->streams[o->nstreams++];
}

static int stream_cmp(const void *a, const void *b)
{
	const struct fw_stream_fig *x = a, *y = b;
	return x->largest_free != y->largest_free
		   ? (x->largest_free < y->largest_free ? 1 : -1)
		   : (x->stream > y->stream) - (x->stream < y->stream);
}

void fwhist_blocks(const struct fw_snapshot *s, int64_t device, struct fw_blocks_fig *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; s && i < s->nsegs; i++) {
		const struct fw_segment *g = &s->segs[i];
		if (device >= 0 && g->device != device)
			continue;
		out->reserved += g->size;
		out->segments++;
		out->blocks += g->nblocks;
		if (g->flags & GMT_FWSEG_EXPANDABLE)
			out->expandable_bytes += g->size;
		bool live = false;
		uint64_t free = 0;
		for (size_t j = 0; j < g->nblocks; j++)
			live |= g->blocks[j].state != GMT_FWBLOCK_INACTIVE;
		struct fw_stream_fig *sf = stream_fig(out, g->stream);
		for (size_t j = 0; j < g->nblocks; j++) {
			const struct fw_block *b = &g->blocks[j];
			if (b->state == GMT_FWBLOCK_ACTIVE_ALLOCATED) {
				out->allocated += b->size;
				out->requested += b->requested;
			} else if (b->state == GMT_FWBLOCK_ACTIVE_PENDING_FREE) {
				out->pending += b->size;
			} else if (b->state == GMT_FWBLOCK_INACTIVE) {
				free += b->size;
				uint64_t *big = g->flags & GMT_FWSEG_SMALL
						    ? &out->largest_free_small
						    : &out->largest_free_large;
				*big = b->size > *big ? b->size : *big;
				out->largest_free =
				    b->size > out->largest_free ? b->size : out->largest_free;
				if (sf && b->size > sf->largest_free)
					sf->largest_free = b->size;
			}
		}
		out->inactive += free;
		if (sf)
			sf->free += free;
		if (live) /* a segment that holds a block: its free blocks stay */
			out->inactive_split += free;
		if (!live && free) {
			out->empty_segments++;
			out->empty_bytes += free;
		}
	}
	if (out->nstreams > 1)
		qsort(out->streams, out->nstreams, sizeof(*out->streams), stream_cmp);
}

const struct fw_snapshot *fwhist_first(const struct trace *t, int reason, int64_t device)
{
	const struct fwhist *h = t->fw;
	for (size_t i = 0; h && i < h->nsnaps; i++) {
		const struct fw_snapshot *s = &h->snaps[i];
		if (s->reason != reason)
			continue;
		for (size_t j = 0; j < s->nsegs; j++)
			if (device < 0 || s->segs[j].device == device)
				return s;
	}
	return NULL;
}

/* ---- the replay ---- */

const struct fw_dev *fw_state_dev(const struct fw_state *st, int64_t device)
{
	for (size_t i = 0; i < st->ndevs; i++)
		if (st->devs[i].device == device)
			return &st->devs[i];
	return NULL;
}

static struct fw_dev *state_dev(struct fw_state *st, int64_t device)
{
	for (size_t i = 0; i < st->ndevs; i++)
		if (st->devs[i].device == device)
			return &st->devs[i];
	GROW(st->devs, st->ndevs, st->devs_cap);
	struct fw_dev *d = &st->devs[st->ndevs++];
	memset(d, 0, sizeof(*d));
	d->device = device;
	return d;
}

/* A rebuilt window opens: the device's tensors and bytes are what it
 * rebuilt. */
static void open_window(struct fw_state *st, struct fw_dev *d, const struct fw_window *w)
{
	struct fw_tensor *x, *tmp;
	HASH_ITER(hh, st->tensors, x, tmp)
	{
		if (x->key.device != w->device)
			continue;
		HASH_DEL(st->tensors, x);
		free(x);
	}
	d->allocated = w->before_allocated;
	d->active = d->tensors = 0;
	for (x = w->before; x; x = x->hh.next) {
		struct fw_tensor *c = tensor_add(&st->tensors, x->key.device, x->key.addr);
		c->size = x->size;
		c->stream = x->stream;
		c->stack_id = x->stack_id;
		c->pending = x->pending;
		c->before = true;
		d->active += x->size;
		d->tensors++;
	}
	d->reserved = w->start_reserved;
}

static void peaks(struct fw_dev *d, uint64_t time_ns)
{
	if (d->allocated > d->peak_allocated) {
		d->peak_allocated = d->allocated;
		d->peak_allocated_ns = time_ns;
	}
	if (d->reserved > d->peak_reserved) {
		d->peak_reserved = d->reserved;
		d->peak_reserved_ns = time_ns;
	}
}

static void apply_entry(struct fwhist *h, struct fw_state *st, struct fw_dev *d,
			const struct gmt_fw_entry *e, uint64_t time_ns)
{
	struct fw_tensor *x = tensor_find(st->tensors, d->device, e->addr);
	switch (e->action) {
	case GMT_FW_ALLOC:
		if (x) { /* never freed: as if it had been */
			h->inconsistent++;
			d->active -= x->size;
			if (!x->pending)
				d->allocated -= x->size;
		} else {
			x = tensor_add(&st->tensors, d->device, e->addr);
			d->tensors++;
		}
		x->size = e->size;
		x->stream = e->stream;
		x->stack_id = e->stack_id;
		x->time_ns = time_ns;
		x->pending = x->before = false;
		d->allocated += e->size;
		d->active += e->size;
		break;
	case GMT_FW_FREE_REQUESTED:
		if (!x || x->pending) {
			h->inconsistent += !x;
			break;
		}
		x->pending = true;
		d->allocated -= x->size;
		break;
	case GMT_FW_FREE_COMPLETED:
		if (!x) {
			h->inconsistent++;
			break;
		}
		if (!x->pending)
			d->allocated -= x->size;
		d->active -= x->size;
		d->tensors--;
		HASH_DEL(st->tensors, x);
		free(x);
		break;
	case GMT_FW_SEGMENT_ALLOC:
	case GMT_FW_SEGMENT_MAP:
		d->reserved += e->size;
		break;
	case GMT_FW_SEGMENT_FREE:
	case GMT_FW_SEGMENT_UNMAP:
		if (d->reserved < e->size) {
			h->inconsistent++;
			d->reserved = 0;
		} else {
			d->reserved -= e->size;
		}
		break;
	}
	peaks(d, time_ns);
}

/* The window of (seq, device): pass 1 made one per pair. */
static const struct fw_window *window_of(const struct fwhist *h, uint64_t seq, int64_t device)
{
	for (size_t i = 0; i < h->nwindows; i++)
		if (h->windows[i].seq == seq && h->windows[i].device == device)
			return &h->windows[i];
	return NULL;
}

struct replay_pass {
	struct fw_state st;
	uint64_t index;
	struct cur { /* per device: the window being read */
		int64_t device;
		const struct fw_window *w;
	} cur[16];
	size_t ncur;
};

static const struct fw_window **cur_window(struct replay_pass *p, int64_t device)
{
	for (size_t i = 0; i < p->ncur; i++)
		if (p->cur[i].device == device)
			return &p->cur[i].w;
	if (p->ncur == sizeof p->cur / sizeof *p->cur)
		p->ncur--; /* more devices than a node has: the last slot is reused */
	p->cur[p->ncur].device = device;
	p->cur[p->ncur].w = NULL;
	return &p->cur[p->ncur++].w;
}

static void replay_record(struct trace *t, struct replay_pass *p, const struct gmt_record *rec,
			  const struct fw_replay_cbs *cb)
{
	struct fwhist *h = t->fw;
	int64_t device = rec->u.fwtrace.device;
	uint64_t seq = rec->u.fwtrace.seq;
	const struct fw_window **cw = cur_window(p, device);
	if (*cw && seq < (*cw)->seq)
		return; /* out of order: pass 1 skipped it too */
	bool opens = false;
	if (!*cw || (*cw)->seq != seq) {
		const struct fw_window *w = window_of(h, seq, device);
		if (!w)
			return;
		*cw = w;
		struct fw_dev *d = state_dev(&p->st, device);
		if (w->rebuilt) {
			open_window(&p->st, d, w);
			opens = true;
			/* what was live then counts towards the peaks, at the
			 * window's first stamp */
			uint64_t at =
			    rec->u.fwtrace.count
				? fwhist_time_ns(find_snap(h, seq), rec->u.fwtrace.v[0].time_us)
				: 0;
			peaks(d, at);
		}
	}
	const struct fw_snapshot *s = find_snap(h, seq);
	struct fw_dev *d = state_dev(&p->st, device);
	for (size_t i = 0; i < rec->u.fwtrace.count; i++) {
		const struct gmt_fw_entry *e = &rec->u.fwtrace.v[i];
		uint64_t time_ns = fwhist_time_ns(s, e->time_us);
		struct fw_event ev = {seq, device, p->index, time_ns, e, opens && i == 0};
		if (cb->before)
			cb->before(cb->ctx, &ev, &p->st);
		apply_entry(h, &p->st, d, e, time_ns);
		p->index++;
		if (cb->after)
			cb->after(cb->ctx, &ev, &p->st);
	}
}

int fwhist_replay(struct trace *t, fw_entry_fn fn, void *ctx)
{
	struct fw_replay_cbs cb = {.after = fn, .ctx = ctx};
	return fwhist_replay_cb(t, &cb);
}

int fwhist_replay_cb(struct trace *t, const struct fw_replay_cbs *cb)
{
	if (!t->fw)
		return -1;
	t->fw->inconsistent = 0;
	struct replay_pass p;
	memset(&p, 0, sizeof p);
	gmt_reader_rewind(t->reader);
	struct gmt_record rec;
	for (;;) {
		const struct gmt_event *evs;
		if (gmt_reader_next_events(t->reader, &evs))
			continue; /* the driver's events: trace_replay's */
		if (!gmt_reader_next(t->reader, &rec))
			break;
		if (rec.type == GMT_REC_FWTRACE)
			replay_record(t, &p, &rec, cb);
	}
	if (cb->end)
		cb->end(cb->ctx, &p.st);
	free_tensors(&p.st.tensors);
	free(p.st.devs);
	const struct gmt_read_info *in = gmt_reader_info(t->reader);
	if (in->stop == GMT_STOP_IO && t->info.stop != GMT_STOP_IO) {
		t->info = *in;
		return reader_finish_cmd(t->cmd, t->path, in);
	}
	return -1;
}
