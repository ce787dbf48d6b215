/* Test-only trace encoder; see trace-builder.h. */
#include "trace-builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumemtrace/format.h>

struct buf {
	uint8_t *p;
	size_t len, cap;
};

struct tb {
	struct buf file, payload, batch;
	size_t *chunk_off;
	size_t nchunks;
	uint32_t seq;
	/* the EVENTS batch being built */
	int in_batch;
	uint64_t tid, base, count, time, ptr, stack;
	int64_t dev;
	uint64_t events; /* in all batches */
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (!n)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p) {
			perror("trace-builder");
			exit(99);
		}
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void u8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void le(struct buf *b, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		u8(b, (uint8_t)(v >> (8 * i)));
}

static void var(struct buf *b, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		u8(b, byte | (v ? 0x80 : 0));
	} while (v);
}

static void zz(struct buf *b, int64_t v)
{
	/* zigzag: 0,-1,1,-2 -> 0,1,2,3 */
	var(b, v < 0 ? ((uint64_t)(-(v + 1)) << 1) | 1 : (uint64_t)v << 1);
}

static void str(struct buf *b, const void *s, size_t n)
{
	var(b, n);
	put(b, s, n);
}

static void cstr(struct buf *b, const char *s)
{
	str(b, s ? s : "", s ? strlen(s) : 0);
}

/* The payload, after ending any open EVENTS batch. */
static struct buf *rec(struct tb *b)
{
	if (b->in_batch)
		tb_events_end(b);
	return &b->payload;
}

uint32_t tb_crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = 0xffffffffu;
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return crc ^ 0xffffffffu;
}

struct tb *tb_new(const struct tb_header *h)
{
	struct tb_header d = {GMT_FORMAT_VERSION, GMT_HEADER_SIZE, GMT_ENDIAN_LITTLE, 0, 0, 0, 0};
	struct tb *b = calloc(1, sizeof(*b));
	if (h) {
		d = *h;
		if (!d.version)
			d.version = GMT_FORMAT_VERSION;
		if (!d.header_size)
			d.header_size = GMT_HEADER_SIZE;
		if (!d.endian)
			d.endian = GMT_ENDIAN_LITTLE;
	}
	put(&b->file, "\x89GMTRACE", 8);
	le(&b->file, d.version, 2);
	le(&b->file, d.header_size, 2);
	u8(&b->file, d.endian);
	le(&b->file, 0, 3); /* 13..15 */
	le(&b->file, d.features, 4);
	le(&b->file, 0, 4); /* 20..23 */
	le(&b->file, d.start_wall_ns, 8);
	le(&b->file, d.start_mono_ns, 8);
	le(&b->file, d.pid, 4);
	while (b->file.len < d.header_size)
		u8(&b->file, 0);
	return b;
}

void tb_free(struct tb *b)
{
	free(b->file.p);
	free(b->payload.p);
	free(b->batch.p);
	free(b->chunk_off);
	free(b);
}

void tb_chunk(struct tb *b)
{
	if (b->in_batch)
		tb_events_end(b);
	if (!b->payload.len)
		return;
	b->chunk_off = realloc(b->chunk_off, (b->nchunks + 1) * sizeof(*b->chunk_off));
	b->chunk_off[b->nchunks++] = b->file.len;
	put(&b->file, "GMTC", 4);
	le(&b->file, b->payload.len, 4);
	le(&b->file, b->seq++, 4);
	le(&b->file, tb_crc32c(b->payload.p, b->payload.len), 4);
	put(&b->file, b->payload.p, b->payload.len);
	b->payload.len = 0;
}

const uint8_t *tb_data(struct tb *b, size_t *len)
{
	tb_chunk(b);
	*len = b->file.len;
	return b->file.p;
}

size_t tb_chunks(struct tb *b)
{
	tb_chunk(b);
	return b->nchunks;
}

size_t tb_chunk_offset(struct tb *b, size_t i)
{
	tb_chunk(b);
	return i < b->nchunks ? b->chunk_off[i] : b->file.len;
}

int tb_write(struct tb *b, const char *path)
{
	size_t len;
	const uint8_t *p = tb_data(b, &len);
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = fwrite(p, 1, len, f);
	if (fclose(f) != 0 || n != len)
		return -1;
	return 0;
}

void tb_process(struct tb *b, uint64_t pid, uint64_t ppid, uint64_t start_wall_ns, const char *host,
		const char *exe, int argc, const char *const *argv, int nenv,
		const char *const *keys, const char *const *values)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_PROCESS);
	var(p, pid);
	var(p, ppid);
	var(p, start_wall_ns);
	cstr(p, host);
	cstr(p, exe);
	var(p, (uint64_t)argc);
	for (int i = 0; i < argc; i++)
		cstr(p, argv[i]);
	var(p, (uint64_t)nenv);
	for (int i = 0; i < nenv; i++) {
		cstr(p, keys[i]);
		cstr(p, values[i]);
	}
}

void tb_module(struct tb *b, uint64_t id, uint64_t bias, uint64_t start, uint64_t end,
	       const char *path, const uint8_t *build_id, size_t build_id_len)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_MODULE);
	var(p, id);
	var(p, bias);
	var(p, start);
	var(p, end);
	cstr(p, path);
	str(p, build_id, build_id_len);
}

void tb_device(struct tb *b, int64_t ordinal, const char *name, const uint8_t *uuid,
	       size_t uuid_len, uint64_t total, uint64_t cc_major, uint64_t cc_minor,
	       uint64_t driver)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_DEVICE);
	zz(p, ordinal);
	cstr(p, name);
	str(p, uuid, uuid_len);
	var(p, total);
	var(p, cc_major);
	var(p, cc_minor);
	var(p, driver);
}

void tb_stack(struct tb *b, size_t count, const uint64_t *parents, const uint64_t *ips)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_STACK);
	var(p, count);
	for (size_t i = 0; i < count; i++) {
		var(p, parents[i]);
		var(p, ips[i]);
	}
}

void tb_thread(struct tb *b, uint64_t tid, const char *name)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_THREAD);
	var(p, tid);
	cstr(p, name);
}

void tb_events_begin(struct tb *b, uint64_t tid, uint64_t base_time_ns)
{
	if (b->in_batch)
		tb_events_end(b);
	b->in_batch = 1;
	b->tid = tid;
	b->base = b->time = base_time_ns;
	b->count = 0;
	b->ptr = b->stack = 0;
	b->dev = 0;
	b->batch.len = 0;
}

uint64_t tb_event_count(const struct tb *b)
{
	return b->events;
}

void tb_event(struct tb *b, const struct tb_event *e)
{
	struct buf *p = &b->batch;
	b->events++;
	uint64_t head = (uint64_t)e->api << GMT_EV_API_SHIFT;
	if (e->result)
		head |= GMT_EV_FAILED;
	if (e->aux)
		head |= GMT_EV_HAS_AUX;
	if (e->aux2)
		head |= GMT_EV_HAS_AUX2;
	if (e->device != b->dev)
		head |= GMT_EV_DEV_CHANGED;
	var(p, head);
	var(p, e->time_ns - b->time);
	zz(p, (int64_t)(e->ptr - b->ptr));
	var(p, e->size);
	zz(p, (int64_t)(e->stack_id - b->stack));
	if (e->result)
		var(p, e->result);
	if (e->device != b->dev)
		zz(p, e->device);
	if (e->aux)
		var(p, e->aux);
	if (e->aux2)
		var(p, e->aux2);
	b->time = e->time_ns;
	b->ptr = e->ptr;
	b->stack = e->stack_id;
	b->dev = e->device;
	b->count++;
}

void tb_events_end(struct tb *b)
{
	if (!b->in_batch)
		return;
	b->in_batch = 0;
	var(&b->payload, GMT_TAG_EVENTS);
	var(&b->payload, b->tid);
	var(&b->payload, b->base);
	var(&b->payload, b->count);
	put(&b->payload, b->batch.p, b->batch.len);
}

void tb_lost(struct tb *b, uint64_t tid, uint64_t count, uint64_t time_ns)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_LOST);
	var(p, tid);
	var(p, count);
	var(p, time_ns);
}

void tb_symbol(struct tb *b, uint64_t ip, uint64_t module_id, const char *function,
	       const char *file, uint64_t line)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_SYMBOL);
	var(p, ip);
	var(p, module_id);
	cstr(p, function);
	cstr(p, file);
	var(p, line);
}

void tb_note(struct tb *b, uint64_t level, const char *text)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_NOTE);
	var(p, level);
	cstr(p, text);
}

void tb_trailer(struct tb *b, uint64_t end_ns, uint64_t events, uint64_t lost, uint64_t stack_nodes,
		uint64_t reason)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_TRAILER);
	var(p, end_ns);
	var(p, events);
	var(p, lost);
	var(p, stack_nodes);
	var(p, reason);
}

void tb_meminfo(struct tb *b, uint64_t tid, uint64_t time_ns, int64_t device, uint64_t free_bytes,
		uint64_t total_bytes, uint64_t api)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_MEMINFO);
	var(p, tid);
	var(p, time_ns);
	zz(p, device);
	var(p, free_bytes);
	var(p, total_bytes);
	var(p, api);
}

void tb_sample(struct tb *b, uint64_t time_ns, uint64_t nvml_index, const uint8_t *uuid,
	       size_t uuid_len, uint64_t used, uint64_t total, uint64_t flags,
	       uint64_t process_used, uint64_t reason)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_SAMPLE);
	var(p, time_ns);
	var(p, nvml_index);
	str(p, uuid, uuid_len);
	var(p, used);
	var(p, total);
	var(p, flags);
	var(p, process_used);
	var(p, reason);
}

void tb_range(struct tb *b, uint64_t tid, uint64_t time_ns, uint64_t op, uint64_t id,
	      uint64_t source, const char *text)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_RANGE);
	var(p, tid);
	var(p, time_ns);
	var(p, op);
	var(p, id);
	var(p, source);
	cstr(p, text);
}

void tb_counters(struct tb *b, uint64_t tid, uint64_t time_ns, uint64_t reason, const char *source,
		 const char *device, int64_t ordinal, size_t n, const char *const *names,
		 const uint64_t *values)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_COUNTERS);
	var(p, tid);
	var(p, time_ns);
	var(p, reason);
	cstr(p, source);
	cstr(p, device);
	zz(p, ordinal);
	var(p, n);
	for (size_t i = 0; i < n; i++) {
		cstr(p, names[i]);
		var(p, values[i]);
	}
}

void tb_fwoom(struct tb *b, uint64_t tid, uint64_t time_ns, uint64_t how, const char *source,
	      const char *type, int64_t ordinal, size_t n, const char *const *names,
	      const uint64_t *values, const char *message)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_FWOOM);
	var(p, tid);
	var(p, time_ns);
	var(p, how);
	cstr(p, source);
	cstr(p, type);
	zz(p, ordinal);
	var(p, n);
	for (size_t i = 0; i < n; i++) {
		cstr(p, names[i]);
		var(p, values[i]);
	}
	cstr(p, message);
}

void tb_exit(struct tb *b, uint64_t time_ns, uint64_t how, int64_t status, uint64_t signal)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_EXIT);
	var(p, time_ns);
	var(p, how);
	zz(p, status);
	var(p, signal);
}

void tb_pyframe(struct tb *b, uint64_t id, const char *function, const char *file, uint64_t line)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_PYFRAME);
	var(p, id);
	cstr(p, function);
	cstr(p, file);
	var(p, line);
}

void tb_fwsnap(struct tb *b, uint64_t tid, uint64_t time_ns, uint64_t wall_ns, uint64_t seq,
	       uint64_t reason, const char *source, uint64_t flags, uint64_t max_entries, size_t n,
	       const char *const *keys, const char *const *values)
{
	struct buf *p = rec(b);
	var(p, GMT_TAG_FWSNAP);
	var(p, tid);
	var(p, time_ns);
	var(p, wall_ns);
	var(p, seq);
	var(p, reason);
	cstr(p, source);
	var(p, flags);
	var(p, max_entries);
	var(p, n);
	for (size_t i = 0; i < n; i++) {
		cstr(p, keys[i]);
		cstr(p, values[i]);
	}
}

void tb_fwtrace(struct tb *b, uint64_t seq, int64_t device, uint64_t flags, size_t n,
		const struct tb_fw_entry *e)
{
	struct buf *p = rec(b);
	uint64_t base = n ? e[0].time_us : 0, addr = 0, time = base, stack = 0;
	var(p, GMT_TAG_FWTRACE);
	var(p, seq);
	zz(p, device);
	var(p, flags);
	var(p, base);
	var(p, n);
	for (size_t i = 0; i < n; i++) {
		var(p, e[i].action);
		zz(p, (int64_t)(e[i].addr - addr));
		var(p, e[i].size);
		var(p, e[i].stream);
		zz(p, (int64_t)(e[i].time_us - time));
		zz(p, (int64_t)(e[i].stack_id - stack));
		addr = e[i].addr;
		time = e[i].time_us;
		stack = e[i].stack_id;
	}
}

void tb_fwseg(struct tb *b, uint64_t seq, int64_t device, uint64_t address, uint64_t total_size,
	      uint64_t stream, uint64_t flags, uint64_t stack_id, size_t n,
	      const struct tb_fw_block *blk)
{
	struct buf *p = rec(b);
	uint64_t end = address, stack = stack_id;
	var(p, GMT_TAG_FWSEG);
	var(p, seq);
	zz(p, device);
	var(p, address);
	var(p, total_size);
	var(p, stream);
	var(p, flags);
	var(p, 0); /* pool (0, 0) */
	var(p, 0);
	var(p, stack_id);
	var(p, n);
	for (size_t i = 0; i < n; i++) {
		zz(p, (int64_t)(blk[i].address - end));
		var(p, blk[i].size);
		var(p, blk[i].requested);
		var(p, blk[i].state);
		zz(p, (int64_t)(blk[i].stack_id - stack));
		end = blk[i].address + blk[i].size;
		stack = blk[i].stack_id;
	}
}

void tb_raw(struct tb *b, const void *bytes, size_t len)
{
	struct buf *p = rec(b);
	put(p, bytes, len);
}

void tb_varint(struct tb *b, uint64_t v)
{
	struct buf *p = rec(b);
	var(p, v);
}
