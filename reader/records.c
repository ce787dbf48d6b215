/* A chunk's records decoded, one function per tag (see internal.h). */
#include <string.h>

#include "reader/internal.h"

/* ---- scratch --------------------------------------------------------- */

static struct gmt_str arena_str(struct chunk *k, const uint8_t *p, size_t len)
{
	/* prepare sized the arena so a record's strings always fit */
	char *s = k->arena + k->arena_used;
	memcpy(s, p, len);
	s[len] = 0;
	k->arena_used += len + 1;
	return (struct gmt_str){s, len};
}

static struct gmt_str get_str(struct chunk *k, struct gmt_cursor *c)
{
	size_t len;
	const uint8_t *p = gmt_get_bytes(c, &len);
	if (c->bad)
		return (struct gmt_str){"", 0};
	return arena_str(k, p, len);
}

static struct gmt_blob get_blob(struct gmt_cursor *c)
{
	size_t len;
	const uint8_t *p = gmt_get_bytes(c, &len);
	return (struct gmt_blob){c->bad ? NULL : p, c->bad ? 0 : len};
}

/* ---- events ---------------------------------------------------------- */

static uint64_t left_bytes(const struct gmt_cursor *c)
{
	return (uint64_t)(c->end - c->p);
}

/* One varint of a column where at least GMT_VARINT_MAX bytes remain: no
 * bounds check per byte (the events are most of a trace's bytes). */
static inline __attribute__((always_inline)) uint64_t col_varint(const uint8_t **pp, int *bad)
{
	const uint8_t *p = *pp;
	uint64_t b = *p++;
	if (b < 0x80) {
		*pp = p;
		return b;
	}
	uint64_t v = b & 0x7f;
	for (unsigned shift = 7; shift < 64; shift += 7) {
		b = *p++;
		v |= (b & 0x7f) << shift;
		if (b < 0x80) {
			*pp = p;
			return v;
		}
	}
	*pp = p;
	*bad = 1; /* more than 10 bytes, as gmt_get_varint says */
	return 0;
}

/* gmt_get_varint, through col_varint where a whole varint fits. */
static inline uint64_t ev_varint(struct gmt_cursor *c)
{
	if (c->end - c->p < GMT_VARINT_MAX)
		return gmt_get_varint(c);
	return col_varint(&c->p, &c->bad);
}

/* The next event of an EVENTCOLS batch: each field from its own column,
 * the pointer whole. */
static int dec_ev_cols(struct dec *d, struct gmt_event *e, uint64_t *head, uint64_t *dt,
		       uint64_t *ptr, uint64_t *size, uint64_t *dstk)
{
	struct gmt_cursor *f = d->col, *o = &d->col[GMT_EV_COLUMNS - 1];
	*head = ev_varint(&f[0]);
	*dt = ev_varint(&f[1]);
	if (f[2].end - f[2].p >= 8) {
		*ptr = gmt_get_le64(f[2].p);
		f[2].p += 8;
	} else {
		f[2].bad = 1;
	}
	*size = ev_varint(&f[3]);
	*dstk = ev_varint(&f[4]);
	e->result = e->aux = e->aux2 = 0;
	if (*head & GMT_EV_FAILED)
		e->result = ev_varint(o);
	if (*head & GMT_EV_DEV_CHANGED)
		d->ev_dev = gmt_unzigzag(ev_varint(o));
	if (*head & GMT_EV_HAS_AUX)
		e->aux = ev_varint(o);
	if (*head & GMT_EV_HAS_AUX2)
		e->aux2 = ev_varint(o);
	/* Checked once, at the batch's last event, which must use up every
	 * column exactly: a cursor that ran out stays bad and reads as 0 until
	 * then, and no event reaches a caller before its chunk has validated. */
	if (d->ev_left != 1)
		return 0;
	int bad = 0;
	for (int i = 0; i < GMT_EV_COLUMNS; i++)
		bad |= f[i].bad || f[i].p != f[i].end;
	return bad;
}

/* The next event of the batch into *e. */
static int dec_ev(struct dec *d, struct gmt_event *e)
{
	uint64_t head, dt, dptr = 0, size, dstk, ptr = 0;
	int bad;
	if (d->ev_cols) {
		bad = dec_ev_cols(d, e, &head, &dt, &ptr, &size, &dstk);
	} else {
		struct gmt_cursor *c = &d->c;
		head = ev_varint(c);
		dt = ev_varint(c);
		dptr = ev_varint(c);
		size = ev_varint(c);
		dstk = ev_varint(c);
		e->result = e->aux = e->aux2 = 0;
		if (head & GMT_EV_FAILED)
			e->result = ev_varint(c);
		if (head & GMT_EV_DEV_CHANGED)
			d->ev_dev = gmt_unzigzag(ev_varint(c));
		if (head & GMT_EV_HAS_AUX)
			e->aux = ev_varint(c);
		if (head & GMT_EV_HAS_AUX2)
			e->aux2 = ev_varint(c);
		bad = c->bad;
	}
	if (bad || (head >> GMT_EV_API_SHIFT) > UINT32_MAX)
		return DEC_BAD;
	/* deltas are two's complement differences: wrap-around is exact */
	d->ev_time += dt;
	d->ev_ptr = d->ev_cols ? ptr : d->ev_ptr + (uint64_t)gmt_unzigzag(dptr);
	d->ev_stack += (uint64_t)gmt_unzigzag(dstk);
	e->index = d->event_index++;
	e->time_ns = d->ev_time;
	e->tid = d->ev_tid;
	e->api = (uint32_t)(head >> GMT_EV_API_SHIFT);
	e->flags = (uint32_t)(head & 0xf);
	e->device = d->ev_dev;
	e->ptr = d->ev_ptr;
	e->size = size;
	e->stack_id = d->ev_stack;
	d->ev_left--;
	return DEC_RECORD;
}

enum { COL_HEAD, COL_DT, COL_SIZE, COL_DSTK };

/* Value v of column `kind` into event i (p: the cursor after it). */
static inline __attribute__((always_inline)) void col_put(int kind, struct gmt_event *e, size_t i,
							  uint64_t v, uint64_t *acc,
							  const uint8_t **ends, const uint8_t *p,
							  size_t *bad_api, size_t n)
{
	switch (kind) {
	case COL_HEAD:
		if ((v >> GMT_EV_API_SHIFT) > UINT32_MAX && *bad_api == n)
			*bad_api = i;
		e[i].api = (uint32_t)(v >> GMT_EV_API_SHIFT);
		e[i].flags = (uint32_t)(v & 0xf);
		ends[i] = p;
		break;
	case COL_DT:
		*acc += v;
		e[i].time_ns = *acc;
		break;
	case COL_SIZE:
		e[i].size = v;
		break;
	case COL_DSTK:
		*acc += (uint64_t)gmt_unzigzag(v);
		e[i].stack_id = *acc;
		break;
	}
}

/* Column `kind` of an EVENTCOLS batch into e[0, n), in one loop: where
 * m * GMT_VARINT_MAX bytes remain, the next m varints are read without a
 * check; the last few through gmt_get_varint. The cursor moves exactly as
 * dec_ev_cols moves it, so a bad batch fails where it failed there. */
static inline __attribute__((always_inline)) void dec_col(struct gmt_cursor *c, struct gmt_event *e,
							  size_t n, int kind, struct dec *d,
							  const uint8_t **ends, size_t *bad_api)
{
	const uint8_t *p = c->p, *end = c->end;
	int bad = c->bad;
	uint64_t acc = kind == COL_DT ? d->ev_time : d->ev_stack;
	size_t i = 0;
	while (i < n) {
		size_t m = (size_t)(end - p) / GMT_VARINT_MAX;
		if (m > n - i)
			m = n - i;
		if (m) {
			for (size_t stop = i + m; i < stop; i++) {
				uint64_t v = col_varint(&p, &bad);
				col_put(kind, e, i, v, &acc, ends, p, bad_api, n);
			}
		} else { /* the column's last bytes */
			c->p = p;
			c->bad = bad;
			uint64_t v = gmt_get_varint(c);
			p = c->p;
			bad = c->bad;
			col_put(kind, e, i, v, &acc, ends, p, bad_api, n);
			i++;
		}
	}
	c->p = p;
	c->bad = bad;
	if (kind == COL_DT)
		d->ev_time = acc;
	else if (kind == COL_DSTK)
		d->ev_stack = acc;
}

/* All n events left in an EVENTCOLS batch into e[0, n) (ends[i]: the head
 * column's cursor after event i), column by column: what dec_ev does n
 * times, with the same result. n: done; otherwise the index of the event
 * dec_ev would have failed at (n - 1 for a column that does not end
 * exactly there). */
static size_t dec_ev_batch(struct dec *d, struct gmt_event *e, const uint8_t **ends, size_t n)
{
	struct gmt_cursor *f = d->col;
	size_t bad_api = n;
	dec_col(&f[0], e, n, COL_HEAD, d, ends, &bad_api);
	dec_col(&f[1], e, n, COL_DT, d, ends, &bad_api);
	/* the pointers: 8 * n bytes exactly (checked with the record) */
	const uint8_t *pp = f[2].p;
	for (size_t i = 0; i < n; i++, pp += 8)
		e[i].ptr = gmt_get_le64(pp);
	f[2].p = pp;
	dec_col(&f[3], e, n, COL_SIZE, d, ends, &bad_api);
	dec_col(&f[4], e, n, COL_DSTK, d, ends, &bad_api);
	/* the optional fields, in each event's head order */
	struct gmt_cursor *o = &f[GMT_EV_COLUMNS - 1];
	int64_t dev = d->ev_dev;
	uint64_t index = d->event_index, tid = d->ev_tid;
	for (size_t i = 0; i < n; i++) {
		uint32_t h = e[i].flags;
		e[i].result = h & GMT_EV_FAILED ? ev_varint(o) : 0;
		if (h & GMT_EV_DEV_CHANGED)
			dev = gmt_unzigzag(ev_varint(o));
		e[i].aux = h & GMT_EV_HAS_AUX ? ev_varint(o) : 0;
		e[i].aux2 = h & GMT_EV_HAS_AUX2 ? ev_varint(o) : 0;
		e[i].device = dev;
		e[i].index = index + i;
		e[i].tid = tid;
	}
	d->ev_dev = dev;
	if (bad_api < n)
		return bad_api;
	int bad = 0;
	for (int i = 0; i < GMT_EV_COLUMNS; i++)
		bad |= f[i].bad || f[i].p != f[i].end;
	if (bad)
		return n - 1;
	d->event_index += n;
	d->ev_ptr = n ? e[n - 1].ptr : d->ev_ptr;
	d->ev_left -= n;
	return n;
}

static int dec_event(struct dec *d, struct gmt_record *rec)
{
	rec->type = GMT_REC_EVENT;
	rec->offset = d->base_offset + (uint64_t)(ev_at(d) - d->base);
	return dec_ev(d, &rec->u.event);
}

/* ---- one function per record tag ---------------------------------------
 * Each reads its record's fields from d->c into rec; rd_dec_next checks the
 * cursor after it. DEC_RECORD, or why the record is bad. */

static int dec_process(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_PROCESS;
	rec->u.process.pid = gmt_get_varint(c);
	rec->u.process.ppid = gmt_get_varint(c);
	rec->u.process.start_wall_ns = gmt_get_varint(c);
	rec->u.process.hostname = get_str(k, c);
	rec->u.process.exe = get_str(k, c);
	uint64_t argc = gmt_get_varint(c);
	if (c->bad || argc > left_bytes(c)) /* each arg takes >= 1 byte */
		return DEC_BAD;
	if (grow((void **)&k->argv, &k->argv_cap, (size_t)argc, sizeof(*k->argv)))
		return DEC_NOMEM;
	for (uint64_t i = 0; i < argc; i++)
		k->argv[i] = get_str(k, c);
	uint64_t nenv = gmt_get_varint(c);
	if (c->bad || nenv > left_bytes(c) / 2)
		return DEC_BAD;
	if (grow((void **)&k->env, &k->env_cap, (size_t)nenv, sizeof(*k->env)))
		return DEC_NOMEM;
	for (uint64_t i = 0; i < nenv; i++) {
		k->env[i].key = get_str(k, c);
		k->env[i].value = get_str(k, c);
	}
	rec->u.process.argc = (size_t)argc;
	rec->u.process.argv = k->argv;
	rec->u.process.nenv = (size_t)nenv;
	rec->u.process.env = k->env;
	return DEC_RECORD;
}

static int dec_module(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_MODULE;
	rec->u.module.id = gmt_get_varint(c);
	rec->u.module.load_bias = gmt_get_varint(c);
	rec->u.module.start = gmt_get_varint(c);
	rec->u.module.end = gmt_get_varint(c);
	rec->u.module.path = get_str(k, c);
	rec->u.module.build_id = get_blob(c);
	return DEC_RECORD;
}

static int dec_device(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_DEVICE;
	rec->u.device.ordinal = gmt_get_zigzag(c);
	rec->u.device.name = get_str(k, c);
	rec->u.device.uuid = get_blob(c);
	rec->u.device.total_bytes = gmt_get_varint(c);
	rec->u.device.cc_major = gmt_get_varint(c);
	rec->u.device.cc_minor = gmt_get_varint(c);
	rec->u.device.driver_version = gmt_get_varint(c);
	return DEC_RECORD;
}

static int dec_stack(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_STACK;
	uint64_t n = gmt_get_varint(c);
	if (c->bad || n > left_bytes(c) / 2) /* each node takes >= 2 bytes */
		return DEC_BAD;
	if (grow((void **)&k->nodes, &k->nodes_cap, (size_t)n, sizeof(*k->nodes)))
		return DEC_NOMEM;
	for (uint64_t i = 0; i < n; i++) {
		k->nodes[i].id = d->next_stack_id + i;
		k->nodes[i].parent = gmt_get_varint(c);
		k->nodes[i].ip = gmt_get_varint(c);
	}
	if (c->bad)
		return DEC_BAD;
	d->next_stack_id += n;
	rec->u.stack.count = (size_t)n;
	rec->u.stack.nodes = k->nodes;
	return DEC_RECORD;
}

static int dec_thread(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_THREAD;
	rec->u.thread.tid = gmt_get_varint(c);
	rec->u.thread.name = get_str(k, c);
	return DEC_RECORD;
}

/* The batch's events come next: dec_event hands them out. */
static void start_batch(struct dec *d, const struct gmt_record *rec)
{
	d->ev_left = rec->u.events.count;
	d->ev_tid = rec->u.events.tid;
	d->ev_time = rec->u.events.base_time_ns;
	d->ev_ptr = 0;
	d->ev_stack = 0;
	d->ev_dev = 0;
}

static int dec_events(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_EVENTS;
	rec->u.events.tid = gmt_get_varint(c);
	rec->u.events.base_time_ns = gmt_get_varint(c);
	rec->u.events.count = gmt_get_varint(c);
	/* each event takes >= 5 bytes */
	if (c->bad || rec->u.events.count > left_bytes(c) / 5)
		return DEC_BAD;
	rec->u.events.columns = false;
	d->ev_cols = 0;
	start_batch(d, rec);
	return DEC_RECORD;
}

static int dec_eventcols(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_EVENTS;
	rec->u.events.tid = gmt_get_varint(c);
	rec->u.events.base_time_ns = gmt_get_varint(c);
	rec->u.events.count = gmt_get_varint(c);
	rec->u.events.columns = true;
	uint64_t len[GMT_EV_COLUMNS], total = 0;
	for (int i = 0; i < GMT_EV_COLUMNS; i++) {
		len[i] = gmt_get_varint(c);
		if (c->bad || len[i] > left_bytes(c) - total)
			return DEC_BAD;
		total += len[i];
	}
	/* each event takes >= 1 byte in each of the first five columns,
	 * exactly 8 in the pointer's */
	uint64_t n = rec->u.events.count;
	for (int i = 0; i < GMT_EV_COLUMNS - 1; i++)
		if (n > len[i] || (!n && len[i]))
			return DEC_BAD;
	if (len[2] != 8 * n)
		return DEC_BAD;
	if (!n && len[GMT_EV_COLUMNS - 1])
		return DEC_BAD;
	for (int i = 0; i < GMT_EV_COLUMNS; i++) {
		d->col[i] = (struct gmt_cursor){c->p, c->p + len[i], 0};
		c->p += len[i];
	}
	d->ev_cols = 1;
	start_batch(d, rec);
	return DEC_RECORD;
}

static int dec_lost(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_LOST;
	rec->u.lost.tid = gmt_get_varint(c);
	rec->u.lost.count = gmt_get_varint(c);
	rec->u.lost.time_ns = gmt_get_varint(c);
	return DEC_RECORD;
}

static int dec_symbol(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_SYMBOL;
	rec->u.symbol.ip = gmt_get_varint(c);
	rec->u.symbol.module_id = gmt_get_varint(c);
	rec->u.symbol.function = get_str(k, c);
	rec->u.symbol.file = get_str(k, c);
	rec->u.symbol.line = gmt_get_varint(c);
	return DEC_RECORD;
}

static int dec_note(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_NOTE;
	rec->u.note.level = gmt_get_varint(c);
	rec->u.note.text = get_str(k, c);
	return DEC_RECORD;
}

static int dec_trailer(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_TRAILER;
	rec->u.trailer.end_time_ns = gmt_get_varint(c);
	rec->u.trailer.events = gmt_get_varint(c);
	rec->u.trailer.lost = gmt_get_varint(c);
	rec->u.trailer.stack_nodes = gmt_get_varint(c);
	rec->u.trailer.reason = gmt_get_varint(c);
	return DEC_RECORD;
}

static int dec_meminfo(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_MEMINFO;
	rec->u.meminfo.tid = gmt_get_varint(c);
	rec->u.meminfo.time_ns = gmt_get_varint(c);
	rec->u.meminfo.device = gmt_get_zigzag(c);
	rec->u.meminfo.free_bytes = gmt_get_varint(c);
	rec->u.meminfo.total_bytes = gmt_get_varint(c);
	rec->u.meminfo.api = gmt_get_varint(c);
	return DEC_RECORD;
}

static int dec_sample(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_SAMPLE;
	rec->u.sample.time_ns = gmt_get_varint(c);
	rec->u.sample.nvml_index = gmt_get_varint(c);
	rec->u.sample.uuid = get_blob(c);
	rec->u.sample.used_bytes = gmt_get_varint(c);
	rec->u.sample.total_bytes = gmt_get_varint(c);
	rec->u.sample.flags = gmt_get_varint(c);
	rec->u.sample.process_used_bytes = gmt_get_varint(c);
	rec->u.sample.reason = gmt_get_varint(c);
	return DEC_RECORD;
}

static int dec_range(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_RANGE;
	rec->u.range.tid = gmt_get_varint(c);
	rec->u.range.time_ns = gmt_get_varint(c);
	rec->u.range.op = gmt_get_varint(c);
	rec->u.range.id = gmt_get_varint(c);
	rec->u.range.source = gmt_get_varint(c);
	rec->u.range.text = get_str(k, c);
	return DEC_RECORD;
}

static int dec_pyframe(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_PYFRAME;
	rec->u.pyframe.id = gmt_get_varint(c);
	rec->u.pyframe.function = get_str(k, c);
	rec->u.pyframe.file = get_str(k, c);
	rec->u.pyframe.line = gmt_get_varint(c);
	return DEC_RECORD;
}

static int dec_counters(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_COUNTERS;
	rec->u.counters.tid = gmt_get_varint(c);
	rec->u.counters.time_ns = gmt_get_varint(c);
	rec->u.counters.reason = gmt_get_varint(c);
	rec->u.counters.source = get_str(k, c);
	rec->u.counters.device = get_str(k, c);
	rec->u.counters.ordinal = gmt_get_zigzag(c);
	uint64_t n = gmt_get_varint(c);
	if (c->bad || n > left_bytes(c) / 2) /* each entry takes >= 2 bytes */
		return DEC_BAD;
	if (grow((void **)&k->counters, &k->counters_cap, (size_t)n, sizeof(*k->counters)))
		return DEC_NOMEM;
	for (uint64_t i = 0; i < n; i++) {
		k->counters[i].name = get_str(k, c);
		k->counters[i].value = gmt_get_varint(c);
	}
	rec->u.counters.count = (size_t)n;
	rec->u.counters.v = k->counters;
	return DEC_RECORD;
}

/* ---- the framework's own view (version 5) ------------------------------ */

static int dec_fwsnap(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_FWSNAP;
	rec->u.fwsnap.tid = gmt_get_varint(c);
	rec->u.fwsnap.time_ns = gmt_get_varint(c);
	rec->u.fwsnap.wall_ns = gmt_get_varint(c);
	rec->u.fwsnap.seq = gmt_get_varint(c);
	rec->u.fwsnap.reason = gmt_get_varint(c);
	rec->u.fwsnap.source = get_str(k, c);
	rec->u.fwsnap.flags = gmt_get_varint(c);
	rec->u.fwsnap.max_entries = gmt_get_varint(c);
	uint64_t n = gmt_get_varint(c);
	if (c->bad || n > left_bytes(c) / 2) /* each pair takes >= 2 bytes */
		return DEC_BAD;
	if (grow((void **)&k->env, &k->env_cap, (size_t)n, sizeof(*k->env)))
		return DEC_NOMEM;
	for (uint64_t i = 0; i < n; i++) {
		k->env[i].key = get_str(k, c);
		k->env[i].value = get_str(k, c);
	}
	rec->u.fwsnap.count = (size_t)n;
	rec->u.fwsnap.settings = k->env;
	return DEC_RECORD;
}

static int dec_fwtrace(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_FWTRACE;
	rec->u.fwtrace.seq = gmt_get_varint(c);
	rec->u.fwtrace.device = gmt_get_zigzag(c);
	rec->u.fwtrace.flags = gmt_get_varint(c);
	rec->u.fwtrace.base_time_us = gmt_get_varint(c);
	uint64_t n = gmt_get_varint(c);
	/* each entry takes >= 6 bytes */
	if (c->bad || n > GMT_FW_BATCH_MAX || n > left_bytes(c) / 6)
		return DEC_BAD;
	if (grow((void **)&k->fw_entries, &k->fw_entries_cap, (size_t)n, sizeof(*k->fw_entries)))
		return DEC_NOMEM;
	uint64_t addr = 0, time = rec->u.fwtrace.base_time_us, stack = 0;
	for (uint64_t i = 0; i < n; i++) {
		struct gmt_fw_entry *e = &k->fw_entries[i];
		uint64_t action = gmt_get_varint(c);
		e->action = action > UINT32_MAX ? UINT32_MAX : (uint32_t)action;
		e->addr = addr += (uint64_t)gmt_get_zigzag(c);
		e->size = gmt_get_varint(c);
		e->stream = gmt_get_varint(c);
		e->time_us = time += (uint64_t)gmt_get_zigzag(c);
		e->stack_id = stack += (uint64_t)gmt_get_zigzag(c);
	}
	rec->u.fwtrace.count = (size_t)n;
	rec->u.fwtrace.v = k->fw_entries;
	return DEC_RECORD;
}

static int dec_fwseg(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_FWSEG;
	rec->u.fwseg.seq = gmt_get_varint(c);
	rec->u.fwseg.device = gmt_get_zigzag(c);
	rec->u.fwseg.address = gmt_get_varint(c);
	rec->u.fwseg.total_size = gmt_get_varint(c);
	rec->u.fwseg.stream = gmt_get_varint(c);
	rec->u.fwseg.flags = gmt_get_varint(c);
	rec->u.fwseg.pool_a = gmt_get_varint(c);
	rec->u.fwseg.pool_b = gmt_get_varint(c);
	rec->u.fwseg.stack_id = gmt_get_varint(c);
	uint64_t n = gmt_get_varint(c);
	/* each block takes >= 5 bytes */
	if (c->bad || n > GMT_FW_BATCH_MAX || n > left_bytes(c) / 5)
		return DEC_BAD;
	if (grow((void **)&k->fw_blocks, &k->fw_blocks_cap, (size_t)n, sizeof(*k->fw_blocks)))
		return DEC_NOMEM;
	uint64_t at = rec->u.fwseg.address, stack = rec->u.fwseg.stack_id;
	for (uint64_t i = 0; i < n; i++) {
		struct gmt_fw_block *b = &k->fw_blocks[i];
		b->address = at += (uint64_t)gmt_get_zigzag(c);
		b->size = gmt_get_varint(c);
		b->requested_size = gmt_get_varint(c);
		uint64_t state = gmt_get_varint(c);
		b->state = state > UINT32_MAX ? UINT32_MAX : (uint32_t)state;
		b->stack_id = stack += (uint64_t)gmt_get_zigzag(c);
		at += b->size;
	}
	rec->u.fwseg.count = (size_t)n;
	rec->u.fwseg.v = k->fw_blocks;
	return DEC_RECORD;
}

static int dec_fwoom(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_FWOOM;
	rec->u.fwoom.tid = gmt_get_varint(c);
	rec->u.fwoom.time_ns = gmt_get_varint(c);
	rec->u.fwoom.how = gmt_get_varint(c);
	rec->u.fwoom.source = get_str(k, c);
	rec->u.fwoom.type = get_str(k, c);
	rec->u.fwoom.ordinal = gmt_get_zigzag(c);
	uint64_t n = gmt_get_varint(c);
	if (c->bad || n > left_bytes(c) / 2) /* each entry takes >= 2 bytes */
		return DEC_BAD;
	if (grow((void **)&k->counters, &k->counters_cap, (size_t)n, sizeof(*k->counters)))
		return DEC_NOMEM;
	for (uint64_t i = 0; i < n; i++) {
		k->counters[i].name = get_str(k, c);
		k->counters[i].value = gmt_get_varint(c);
	}
	rec->u.fwoom.count = (size_t)n;
	rec->u.fwoom.v = k->counters;
	rec->u.fwoom.message = get_str(k, c);
	return DEC_RECORD;
}

static int dec_exit(struct chunk *k, struct dec *d, struct gmt_record *rec)
{
	struct gmt_cursor *c = &d->c;
	rec->type = GMT_REC_EXIT;
	rec->u.exit.time_ns = gmt_get_varint(c);
	rec->u.exit.how = gmt_get_varint(c);
	rec->u.exit.status = gmt_get_zigzag(c);
	rec->u.exit.signal = gmt_get_varint(c);
	return DEC_RECORD;
}

/* The record of a known tag; no default, so -Wswitch names a new tag that
 * has no decoder yet. */
static int dec_record(struct chunk *k, struct dec *d, struct gmt_record *rec, enum gmt_tag tag)
{
	switch (tag) {
	case GMT_TAG_PROCESS:
		return dec_process(k, d, rec);
	case GMT_TAG_MODULE:
		return dec_module(k, d, rec);
	case GMT_TAG_DEVICE:
		return dec_device(k, d, rec);
	case GMT_TAG_STACK:
		return dec_stack(k, d, rec);
	case GMT_TAG_THREAD:
		return dec_thread(k, d, rec);
	case GMT_TAG_EVENTS:
		return dec_events(k, d, rec);
	case GMT_TAG_EVENTCOLS:
		return dec_eventcols(k, d, rec);
	case GMT_TAG_LOST:
		return dec_lost(k, d, rec);
	case GMT_TAG_SYMBOL:
		return dec_symbol(k, d, rec);
	case GMT_TAG_NOTE:
		return dec_note(k, d, rec);
	case GMT_TAG_TRAILER:
		return dec_trailer(k, d, rec);
	case GMT_TAG_MEMINFO:
		return dec_meminfo(k, d, rec);
	case GMT_TAG_SAMPLE:
		return dec_sample(k, d, rec);
	case GMT_TAG_RANGE:
		return dec_range(k, d, rec);
	case GMT_TAG_PYFRAME:
		return dec_pyframe(k, d, rec);
	case GMT_TAG_COUNTERS:
		return dec_counters(k, d, rec);
	case GMT_TAG_FWSEG:
		return dec_fwseg(k, d, rec);
	case GMT_TAG_FWTRACE:
		return dec_fwtrace(k, d, rec);
	case GMT_TAG_FWSNAP:
		return dec_fwsnap(k, d, rec);
	case GMT_TAG_FWOOM:
		return dec_fwoom(k, d, rec);
	case GMT_TAG_EXIT:
		return dec_exit(k, d, rec);
	}
	return DEC_UNKNOWN; /* not reached: rd_dec_next checks the range */
}

/* Decodes the next record (or event) of chunk k; cached: the real pass,
 * which may take events from k's cache. */
int rd_dec_next(struct chunk *k, struct dec *d, struct gmt_record *rec, int cached)
{
	struct gmt_cursor *c = &d->c;
	k->arena_used = 0;
	rec->chunk_offset = d->base_offset - GMT_CHUNK_HEADER_SIZE;
	if (d->ev_left && cached && d->event_index - k->cache_first < k->ncache) {
		size_t i = d->event_index - k->cache_first;
		rec->type = GMT_REC_EVENT;
		rec->offset = d->base_offset + (uint64_t)(ev_at(d) - d->base);
		rec->u.event = k->cache[i];
		take_cached(k, d, i, 1);
		return DEC_RECORD;
	}
	if (d->ev_left)
		return dec_event(d, rec);
	if (c->p >= c->end)
		return DEC_END;
	rec->offset = d->base_offset + (uint64_t)(c->p - d->base);
	uint64_t tag = gmt_get_varint(c);
	if (c->bad)
		return DEC_BAD;
	if (tag < 1 || tag > GMT_TAG_MAX_)
		return DEC_UNKNOWN; /* rec->offset: where the unknown tag starts */
	int rc = dec_record(k, d, rec, (enum gmt_tag)tag);
	if (rc != DEC_RECORD)
		return rc;
	return c->bad ? DEC_BAD : DEC_RECORD;
}

/* ---- checking a chunk whole ---------------------------------------------- */

/* The EVENTS batch d has just started, its events straight into k's cache
 * while it has room; an EVENTCOLS batch only whole (see take_cached). 1:
 * done (what did not fit is decoded again by the real pass); 0: a bad
 * event stopped the chunk. */
static int cache_batch(struct chunk *k, struct dec *d)
{
	if (!k->cache) {
		k->cache = malloc(CACHE_MAX * sizeof(*k->cache));
		k->cache_end = malloc(CACHE_MAX * sizeof(*k->cache_end));
		if (!k->cache_end) {
			free(k->cache);
			k->cache = NULL;
		}
	}
	int room = !d->ev_cols || k->ncache + d->ev_left <= CACHE_MAX;
	if (room && k->cache && d->ev_cols && d->event_index == k->cache_first + k->ncache) {
		size_t n = (size_t)d->ev_left, at = k->ncache;
		const uint8_t *head0 = d->col[0].p;
		size_t ok_n = dec_ev_batch(d, &k->cache[at], &k->cache_end[at], n);
		if (ok_n != n) {
			const uint8_t *hp = ok_n ? k->cache_end[at + ok_n - 1] : head0;
			return rd_stop(
			    k, GMT_STOP_CORRUPT, "malformed event at offset %llu",
			    (unsigned long long)(d->base_offset + (uint64_t)(hp - d->base)));
		}
		k->ncache += n;
		return 1;
	}
	while (room && k->cache && d->ev_left && k->ncache < CACHE_MAX &&
	       d->event_index == k->cache_first + k->ncache) {
		uint64_t at = d->base_offset + (uint64_t)(ev_at(d) - d->base);
		if (dec_ev(d, &k->cache[k->ncache]) != DEC_RECORD)
			return rd_stop(k, GMT_STOP_CORRUPT, "malformed event at offset %llu",
				       (unsigned long long)at);
		k->cache_end[k->ncache] = ev_at(d);
		k->ncache++;
	}
	return 1;
}

static const char *tag_name(uint64_t tag)
{
	if (tag == GMT_TAG_EVENTCOLS)
		return "EVENTCOLS";
	return tag >= 1 && tag <= GMT_TAG_MAX_ ? gmt_rec_type_name((int)tag) : "unknown";
}

/* Why rd_dec_next's rc (bad or out of memory) stops the chunk: 0. */
static int bad_record(struct chunk *k, const struct dec *d, const struct gmt_record *rec, int rc,
		      uint32_t len)
{
	if (rc == DEC_NOMEM)
		return rd_stop_nomem(k);
	if (d->ev_left)
		return rd_stop(k, GMT_STOP_CORRUPT, "malformed event at offset %llu",
			       (unsigned long long)rec->offset);
	uint64_t tag_at = rec->offset - d->base_offset;
	struct gmt_cursor tc = {k->payload + tag_at, k->payload + len, 0};
	return rd_stop(k, GMT_STOP_CORRUPT, "malformed %s record at offset %llu",
		       tag_name(gmt_get_varint(&tc)), (unsigned long long)rec->offset);
}

/* Decodes every record of k's payload (len bytes, at file offset
 * base_offset) once, caching its first events, before the real pass hands
 * any out. 1: all good (or cut short by an unknown tag); 0: stopped. */
int rd_check_records(struct chunk *k, uint64_t base_offset, uint32_t len, uint64_t stack_id,
		     uint64_t event_index)
{
	struct dec d = {0};
	d.c = (struct gmt_cursor){k->payload, k->payload + len, 0};
	d.base = k->payload;
	d.base_offset = base_offset;
	d.next_stack_id = stack_id;
	d.event_index = event_index;
	k->start = d; /* the real pass starts from here */
	k->ncache = 0;
	k->cache_first = d.event_index;
	struct gmt_record rec;
	for (;;) {
		int rc = rd_dec_next(k, &d, &rec, 0);
		if (rc == DEC_RECORD) {
			if (rec.type == GMT_REC_EVENTS && d.ev_left && !cache_batch(k, &d))
				return 0;
			continue;
		}
		if (rc == DEC_END)
			break;
		if (rc == DEC_UNKNOWN) {
			uint64_t tag_at = rec.offset - d.base_offset;
			k->unknown = 1;
			k->unknown_bytes = len - tag_at;
			k->start.c.end = k->payload + tag_at; /* the real pass stops there */
			break;
		}
		return bad_record(k, &d, &rec, rc, len);
	}
	k->next_stack_id = d.next_stack_id;
	k->next_event_index = d.event_index;
	return 1;
}
