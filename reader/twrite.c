/* A trace written from the CLI side (reader/twrite.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/codec.h"
#include "common/zstd.h"
#include "reader/internal.h"
#include "reader/twrite.h"

/* Written once, read many times: a little more effort than the library's 1. */
#define ZSTD_LEVEL 3
/* well under the reader's default limit (reader.c, EXPANSION_DEFAULT) */
#define TW_MAX_EXPANSION 64u

static int failed(struct tw *w, int err)
{
	if (!w->err)
		w->err = err ? err : EIO;
	errno = w->err;
	return -1;
}

static int write_all(struct tw *w, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(w->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return failed(w, k < 0 ? errno : ENOSPC);
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int tw_open(struct tw *w, int fd, const struct tw_header *h, bool compress)
{
	memset(w, 0, sizeof *w);
	w->fd = fd;
	w->len = GMT_CHUNK_HEADER_SIZE;
	w->ev_prev_dev = 0;
	if (compress) {
		const struct gmt_zstd *z = gmt_zstd_get(&rd_dl, NULL);
		w->cctx = z ? z->ZSTD_createCCtx() : NULL;
		w->compress = w->cctx != NULL;
	}
	uint8_t hdr[GMT_HEADER_SIZE] = {0};
	w->file_bytes = GMT_HEADER_SIZE;
	memcpy(hdr + GMT_HDR_MAGIC, GMT_MAGIC, GMT_MAGIC_LEN);
	gmt_put_le16(hdr + GMT_HDR_VERSION, GMT_FORMAT_VERSION);
	gmt_put_le16(hdr + GMT_HDR_HEADER_SIZE, GMT_HEADER_SIZE);
	hdr[GMT_HDR_ENDIAN] = GMT_ENDIAN_LITTLE;
	gmt_put_le32(hdr + GMT_HDR_FEATURES, h->stacks ? GMT_FEAT_STACKS : 0);
	gmt_put_le64(hdr + GMT_HDR_START_WALL, h->start_wall_ns);
	gmt_put_le64(hdr + GMT_HDR_START_MONO, h->start_mono_ns);
	gmt_put_le32(hdr + GMT_HDR_PID, h->pid);
	return write_all(w, hdr, sizeof hdr);
}

/* The pending chunk compressed into w->zbuf: its length, or 0 when that
 * fails or is no smaller. */
static size_t compress_chunk(struct tw *w, size_t payload)
{
	const struct gmt_zstd *z = gmt_zstd_get(&rd_dl, NULL);
	size_t need = GMT_CHUNK_HEADER_SIZE + gmt_chunk_zbound(z, payload);
	if (need > w->zcap) {
		uint8_t *b = realloc(w->zbuf, need);
		if (!b)
			return 0;
		w->zbuf = b;
		w->zcap = need;
	}
	return gmt_chunk_compress(z, w->cctx, ZSTD_LEVEL, w->zbuf + GMT_CHUNK_HEADER_SIZE,
				  w->chunk + GMT_CHUNK_HEADER_SIZE, payload);
}

/* Writes the pending chunk. */
static int tw_flush(struct tw *w)
{
	if (w->err)
		return -1;
	if (w->len <= GMT_CHUNK_HEADER_SIZE)
		return 0;
	uint32_t payload = (uint32_t)(w->len - GMT_CHUNK_HEADER_SIZE);
	size_t zlen = w->compress ? compress_chunk(w, payload) : 0;
	/* The reader refuses a file that decompresses to more than
	 * GPUMEMTRACE_MAX_EXPANSION (256) times its size: a history of
	 * identical steps compresses further than that, so a chunk that would
	 * take the file past TW_MAX_EXPANSION goes uncompressed. */
	if (zlen && w->raw_bytes + payload >
			(w->file_bytes + GMT_CHUNK_HEADER_SIZE + zlen) * TW_MAX_EXPANSION)
		zlen = 0;
	w->raw_bytes += payload;
	w->file_bytes += GMT_CHUNK_HEADER_SIZE + (zlen ? zlen : payload);
	uint8_t *c = zlen ? w->zbuf : w->chunk;
	uint32_t len = zlen ? (uint32_t)zlen : payload;
	gmt_chunk_seal(c, zlen != 0, len, w->seq++);
	w->len = GMT_CHUNK_HEADER_SIZE;
	return write_all(w, c, GMT_CHUNK_HEADER_SIZE + (size_t)len);
}

uint8_t *tw_room(struct tw *w, size_t n)
{
	if (w->err)
		return NULL;
	if (w->len > GMT_CHUNK_HEADER_SIZE && w->len + n > TW_CHUNK_TARGET && tw_flush(w))
		return NULL;
	if (w->len + n > GMT_CHUNK_HEADER_SIZE + GMT_CHUNK_MAX_PAYLOAD) {
		failed(w, EFBIG); /* one record larger than a chunk: never from our callers */
		return NULL;
	}
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : TW_CHUNK_TARGET + 4096;
		while (cap < w->len + n)
			cap *= 2;
		uint8_t *c = realloc(w->chunk, cap);
		if (!c) {
			failed(w, ENOMEM);
			return NULL;
		}
		w->chunk = c;
		w->cap = cap;
	}
	return w->chunk + w->len;
}

void tw_commit(struct tw *w, uint8_t *end)
{
	w->len = (size_t)(end - w->chunk);
}

static uint8_t *put_str(uint8_t *p, const char *s, size_t n)
{
	p = gmt_put_varint(p, n);
	if (n)
		memcpy(p, s, n);
	return p + n;
}

static int put_nodes(struct tw *w)
{
	size_t done = 0;
	while (done < w->nodes_pending) {
		size_t count = w->nodes_pending - done;
		if (count > TW_STACK_BATCH)
			count = TW_STACK_BATCH;
		uint8_t *p = tw_room(w, count * 2 * GMT_VARINT_MAX + 2 * GMT_VARINT_MAX);
		if (!p)
			return -1;
		p = gmt_put_varint(p, GMT_TAG_STACK);
		p = gmt_put_varint(p, count);
		for (size_t i = done; i < done + count; i++) {
			p = gmt_put_varint(p, w->node_parent[i]);
			p = gmt_put_varint(p, w->node_ip[i]);
		}
		tw_commit(w, p);
		done += count;
	}
	w->nodes_pending = 0;
	return 0;
}

int tw_end_batch(struct tw *w)
{
	if (w->err)
		return -1;
	if (w->nodes_pending && put_nodes(w))
		return -1;
	if (!w->ev_count)
		return 0;
	uint8_t *p = tw_room(w, w->ev_len + 4 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_EVENTS);
	p = gmt_put_varint(p, w->ev_tid);
	p = gmt_put_varint(p, w->ev_base);
	p = gmt_put_varint(p, w->ev_count);
	memcpy(p, w->ev, w->ev_len);
	tw_commit(w, p + w->ev_len);
	w->ev_len = 0;
	w->ev_count = 0;
	return 0;
}

uint64_t tw_node(struct tw *w, uint64_t parent, uint64_t ip)
{
	if (w->nodes_pending == w->nodes_cap) {
		size_t cap = w->nodes_cap ? 2 * w->nodes_cap : 1024;
		uint64_t *a = realloc(w->node_parent, cap * sizeof *a);
		if (a)
			w->node_parent = a;
		uint64_t *b = a ? realloc(w->node_ip, cap * sizeof *b) : NULL;
		if (b)
			w->node_ip = b;
		if (!a || !b) {
			failed(w, ENOMEM);
			return 0;
		}
		w->nodes_cap = cap;
	}
	/* written before the open batch, by tw_end_batch: the batch's events
	 * may name it */
	w->node_parent[w->nodes_pending] = parent;
	w->node_ip[w->nodes_pending++] = ip;
	return ++w->nodes;
}

int tw_event(struct tw *w, const struct tw_event *e)
{
	if (w->err)
		return -1;
	if (w->ev_count &&
	    (w->ev_tid != e->tid || w->ev_len >= TW_BATCH_TARGET || e->time_ns < w->ev_prev_time) &&
	    tw_end_batch(w))
		return -1;
	if (!w->ev_count) {
		w->ev_tid = e->tid;
		w->ev_base = w->ev_prev_time = e->time_ns;
		w->ev_prev_ptr = w->ev_prev_stack = 0;
		w->ev_prev_dev = 0;
	}
	if (w->ev_len + 10 * GMT_VARINT_MAX > w->ev_cap) {
		size_t cap = w->ev_cap ? 2 * w->ev_cap : TW_BATCH_TARGET + 1024;
		uint8_t *b = realloc(w->ev, cap);
		if (!b)
			return failed(w, ENOMEM);
		w->ev = b;
		w->ev_cap = cap;
	}
	unsigned head = (unsigned)e->api << GMT_EV_API_SHIFT;
	if (e->result)
		head |= GMT_EV_FAILED;
	if (e->device != w->ev_prev_dev)
		head |= GMT_EV_DEV_CHANGED;
	if (e->has_aux)
		head |= GMT_EV_HAS_AUX;
	if (e->has_aux2)
		head |= GMT_EV_HAS_AUX2;
	uint8_t *p = w->ev + w->ev_len;
	p = gmt_put_varint(p, head);
	p = gmt_put_varint(p, e->time_ns - w->ev_prev_time);
	p = gmt_put_varint(p, gmt_zigzag((int64_t)(e->ptr - w->ev_prev_ptr)));
	p = gmt_put_varint(p, e->size);
	p = gmt_put_varint(p, gmt_zigzag((int64_t)(e->stack - w->ev_prev_stack)));
	if (head & GMT_EV_FAILED)
		p = gmt_put_varint(p, e->result);
	if (head & GMT_EV_DEV_CHANGED)
		p = gmt_put_varint(p, gmt_zigzag(e->device));
	if (head & GMT_EV_HAS_AUX)
		p = gmt_put_varint(p, e->aux);
	if (head & GMT_EV_HAS_AUX2)
		p = gmt_put_varint(p, e->aux2);
	w->ev_len = (size_t)(p - w->ev);
	w->ev_count++;
	w->events++;
	w->ev_prev_time = e->time_ns;
	w->ev_prev_ptr = e->ptr;
	w->ev_prev_stack = e->stack;
	w->ev_prev_dev = e->device;
	return 0;
}

int tw_process(struct tw *w, uint64_t pid, uint64_t start_wall_ns, const char *host,
	       const char *exe, size_t argc, const char *const *argv, size_t nenv,
	       const char *const *env_keys, const char *const *env_values)
{
	size_t need = strlen(host) + strlen(exe) + 8 * GMT_VARINT_MAX;
	for (size_t i = 0; i < argc; i++)
		need += strlen(argv[i]) + GMT_VARINT_MAX;
	for (size_t i = 0; i < nenv; i++)
		need += strlen(env_keys[i]) + strlen(env_values[i]) + 2 * GMT_VARINT_MAX;
	uint8_t *p = tw_end_batch(w) ? NULL : tw_room(w, need);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_PROCESS);
	p = gmt_put_varint(p, pid);
	p = gmt_put_varint(p, 0);
	p = gmt_put_varint(p, start_wall_ns);
	p = put_str(p, host, strlen(host));
	p = put_str(p, exe, strlen(exe));
	p = gmt_put_varint(p, argc);
	for (size_t i = 0; i < argc; i++)
		p = put_str(p, argv[i], strlen(argv[i]));
	p = gmt_put_varint(p, nenv);
	for (size_t i = 0; i < nenv; i++) {
		p = put_str(p, env_keys[i], strlen(env_keys[i]));
		p = put_str(p, env_values[i], strlen(env_values[i]));
	}
	tw_commit(w, p);
	return 0;
}

int tw_device(struct tw *w, int64_t ordinal, const char *name, const uint8_t uuid[16],
	      uint64_t total_bytes)
{
	size_t nl = strlen(name);
	uint8_t *p = tw_end_batch(w) ? NULL : tw_room(w, nl + 16 + 8 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_DEVICE);
	p = gmt_put_varint(p, gmt_zigzag(ordinal));
	p = put_str(p, name, nl);
	p = put_str(p, (const char *)uuid, uuid ? 16 : 0);
	p = gmt_put_varint(p, total_bytes);
	p = gmt_put_varint(p, 0);
	p = gmt_put_varint(p, 0);
	p = gmt_put_varint(p, 0);
	tw_commit(w, p);
	return 0;
}

int tw_note(struct tw *w, int level, const char *text)
{
	size_t n = strlen(text);
	uint8_t *p = tw_end_batch(w) ? NULL : tw_room(w, n + 3 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_NOTE);
	p = gmt_put_varint(p, (uint64_t)level);
	p = put_str(p, text, n);
	tw_commit(w, p);
	return 0;
}

int tw_pyframe(struct tw *w, uint64_t id, const char *function, size_t flen, const char *file,
	       size_t filelen, uint64_t line)
{
	uint8_t *p = tw_end_batch(w) ? NULL : tw_room(w, flen + filelen + 5 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_PYFRAME);
	p = gmt_put_varint(p, id);
	p = put_str(p, function, flen);
	p = put_str(p, file, filelen);
	p = gmt_put_varint(p, line);
	tw_commit(w, p);
	return 0;
}

int tw_module(struct tw *w, uint64_t id, uint64_t start, uint64_t end, const char *path)
{
	size_t n = strlen(path);
	uint8_t *p = tw_end_batch(w) ? NULL : tw_room(w, n + 7 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_MODULE);
	p = gmt_put_varint(p, id);
	p = gmt_put_varint(p, 0);
	p = gmt_put_varint(p, start);
	p = gmt_put_varint(p, end);
	p = put_str(p, path, n);
	p = gmt_put_varint(p, 0); /* no build-id */
	tw_commit(w, p);
	return 0;
}

int tw_symbol(struct tw *w, uint64_t ip, uint64_t module_id, const char *function, size_t flen,
	      const char *file, size_t filelen, uint64_t line)
{
	uint8_t *p = tw_end_batch(w) ? NULL : tw_room(w, flen + filelen + 6 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_SYMBOL);
	p = gmt_put_varint(p, ip);
	p = gmt_put_varint(p, module_id);
	p = put_str(p, function, flen);
	p = put_str(p, file, filelen);
	p = gmt_put_varint(p, line);
	tw_commit(w, p);
	return 0;
}

int tw_range(struct tw *w, uint64_t tid, uint64_t time_ns, uint64_t op, uint64_t id,
	     uint64_t source, const char *text)
{
	size_t n = strlen(text);
	uint8_t *p = tw_end_batch(w) ? NULL : tw_room(w, n + 7 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_RANGE);
	p = gmt_put_varint(p, tid);
	p = gmt_put_varint(p, time_ns);
	p = gmt_put_varint(p, op);
	p = gmt_put_varint(p, id);
	p = gmt_put_varint(p, source);
	p = put_str(p, text, n);
	tw_commit(w, p);
	return 0;
}

int tw_trailer(struct tw *w, uint64_t end_ns, uint64_t lost, uint64_t reason)
{
	uint8_t *p = tw_end_batch(w) ? NULL : tw_room(w, 6 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_TRAILER);
	p = gmt_put_varint(p, end_ns);
	p = gmt_put_varint(p, w->events);
	p = gmt_put_varint(p, lost);
	p = gmt_put_varint(p, w->nodes);
	p = gmt_put_varint(p, reason);
	tw_commit(w, p);
	return 0;
}

int tw_close(struct tw *w)
{
	int rc = tw_end_batch(w) || tw_flush(w) ? -1 : 0;
	int err = w->err;
	tw_abandon(w);
	w->err = err;
	return rc;
}

void tw_abandon(struct tw *w)
{
	if (w->cctx) {
		const struct gmt_zstd *z = gmt_zstd_get(&rd_dl, NULL);
		z->ZSTD_freeCCtx(w->cctx);
	}
	free(w->chunk);
	free(w->zbuf);
	free(w->ev);
	free(w->node_parent);
	free(w->node_ip);
	memset(w, 0, sizeof *w);
}
