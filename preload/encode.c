/* Records into the pending chunk (preload/writer.h): the rings' records,
 * events in batches (by row or by column), stack nodes, modules, devices,
 * notes, lost counts and the trailer. The file itself: writer.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/codec.h"
#include "common/fwhist.h"
#include "common/log.h"
#include "gpumemtrace/format.h"
#include "preload/clock.h"
#include "preload/mem.h"
#include "preload/modules.h"
#include "preload/tracer.h"
#include "preload/writer.h"

#define BATCH_TARGET (64u << 10) /* close an EVENTS record at this size */
#define COLUMN_BYTES (BATCH_TARGET + 16 * GMT_VARINT_MAX)
#define STACK_BATCH  4096 /* nodes per STACK record */

/* How long a device whose facts are incomplete waits for the rest. */
#define DEVICE_INFO_WAIT_NS (5ull * 1000000000u)

int gmt_writer_open(struct gmt_writer *w, const char *path_template, int stack_depth, int compress,
		    uint64_t start_mono)
{
	if (gmt_writer_create(w, path_template, stack_depth, start_mono) != 0)
		return -1;
	w->ev_tid = -1;
	gmt_writer_process(w);
	gmt_modules_scan();
	gmt_writer_modules(w);
	gmt_writer_flush(w); /* on the hook path: uncompressed */
	w->zstate = compress ? GMT_ZS_WANTED : GMT_ZS_OFF;
	return w->failed ? -1 : 0;
}

void gmt_writer_abandon(struct gmt_writer *w)
{
	gmt_stacks_reset(&w->stacks);
	gmt_writer_file_abandon(w);
	gmt_mem_free(w->ev, w->ev_cap);
	for (int i = 0; i < GMT_EV_COLUMNS; i++)
		gmt_mem_free(w->col[i], COLUMN_BYTES);
	memset(w, 0, sizeof *w);
	w->fd = -1;
}

/* ---- records --------------------------------------------------------- */

void gmt_writer_modules(struct gmt_writer *w)
{
	for (; w->modules_emitted < gmt_modules_count(); w->modules_emitted++) {
		const struct gmt_module *m = gmt_modules_at(w->modules_emitted);
		size_t plen = strlen(m->path);
		uint8_t *p = gmt_writer_room(w, plen + m->build_id_len + 8 * GMT_VARINT_MAX);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_MODULE);
		p = gmt_put_varint(p, m->id);
		p = gmt_put_varint(p, m->load_bias);
		p = gmt_put_varint(p, m->start);
		p = gmt_put_varint(p, m->end);
		p = gmt_writer_put_str(p, m->path, plen);
		p = gmt_writer_put_str(p, m->build_id, m->build_id_len);
		gmt_writer_commit(w, p);
	}
}

void gmt_writer_devices(struct gmt_writer *w)
{
	if (w->devices_done)
		return;
	struct gmt_device_facts *f = &w->devices;
	gmt_device_facts_query(f, w->devices_written);
	if (!f->n)
		return; /* the program has not initialized CUDA yet: ask again later */
	uint64_t now = gmt_now_ns();
	if (!w->devices_first_ns)
		w->devices_first_ns = now;
	int give_up = w->devices_settle || now - w->devices_first_ns >= DEVICE_INFO_WAIT_NS;
	int pending = 0;
	for (int i = 0; i < f->n; i++) {
		const struct gmt_device_info *d = &f->d[i];
		if (w->devices_written[i] || !f->seen[i])
			continue;
		/* A complete device is written at once; an incomplete one waits
		 * for later flushes, then goes as it is with a NOTE. */
		int complete = gmt_device_info_complete(d);
		if (!complete && !give_up) {
			pending = 1;
			continue;
		}
		if (!complete) {
			char text[240];
			gmt_format(text, sizeof text,
				   "device %d: %s; its DEVICE record lacks what that query gives",
				   i, f->why[i][0] ? f->why[i] : "a query failed");
			gmt_note(1, text);
		}
		size_t nl = strnlen(d->name, sizeof d->name);
		uint8_t *p = gmt_writer_room(w, nl + 16 + 8 * GMT_VARINT_MAX);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_DEVICE);
		p = gmt_put_varint(p, gmt_zigzag(i));
		p = gmt_writer_put_str(p, d->name, nl);
		p = gmt_writer_put_str(p, d->uuid, sizeof d->uuid);
		p = gmt_put_varint(p, d->total_bytes);
		p = gmt_put_varint(p, (uint64_t)d->cc_major);
		p = gmt_put_varint(p, (uint64_t)d->cc_minor);
		p = gmt_put_varint(p, (uint64_t)d->driver_version);
		gmt_writer_commit(w, p);
		w->devices_written[i] = 1;
	}
	if (!pending || give_up)
		w->devices_done = 1;
}

/* Stack nodes must be in the file before the events that name them. */
static void put_new_nodes(struct gmt_writer *w)
{
	while (w->stacks.emitted < w->stacks.n) {
		uint32_t first = w->stacks.emitted + 1;
		uint32_t count = w->stacks.n - w->stacks.emitted;
		if (count > STACK_BATCH)
			count = STACK_BATCH;
		uint8_t *p =
		    gmt_writer_room(w, (size_t)count * 2 * GMT_VARINT_MAX + 2 * GMT_VARINT_MAX);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_STACK);
		p = gmt_put_varint(p, count);
		for (uint32_t id = first; id < first + count; id++) {
			p = gmt_put_varint(p, w->stacks.parent[id]);
			p = gmt_put_varint(p, w->stacks.ip[id]);
		}
		gmt_writer_commit(w, p);
		w->stacks.emitted += count;
	}
}

void gmt_writer_end_batch(struct gmt_writer *w)
{
	put_new_nodes(w);
	if (!w->ev_count)
		return;
	int cols = w->ev_cols;
	uint8_t *p = gmt_writer_room(w, w->ev_len + (4 + GMT_EV_COLUMNS) * GMT_VARINT_MAX);
	if (!p) { /* out of memory: counted as lost, never silent */
		w->lost += w->ev_count;
		w->events -= w->ev_count;
	}
	if (p) {
		p = gmt_put_varint(p, cols ? GMT_TAG_EVENTCOLS : GMT_TAG_EVENTS);
		p = gmt_put_varint(p, (uint64_t)w->ev_tid);
		p = gmt_put_varint(p, w->ev_base);
		p = gmt_put_varint(p, w->ev_count);
		if (cols) {
			for (int i = 0; i < GMT_EV_COLUMNS; i++)
				p = gmt_put_varint(p, w->ev_col[i]);
			for (int i = 0; i < GMT_EV_COLUMNS; i++) {
				memcpy(p, w->col[i], w->ev_col[i]);
				p += w->ev_col[i];
			}
		} else {
			memcpy(p, w->ev, w->ev_len);
			p += w->ev_len;
		}
		gmt_writer_commit(w, p);
	}
	w->ev_len = 0;
	memset(w->ev_col, 0, sizeof w->ev_col);
	w->ev_count = 0;
	w->ev_tid = -1;
}

/* Columns for EVENTCOLS batches, made on the first one; 0 on failure (the
 * batch is then written as rows). A batch ends once it reaches
 * BATCH_TARGET, so no column outgrows that plus one event. */
static int have_columns(struct gmt_writer *w)
{
	for (int i = 0; i < GMT_EV_COLUMNS; i++)
		if (!w->col[i] && !(w->col[i] = gmt_mem_alloc(COLUMN_BYTES)))
			return 0;
	return 1;
}

/* The event buffers, made with the file, before the flush thread starts
 * (setup.c): a process that exhausts its memory later (a tight
 * RLIMIT_AS) still has them for the records its rings hold at exit. Never
 * malloc's (preload/mem.h): a short program's exit can come before the
 * flush thread has run at all, from a signal handler inside malloc
 * (t-life-exit-malloc). Failing here is harmless: they are asked for
 * again when needed. */
void gmt_writer_reserve(struct gmt_writer *w)
{
	have_columns(w);
	if (!w->ev_cap && (w->ev = gmt_mem_alloc(BATCH_TARGET + 1024)))
		w->ev_cap = BATCH_TARGET + 1024;
}

/* One event, appended to the open batch (layout in format.h). By row
 * (EVENTS), each event's fields together:
 *
 *   head  v (api << 4) | dev_changed << 3 | has_aux2 << 2 | has_aux << 1 | failed
 *   dt    v time - previous time
 *   dptr  z ptr - previous ptr
 *   size  v
 *   dstk  z stack - previous stack
 *   [result v] [device z] [aux v] [aux2 v]
 *
 * By column (EVENTCOLS, when chunks are compressed), the same fields of
 * every event together, in six columns: heads | dts | ptrs, each whole, 8
 * bytes LE (a free repeats its allocation's bytes, which zstd matches) |
 * sizes | dstks | the optional fields. zstd finds like bytes together.
 */
static void put_event(struct gmt_writer *w, int tid, const struct gmt_raw_event *e, uint64_t time,
		      uint32_t stack)
{
	if (w->ev_count &&
	    (w->ev_tid != tid || w->ev_len >= BATCH_TARGET || time < w->ev_prev_time))
		gmt_writer_end_batch(w);
	if (!w->ev_count) {
		w->ev_tid = tid;
		w->ev_base = w->ev_prev_time = time;
		w->ev_prev_ptr = 0;
		w->ev_prev_stack = 0;
		w->ev_prev_dev = 0;
		w->ev_cols = w->zstate == GMT_ZS_ON && have_columns(w);
	}
	if (!w->ev_cols && w->ev_len + 10 * GMT_VARINT_MAX > w->ev_cap) {
		size_t cap = w->ev_cap ? w->ev_cap * 2 : BATCH_TARGET + 1024;
		uint8_t *b = gmt_mem_grow(w->ev, w->ev_cap, cap);
		if (!b) {
			w->lost++; /* out of memory: counted, never silent */
			return;
		}
		w->ev = b;
		w->ev_cap = cap;
	}
	unsigned head =
	    (unsigned)e->api << GMT_EV_API_SHIFT | (e->flags & (GMT_EV_HAS_AUX | GMT_EV_HAS_AUX2));
	if (e->result)
		head |= GMT_EV_FAILED;
	if (e->device != w->ev_prev_dev)
		head |= GMT_EV_DEV_CHANGED;
	uint64_t dt = time - w->ev_prev_time;
	uint64_t dstk = gmt_zigzag((int64_t)stack - (int64_t)w->ev_prev_stack);
	uint8_t *p;
	if (w->ev_cols) {
		uint32_t *n = w->ev_col;
		n[0] = (uint32_t)(gmt_put_varint(w->col[0] + n[0], head) - w->col[0]);
		n[1] = (uint32_t)(gmt_put_varint(w->col[1] + n[1], dt) - w->col[1]);
		gmt_put_le64(w->col[2] + n[2], e->ptr);
		n[2] += 8;
		n[3] = (uint32_t)(gmt_put_varint(w->col[3] + n[3], e->size) - w->col[3]);
		n[4] = (uint32_t)(gmt_put_varint(w->col[4] + n[4], dstk) - w->col[4]);
		p = w->col[5] + n[5];
	} else {
		p = w->ev + w->ev_len;
		p = gmt_put_varint(p, head);
		p = gmt_put_varint(p, dt);
		p = gmt_put_varint(p, gmt_zigzag((int64_t)(e->ptr - w->ev_prev_ptr)));
		p = gmt_put_varint(p, e->size);
		p = gmt_put_varint(p, dstk);
	}
	if (head & GMT_EV_FAILED)
		p = gmt_put_varint(p, e->result);
	if (head & GMT_EV_DEV_CHANGED)
		p = gmt_put_varint(p, gmt_zigzag(e->device));
	if (head & GMT_EV_HAS_AUX)
		p = gmt_put_varint(p, e->aux);
	if (head & GMT_EV_HAS_AUX2)
		p = gmt_put_varint(p, e->aux2);
	if (w->ev_cols) {
		uint32_t *n = w->ev_col;
		n[5] = (uint32_t)(p - w->col[5]);
		w->ev_len = (size_t)n[0] + n[1] + n[2] + n[3] + n[4] + n[5];
	} else {
		w->ev_len = (size_t)(p - w->ev);
	}
	w->ev_count++;
	w->ev_prev_time = time;
	w->ev_prev_ptr = e->ptr;
	w->ev_prev_stack = stack;
	w->ev_prev_dev = e->device;
	w->events++;
}

static void put_thread(struct gmt_writer *w, int tid, const char *name, size_t len)
{
	gmt_writer_end_batch(w);
	uint8_t *p = gmt_writer_room(w, len + 3 * GMT_VARINT_MAX);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_THREAD);
	p = gmt_put_varint(p, (uint64_t)tid);
	p = gmt_writer_put_str(p, name, len);
	gmt_writer_commit(w, p);
}

/* ---- a framework's allocator history (preload/fwhist.c fills the rings) ---- */

enum { FW_ENTRIES_MAX = 16384 / sizeof(struct gmt_raw_fwentry) };

static void put_fwsnap(struct gmt_writer *w, int tid, const uint8_t *body)
{
	uint32_t n;
	memcpy(&n, body, sizeof n);
	uint8_t *p = gmt_writer_room(w, 2 * GMT_VARINT_MAX + n);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_FWSNAP);
	p = gmt_put_varint(p, (uint64_t)tid);
	memcpy(p, body + sizeof n, n);
	gmt_writer_commit(w, p + n);
}

/* The stacks first (their nodes precede the record), then the record. */
static void put_fwtrace(struct gmt_writer *w, const struct gmt_raw_fwtrace *r)
{
	uint32_t stack[FW_ENTRIES_MAX];
	uint32_t n = r->count < FW_ENTRIES_MAX ? r->count : FW_ENTRIES_MAX;
	const struct gmt_raw_fwentry *e = (const void *)(r + 1);
	const uint64_t *ips = (const void *)(e + r->count);
	for (uint32_t i = 0; i < n; ips += e[i].nframes, i++)
		stack[i] = e[i].nframes ? gmt_stacks_intern(&w->stacks, ips, e[i].nframes) : 0;
	gmt_writer_end_batch(w);
	uint8_t *p = gmt_writer_room(w, GMT_FW_TRACE_HEAD_MAX + (size_t)n * GMT_FW_ENTRY_MAX);
	if (!p)
		return;
	struct gmt_fw_enc st;
	p = gmt_fw_put_trace_head(p, &st, r->seq, r->device, r->flags, r->base_time_us, n);
	for (uint32_t i = 0; i < n; i++)
		p = gmt_fw_put_entry(p, &st, e[i].action, e[i].addr, e[i].size, e[i].stream,
				     e[i].time_us, stack[i]);
	gmt_writer_commit(w, p);
}

static void put_fwseg(struct gmt_writer *w, const struct gmt_raw_fwseg *r)
{
	uint32_t stack[FW_ENTRIES_MAX];
	uint32_t n = r->count < FW_ENTRIES_MAX ? r->count : FW_ENTRIES_MAX;
	const uint64_t *ips = (const void *)(r + 1);
	uint32_t seg_stack = r->nframes ? gmt_stacks_intern(&w->stacks, ips, r->nframes) : 0;
	const struct gmt_raw_fwblock *b = (const void *)(ips + r->nframes);
	ips = (const void *)(b + r->count);
	for (uint32_t i = 0; i < n; ips += b[i].nframes, i++)
		stack[i] = b[i].nframes ? gmt_stacks_intern(&w->stacks, ips, b[i].nframes) : 0;
	gmt_writer_end_batch(w);
	uint8_t *p = gmt_writer_room(w, GMT_FW_SEG_HEAD_MAX + (size_t)n * GMT_FW_BLOCK_MAX);
	if (!p)
		return;
	struct gmt_fw_enc st;
	p = gmt_fw_put_seg_head(p, &st, r->seq, r->device, r->address, r->total_size, r->stream,
				r->flags, r->pool_a, r->pool_b, seg_stack, n);
	for (uint32_t i = 0; i < n; i++)
		p = gmt_fw_put_block(p, &st, b[i].address, b[i].size, b[i].requested, b[i].state,
				     stack[i]);
	gmt_writer_commit(w, p);
}

void gmt_writer_ring_record(struct gmt_writer *w, struct gmt_ring *r, const struct gmt_ring_hdr *h)
{
	const uint8_t *body = (const uint8_t *)(h + 1);
	if (h->type == GMT_RING_EVENT) {
		const struct gmt_raw_event *e = (const void *)body;
		uint32_t stack =
		    h->nframes
			? gmt_stacks_intern(&w->stacks, (const uint64_t *)(e + 1), h->nframes)
			: 0;
		/* A thread's stamps never go back: a free's, taken without a
		 * fence, may read a few ns before the stamp above it (clock.h). */
		uint64_t time = e->time_ns > r->last_time ? e->time_ns : r->last_time;
		r->last_time = time;
		put_event(w, r->tid, e, time, stack);
	} else if (h->type == GMT_RING_MEMINFO) {
		const struct gmt_raw_meminfo *m = (const void *)body;
		gmt_writer_end_batch(w); /* after the failed event it describes */
		uint8_t *p = gmt_writer_room(w, 7 * GMT_VARINT_MAX);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_MEMINFO);
		p = gmt_put_varint(p, (uint64_t)r->tid);
		p = gmt_put_varint(p, m->time_ns);
		p = gmt_put_varint(p, gmt_zigzag(m->device));
		p = gmt_put_varint(p, m->free_bytes);
		p = gmt_put_varint(p, m->total_bytes);
		p = gmt_put_varint(p, m->api);
		gmt_writer_commit(w, p);
	} else if (h->type == GMT_RING_SAMPLE) {
		const struct gmt_raw_sample *sm = (const void *)body;
		gmt_writer_end_batch(w); /* after the events the thread recorded before it */
		uint8_t *p = gmt_writer_room(w, 8 * GMT_VARINT_MAX + 1 + sizeof sm->uuid);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_SAMPLE);
		p = gmt_put_varint(p, sm->time_ns);
		p = gmt_put_varint(p, sm->nvml_index);
		p = gmt_put_varint(p, sizeof sm->uuid);
		memcpy(p, sm->uuid, sizeof sm->uuid);
		p += sizeof sm->uuid;
		p = gmt_put_varint(p, sm->used_bytes);
		p = gmt_put_varint(p, sm->total_bytes);
		p = gmt_put_varint(p, sm->flags);
		p = gmt_put_varint(p, sm->process_used_bytes);
		p = gmt_put_varint(p, sm->reason);
		gmt_writer_commit(w, p);
	} else if (h->type == GMT_RING_RANGE) {
		const struct gmt_raw_range *rr = (const void *)body;
		size_t n = h->nframes;
		uint8_t *p = gmt_writer_room(w, 7 * GMT_VARINT_MAX + n);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_RANGE);
		p = gmt_put_varint(p, (uint64_t)r->tid);
		p = gmt_put_varint(p, rr->time_ns);
		p = gmt_put_varint(p, rr->op);
		p = gmt_put_varint(p, rr->id);
		p = gmt_put_varint(p, rr->source);
		p = gmt_put_varint(p, n);
		memcpy(p, rr + 1, n);
		gmt_writer_commit(w, p + n);
	} else if (h->type == GMT_RING_PYFRAME) {
		const struct gmt_raw_pyframe *pf = (const void *)body;
		const uint8_t *fn = (const uint8_t *)(pf + 1), *fl = fn + pf->function_len;
		uint8_t *p =
		    gmt_writer_room(w, 5 * GMT_VARINT_MAX + pf->function_len + pf->file_len);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_PYFRAME);
		p = gmt_put_varint(p, pf->id);
		p = gmt_put_varint(p, pf->function_len);
		memcpy(p, fn, pf->function_len);
		p += pf->function_len;
		p = gmt_put_varint(p, pf->file_len);
		memcpy(p, fl, pf->file_len);
		p += pf->file_len;
		p = gmt_put_varint(p, pf->line);
		gmt_writer_commit(w, p);
	} else if (h->type == GMT_RING_COUNTERS) {
		size_t n = h->nframes; /* the body, encoded by gmt_record_counters */
		uint8_t *p = gmt_writer_room(w, 2 * GMT_VARINT_MAX + n);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_COUNTERS);
		p = gmt_put_varint(p, (uint64_t)r->tid);
		memcpy(p, body, n);
		gmt_writer_commit(w, p + n);
	} else if (h->type == GMT_RING_FWOOM) {
		size_t n = h->nframes; /* the body, encoded by gmt_record_fwoom */
		uint8_t *p = gmt_writer_room(w, 2 * GMT_VARINT_MAX + n);
		if (!p)
			return;
		p = gmt_put_varint(p, GMT_TAG_FWOOM);
		p = gmt_put_varint(p, (uint64_t)r->tid);
		memcpy(p, body, n);
		gmt_writer_commit(w, p + n);
	} else if (h->type == GMT_RING_THREAD) {
		put_thread(w, r->tid, (const char *)body, strnlen((const char *)body, h->nframes));
	} else if (h->type == GMT_RING_FWSNAP) {
		gmt_writer_end_batch(w);
		put_fwsnap(w, r->tid, body);
	} else if (h->type == GMT_RING_FWTRACE) {
		put_fwtrace(w, (const void *)body);
	} else if (h->type == GMT_RING_FWSEG) {
		put_fwseg(w, (const void *)body);
	}
}

void gmt_writer_lost(struct gmt_writer *w, int tid, uint64_t count, uint64_t time_ns)
{
	gmt_writer_end_batch(w);
	uint8_t *p = gmt_writer_room(w, 4 * GMT_VARINT_MAX);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_LOST);
	p = gmt_put_varint(p, (uint64_t)tid);
	p = gmt_put_varint(p, count);
	p = gmt_put_varint(p, time_ns);
	gmt_writer_commit(w, p);
	w->lost += count;
}

void gmt_writer_note(struct gmt_writer *w, int level, const char *text)
{
	gmt_writer_end_batch(w);
	size_t n = strlen(text);
	uint8_t *p = gmt_writer_room(w, n + 3 * GMT_VARINT_MAX);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_NOTE);
	p = gmt_put_varint(p, (uint64_t)level);
	p = gmt_writer_put_str(p, text, n);
	gmt_writer_commit(w, p);
}

void gmt_writer_exit(struct gmt_writer *w, uint64_t time_ns, unsigned how, int status)
{
	gmt_writer_end_batch(w);
	uint8_t *p = gmt_writer_room(w, 5 * GMT_VARINT_MAX);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_EXIT);
	p = gmt_put_varint(p, time_ns);
	p = gmt_put_varint(p, how);
	p = gmt_put_varint(p, gmt_zigzag(status));
	p = gmt_put_varint(p, 0); /* the signal: the library sees none */
	gmt_writer_commit(w, p);
}

void gmt_writer_trailer(struct gmt_writer *w, unsigned reason, uint64_t end_ns)
{
	gmt_writer_end_batch(w);
	uint8_t *p = gmt_writer_room(w, 6 * GMT_VARINT_MAX);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_TRAILER);
	p = gmt_put_varint(p, end_ns);
	p = gmt_put_varint(p, w->events);
	p = gmt_put_varint(p, w->lost);
	p = gmt_put_varint(p, w->stacks.n);
	p = gmt_put_varint(p, reason);
	gmt_writer_commit(w, p);
}
