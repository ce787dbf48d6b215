/* Records added to a trace after its run (reader/append.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "reader/append.h"
#include "reader/internal.h"

/* The library writes a chunk once this much is pending; so do we. */
#define APPEND_CHUNK_TARGET (256u << 10)
#define ZSTD_LEVEL	    3

struct gmt_append {
	uint16_t version;
	uint64_t seq;
	uint8_t *pending; /* the chunk being filled: header room + records */
	size_t len, cap;
	uint8_t *out; /* whole chunks, ready to write */
	size_t out_len, out_cap;
	uint64_t records;
};

struct gmt_append *gmt_append_new(uint16_t version, uint64_t next_seq)
{
	struct gmt_append *a = calloc(1, sizeof(*a));
	if (a) {
		a->version = version;
		a->seq = next_seq;
		a->len = GMT_CHUNK_HEADER_SIZE;
	}
	return a;
}

void gmt_append_free(struct gmt_append *a)
{
	if (!a)
		return;
	free(a->pending);
	free(a->out);
	free(a);
}

static int reserve(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64 << 10;
	while (c < need)
		c *= 2;
	uint8_t *b = realloc(*buf, c);
	if (!b)
		return -1;
	*buf = b;
	*cap = c;
	return 0;
}

/* The pending records sealed into a chunk at the end of a->out:
 * compressed when that is allowed and smaller, as the library does. */
static int seal(struct gmt_append *a)
{
	size_t payload = a->len - GMT_CHUNK_HEADER_SIZE;
	if (!payload)
		return 0;
	const struct gmt_zstd *z = a->version >= 3 ? gmt_zstd_get(&rd_dl, NULL) : NULL;
	size_t bound = z ? gmt_chunk_zbound(z, payload) : 0;
	if (reserve(&a->out, &a->out_cap, a->out_len + GMT_CHUNK_HEADER_SIZE + payload + bound))
		return -1;
	uint8_t *c = a->out + a->out_len, *body = c + GMT_CHUNK_HEADER_SIZE;
	size_t len = 0; /* compressed: the payload on disk; 0: stored plain */
	ZSTD_CCtx *cctx = z ? z->ZSTD_createCCtx() : NULL;
	if (cctx) {
		len = gmt_chunk_compress(z, cctx, ZSTD_LEVEL, body,
					 a->pending + GMT_CHUNK_HEADER_SIZE, payload);
		z->ZSTD_freeCCtx(cctx);
	}
	bool compressed = len != 0;
	if (!compressed) {
		memcpy(body, a->pending + GMT_CHUNK_HEADER_SIZE, payload);
		len = payload;
	}
	gmt_chunk_seal(c, compressed, (uint32_t)len, (uint32_t)a->seq++);
	a->out_len += GMT_CHUNK_HEADER_SIZE + len;
	a->len = GMT_CHUNK_HEADER_SIZE;
	return 0;
}

/* Room for a record of at most n bytes, in the pending chunk. */
static uint8_t *room(struct gmt_append *a, size_t n)
{
	if (a->len > GMT_CHUNK_HEADER_SIZE && a->len + n > APPEND_CHUNK_TARGET && seal(a) != 0)
		return NULL;
	if (reserve(&a->pending, &a->cap, a->len + n))
		return NULL;
	return a->pending + a->len;
}

static int commit(struct gmt_append *a, uint8_t *end)
{
	a->len = (size_t)(end - a->pending);
	a->records++;
	return 0;
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	p = gmt_put_varint(p, n);
	if (n)
		memcpy(p, s, n);
	return p + n;
}

int gmt_append_symbol(struct gmt_append *a, uint64_t ip, uint64_t module_id, const char *function,
		      const char *file, uint64_t line)
{
	size_t n = (function ? strlen(function) : 0) + (file ? strlen(file) : 0);
	uint8_t *p = room(a, n + 6 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_SYMBOL);
	p = gmt_put_varint(p, ip);
	p = gmt_put_varint(p, module_id);
	p = put_str(p, function);
	p = put_str(p, file);
	p = gmt_put_varint(p, line);
	return commit(a, p);
}

int gmt_append_note(struct gmt_append *a, unsigned level, const char *text)
{
	uint8_t *p = room(a, strlen(text) + 3 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_NOTE);
	p = gmt_put_varint(p, level);
	p = put_str(p, text);
	return commit(a, p);
}

int gmt_append_trailer(struct gmt_append *a, uint64_t end_ns, uint64_t events, uint64_t lost,
		       uint64_t stack_nodes, uint64_t reason)
{
	uint8_t *p = room(a, 6 * GMT_VARINT_MAX);
	if (!p)
		return -1;
	p = gmt_put_varint(p, GMT_TAG_TRAILER);
	p = gmt_put_varint(p, end_ns);
	p = gmt_put_varint(p, events);
	p = gmt_put_varint(p, lost);
	p = gmt_put_varint(p, stack_nodes);
	p = gmt_put_varint(p, reason);
	return commit(a, p);
}

uint64_t gmt_append_records(const struct gmt_append *a)
{
	return a->records;
}

int gmt_append_write(struct gmt_append *a, int fd, uint64_t size)
{
	if (seal(a) != 0) {
		errno = ENOMEM;
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -1;
	bool reg = S_ISREG(st.st_mode);
	if (reg && (uint64_t)st.st_size != size) {
		errno = EAGAIN;
		return -1;
	}
	/* One chunk per write: whoever stops us part way leaves whole chunks
	 * and at most one torn tail, as the library does. */
	const uint8_t *c = a->out, *end = a->out + a->out_len;
	while (c < end) {
		size_t len = GMT_CHUNK_HEADER_SIZE + gmt_get_le32(c + 4);
		ssize_t n = write(fd, c, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)len) {
			int err = n < 0 ? errno : ENOSPC;
			if (reg && ftruncate(fd, (off_t)size) != 0) {
				/* nothing more to do: the torn tail reads as one */
			}
			errno = err;
			return -1;
		}
		c += len;
	}
	return 0;
}

bool gmt_trace_writer_alive(uint32_t pid, dev_t dev, ino_t ino)
{
	char dir[64], path[PATH_MAX];
	snprintf(dir, sizeof(dir), "/proc/%u/fd", pid);
	DIR *d = opendir(dir);
	if (!d)
		return false;
	bool alive = false;
	struct dirent *e;
	while (!alive && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		alive = stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
	}
	closedir(d);
	return alive;
}
