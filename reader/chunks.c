/* Chunks from disk: read, CRC checked, decompressed (see internal.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "reader/internal.h"

const struct gmt_dl rd_dl = {dlopen, dlsym, dlclose};

/* pread the whole range, retrying short reads; 0 ok, -1 errno set. */
int rd_read_at(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EIO; /* the file shrank under us */
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Walks the chunk headers (only when libzstd is missing) so that a trace
 * that needs it fails at open, before a command prints anything. */
int rd_has_zstd_chunk(int fd, uint64_t off, uint64_t size)
{
	uint8_t h[GMT_CHUNK_HEADER_SIZE];
	while (size - off >= GMT_CHUNK_HEADER_SIZE && rd_read_at(fd, h, sizeof(h), off) == 0) {
		uint32_t magic = gmt_get_le32(h);
		if (magic == GMT_CHUNK_MAGIC_ZSTD)
			return 1;
		if (magic != GMT_CHUNK_MAGIC)
			return 0;
		off += GMT_CHUNK_HEADER_SIZE + (uint64_t)gmt_get_le32(h + 4);
		if (off > size)
			return 0;
	}
	return 0;
}

/* Records why chunk k ends the readable part; 0 for the caller to return. */
int rd_stop(struct chunk *k, enum gmt_read_stop why, const char *fmt, ...)
{
	va_list ap;
	k->stop = why;
	va_start(ap, fmt);
	vsnprintf(k->stop_msg, sizeof(k->stop_msg), fmt, ap);
	va_end(ap);
	return 0;
}

static int stop_read(struct chunk *k, int errnum)
{
	k->stop_errnum = errnum;
	return rd_stop(k, GMT_STOP_IO, "read error: %s", strerror(errnum));
}

int rd_stop_nomem(struct chunk *k)
{
	k->stop_errnum = ENOMEM;
	return rd_stop(k, GMT_STOP_IO, "%s", strerror(ENOMEM));
}

/* 1: every byte from off to size is zero (a preallocated or zero-filled
 * tail after a crash); 0: not; -1: read error. */
static int zero_tail(int fd, uint64_t off, uint64_t size)
{
	uint8_t buf[65536];
	while (off < size) {
		uint64_t n = size - off;
		if (n > sizeof(buf))
			n = sizeof(buf);
		if (rd_read_at(fd, buf, (size_t)n, off) < 0)
			return -1;
		for (size_t i = 0; i < n; i++)
			if (buf[i])
				return 0;
		off += n;
	}
	return 1;
}

/* k->zbuf (a GMTZ payload of len bytes, CRC checked) into k->payload. 1:
 * done, *raw_len set; 0: stopped (k says why). */
static int decompress(struct gmt_reader *r, struct chunk *k, uint32_t len, uint64_t raw_before,
		      uint32_t *raw_len)
{
	const char *why;
	const struct gmt_zstd *z = gmt_zstd_get(&rd_dl, &why);
	if (!z) { /* open checked already; a file that grew since lands here */
		k->stop_errnum = ENOENT;
		return rd_stop(
		    k, GMT_STOP_IO,
		    "zstd-compressed chunk and " GMT_ZSTD_SONAME " cannot be loaded (%s)", why);
	}
	struct gmt_cursor c = {k->zbuf, k->zbuf + len, 0};
	uint64_t want = gmt_get_varint(&c);
	if (c.bad || want > GMT_CHUNK_MAX_PAYLOAD)
		return rd_stop(k, GMT_STOP_CORRUPT, "compressed chunk: bad raw length");
	/* checked before anything is allocated or decompressed */
	if (want > r->raw_limit - raw_before)
		return rd_stop(
		    k, GMT_STOP_CORRUPT,
		    "its chunks decompress to more than %u times the file's %llu bytes, "
		    "more than a trace holds; GPUMEMTRACE_MAX_EXPANSION=0 lifts the limit",
		    r->expansion, (unsigned long long)r->file_bytes);
	const uint8_t *frame = c.p;
	size_t flen = (size_t)(c.end - c.p);
	unsigned long long fcs = z->ZSTD_getFrameContentSize(frame, flen);
	if (fcs == GMT_ZSTD_CONTENTSIZE_ERROR)
		return rd_stop(k, GMT_STOP_CORRUPT, "compressed chunk: not a zstd frame");
	if (fcs != GMT_ZSTD_CONTENTSIZE_UNKNOWN && fcs != want)
		return rd_stop(k, GMT_STOP_CORRUPT,
			       "compressed chunk: frame holds %llu bytes, raw length says %llu",
			       fcs, (unsigned long long)want);
	if (grow((void **)&k->payload, &k->payload_cap, want ? (size_t)want : 1, 1) ||
	    (!r->dctx && !(r->dctx = z->ZSTD_createDCtx())))
		return rd_stop_nomem(k);
	size_t n = z->ZSTD_decompressDCtx(r->dctx, k->payload, (size_t)want, frame, flen);
	if (z->ZSTD_isError(n))
		return rd_stop(k, GMT_STOP_CORRUPT, "compressed chunk does not decompress (%s)",
			       z->ZSTD_getErrorName(n));
	if (n != want)
		return rd_stop(k, GMT_STOP_CORRUPT,
			       "compressed chunk: %zu bytes decompressed, raw length says %llu", n,
			       (unsigned long long)want);
	*raw_len = (uint32_t)want;
	return 1;
}

/* Reads, checks and validates the chunk at off (of a file of size bytes)
 * into k, its decoding starting from stack_id and event_index. Touches only
 * k, r->dctx and what open set, so it can run on the worker thread. 1:
 * loaded; 0: the readable part ends here (k says why). */
int rd_prepare(struct gmt_reader *r, struct chunk *k, uint64_t off, uint64_t size,
	       uint64_t stack_id, uint64_t event_index, uint64_t raw_before)
{
	k->off = off;
	k->stop = GMT_STOP_NONE;
	k->stop_errnum = 0;
	k->unknown = 0;
	k->ok = 0;
	if (off >= size)
		return 0; /* clean end */
	uint64_t left = size - off;
	if (left < GMT_CHUNK_HEADER_SIZE)
		return rd_stop(k, GMT_STOP_TORN, "torn chunk header (%llu of %d bytes)",
			       (unsigned long long)left, GMT_CHUNK_HEADER_SIZE);
	uint8_t h[GMT_CHUNK_HEADER_SIZE];
	if (rd_read_at(r->fd, h, sizeof(h), off) < 0)
		return stop_read(k, errno);
	uint32_t magic = gmt_get_le32(h), len = gmt_get_le32(h + 4), crc = gmt_get_le32(h + 12);
	uint64_t seq = gmt_get_le32(h + 8);
	int zstd = magic == GMT_CHUNK_MAGIC_ZSTD && r->hdr.version >= 3;
	if (magic != GMT_CHUNK_MAGIC && !zstd) {
		int z = zero_tail(r->fd, off, size);
		if (z < 0)
			return stop_read(k, errno);
		if (z)
			return rd_stop(k, GMT_STOP_TORN, "zero-filled tail");
		return rd_stop(k, GMT_STOP_CORRUPT, "bad chunk magic 0x%08x", magic);
	}
	if (len > GMT_CHUNK_MAX_PAYLOAD)
		return rd_stop(k, GMT_STOP_CORRUPT, "chunk payload length %u over the limit %u",
			       len, GMT_CHUNK_MAX_PAYLOAD);
	if ((uint64_t)len > left - GMT_CHUNK_HEADER_SIZE)
		return rd_stop(k, GMT_STOP_TORN, "torn chunk (%llu of %u payload bytes)",
			       (unsigned long long)(left - GMT_CHUNK_HEADER_SIZE), len);
	uint8_t **disk = zstd ? &k->zbuf : &k->payload;
	if (grow((void **)disk, zstd ? &k->zbuf_cap : &k->payload_cap, len ? len : 1, 1))
		return rd_stop_nomem(k);
	if (rd_read_at(r->fd, *disk, len, off + GMT_CHUNK_HEADER_SIZE) < 0)
		return stop_read(k, errno);
	uint64_t chunk_end = off + GMT_CHUNK_HEADER_SIZE + len;
	uint32_t got = gmt_crc32c(0, *disk, len);
	if (got != crc) {
		if (chunk_end == size) /* the last chunk: a write cut short by a crash */
			return rd_stop(k, GMT_STOP_TORN, "CRC mismatch in the last chunk");
		return rd_stop(k, GMT_STOP_CORRUPT, "CRC mismatch (stored 0x%08x, computed 0x%08x)",
			       crc, got);
	}
	uint32_t raw_len = len;
	if (zstd && !decompress(r, k, len, raw_before, &raw_len))
		return 0;
	if (grow((void **)&k->arena, &k->arena_cap, 2 * (size_t)raw_len + 64, 1))
		return rd_stop_nomem(k);
	k->len = len;
	if (!rd_check_records(k, off + GMT_CHUNK_HEADER_SIZE, raw_len, stack_id, event_index))
		return 0;
	k->end = chunk_end;
	k->seq = seq;
	k->crc = crc;
	k->zstd = zstd;
	k->raw_len = raw_len;
	k->raw_total = raw_before + raw_len;
	k->ok = 1;
	return 1;
}
