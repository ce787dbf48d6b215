/* Streaming trace reader: see reader.h. */
#include "reader/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/codec.h"
#include "common/zstd.h"

/* Decoding state inside one chunk's payload. Copied for the validation
 * pass, so checking a chunk never disturbs the real pass. */
struct dec {
	struct gmt_cursor c;
	const uint8_t *base;  /* payload start */
	uint64_t base_offset; /* its file offset */
	uint64_t next_stack_id;
	uint64_t event_index;
	/* the EVENTS batch being handed out */
	uint64_t ev_left, ev_tid, ev_time, ev_ptr, ev_stack;
	int64_t ev_dev;
	int ev_cols; /* an EVENTCOLS batch: its fields come from col[] */
	struct gmt_cursor col[GMT_EV_COLUMNS];
};

/* One chunk's buffers and what preparing it found. Two of them: the
 * caller reads one while the worker prepares the next (see next_chunk). */
struct chunk {
	uint8_t *payload; /* the chunk's records (decompressed for GMTZ) */
	size_t payload_cap;
	uint8_t *zbuf; /* a GMTZ chunk as on disk */
	size_t zbuf_cap;
	/* per-record scratch: string copies, argv, env, stack nodes */
	char *arena;
	size_t arena_cap, arena_used;
	struct gmt_str *argv;
	size_t argv_cap;
	struct gmt_env *env;
	size_t env_cap;
	struct gmt_stack_node *nodes;
	size_t nodes_cap;
	/* The chunk's first events as its validation decoded them, so the real
	 * pass copies them instead of decoding twice; capped, so a huge chunk
	 * decodes the rest again rather than holding them all. */
	struct gmt_event *cache;
	const uint8_t **cache_end; /* the cursor after each */
	size_t ncache;
	uint64_t cache_first; /* event_index of cache[0] */
	/* The outcome. Only the caller's thread turns it into counters and
	 * stops (commit), in file order. */
	int ok;		  /* 0: the readable part ends here; stop says why (NONE: clean end) */
	struct dec start; /* the real pass starts here */
	uint64_t next_stack_id, next_event_index; /* the next chunk's decoding starts here */
	uint64_t off, end, seq;
	uint32_t len, crc, raw_len;
	int zstd;
	int unknown; /* cut short by an unknown tag: unknown_bytes skipped */
	uint64_t unknown_bytes;
	enum gmt_read_stop stop;
	int stop_errnum;
	char stop_msg[200];
};

struct gmt_reader {
	int fd;
	struct gmt_header hdr;
	struct gmt_read_info info;
	uint64_t pos;				  /* file offset of the next chunk */
	uint64_t next_stack_id, next_event_index; /* where that chunk's decoding starts */
	int have_chunk;
	uint64_t chunk_offset, chunk_seq;
	uint32_t chunk_len, chunk_crc;
	int chunk_pending; /* the CHUNK pseudo-record is still to be handed out */
	int last_type;	   /* the last real record handed out */
	int chunk_zstd;	   /* the chunk is GMTZ: chunk_raw_len bytes decompressed */
	uint32_t chunk_raw_len;
	struct dec dec;
	struct chunk ck[2];
	struct chunk *k; /* the chunk being read */
	ZSTD_DCtx *dctx; /* only whoever prepares chunks uses it */
	/* The worker thread (GPUMEMTRACE_READER_THREADS=0, one CPU, or no thread: none,
	 * the caller prepares each chunk itself). */
	int threads, started, quit;
	int sync; /* mu and cv initialised */
	/* Chunks are numbered from the last rewind; chunk c goes into ck[c % 2].
	 * The caller's own: */
	uint64_t c_next; /* the chunk next_chunk hands out next */
	int fresh;	 /* rewound: the worker starts again from r->pos */
	/* Under mu. The worker prepares chunk w_next, at w_off, as soon as its
	 * buffers are free (w_next < wanted + 2: the caller is done with chunk
	 * w_next - 2), without waiting for the caller to ask: a worker that
	 * is the slower of the two never idles through a wake-up. */
	uint64_t wanted;		       /* the chunk the caller reads or waits for */
	uint64_t w_next, w_done;	       /* chunks [0, w_done) are prepared */
	uint64_t w_off, w_size, w_sid, w_eidx; /* where chunk w_next starts */
	int running;			       /* 0: stopped (a last chunk, or a rewind) */
	int busy;			       /* inside prepare */
	pthread_t worker;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

#define CACHE_MAX 32768

const char *gmt_rec_type_name(int type)
{
	switch (type) {
	case GMT_REC_PROCESS:
		return "PROCESS";
	case GMT_REC_MODULE:
		return "MODULE";
	case GMT_REC_DEVICE:
		return "DEVICE";
	case GMT_REC_STACK:
		return "STACK";
	case GMT_REC_THREAD:
		return "THREAD";
	case GMT_REC_EVENTS:
		return "EVENTS";
	case GMT_REC_LOST:
		return "LOST";
	case GMT_REC_SYMBOL:
		return "SYMBOL";
	case GMT_REC_NOTE:
		return "NOTE";
	case GMT_REC_TRAILER:
		return "TRAILER";
	case GMT_REC_MEMINFO:
		return "MEMINFO";
	case GMT_REC_SAMPLE:
		return "SAMPLE";
	case GMT_REC_RANGE:
		return "RANGE";
	case GMT_REC_PYFRAME:
		return "PYFRAME";
	case GMT_REC_EVENT:
		return "EVENT";
	case GMT_REC_CHUNK:
		return "CHUNK";
	}
	return "?";
}

static void set_err(struct gmt_read_error *err, enum gmt_read_err code, int errnum, const char *fmt,
		    ...) __attribute__((format(printf, 4, 5)));
static void set_err(struct gmt_read_error *err, enum gmt_read_err code, int errnum, const char *fmt,
		    ...)
{
	va_list ap;
	err->code = code;
	err->errnum = errnum;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

/* pread the whole range, retrying short reads; 0 ok, -1 errno set. */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
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
static int has_zstd_chunk(int fd, uint64_t off, uint64_t size)
{
	uint8_t h[GMT_CHUNK_HEADER_SIZE];
	while (size - off >= GMT_CHUNK_HEADER_SIZE && read_at(fd, h, sizeof(h), off) == 0) {
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

/* A worker thread to prepare the next chunk: GPUMEMTRACE_READER_THREADS=0
 * says never, 1 always; by default, where this process may use two CPUs. */
static int want_worker(void)
{
	static int warned; /* once per process, however many traces it reads */
	const char *e = getenv("GPUMEMTRACE_READER_THREADS");
	if (e && (!strcmp(e, "0") || !strcmp(e, "1")))
		return *e == '1';
	if (e && *e && !warned) {
		warned = 1;
		fprintf(stderr,
			"gpumemtrace: ignoring GPUMEMTRACE_READER_THREADS='%s' (want 0 or 1)\n", e);
	}
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) < 2)
		return 0;
	return 1;
}

struct gmt_reader *gmt_reader_open(const char *path, struct gmt_read_error *err)
{
	memset(err, 0, sizeof(*err));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		set_err(err, GMT_READ_ERR_OPEN, errno, "%s", strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		set_err(err, GMT_READ_ERR_OPEN, errno, "%s", strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		set_err(err, GMT_READ_ERR_OPEN, EISDIR, "%s", strerror(EISDIR));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		set_err(err, GMT_READ_ERR_OPEN, 0, "not a regular file");
		goto fail;
	}
	uint64_t size = (uint64_t)st.st_size;
	uint8_t h[GMT_HEADER_SIZE] = {0};
	size_t have = size < GMT_HEADER_SIZE ? (size_t)size : GMT_HEADER_SIZE;
	if (read_at(fd, h, have, 0) < 0) {
		set_err(err, GMT_READ_ERR_OPEN, errno, "%s", strerror(errno));
		goto fail;
	}
	if (size == 0) {
		set_err(err, GMT_READ_ERR_NOT_TRACE, 0, "not a trace: empty file");
		goto fail;
	}
	if (size < GMT_MAGIC_LEN || memcmp(h, GMT_MAGIC, GMT_MAGIC_LEN) != 0) {
		set_err(err, GMT_READ_ERR_NOT_TRACE, 0, "not a trace (bad magic)");
		goto fail;
	}
	if (size < GMT_HDR_HEADER_SIZE) {
		set_err(err, GMT_READ_ERR_NOT_TRACE, 0,
			"not a trace: truncated header (%llu of %d bytes)",
			(unsigned long long)size, GMT_HEADER_SIZE);
		goto fail;
	}
	struct gmt_header hdr = {0};
	hdr.version = gmt_get_le16(h + GMT_HDR_VERSION);
	if (hdr.version > GMT_FORMAT_VERSION) {
		set_err(err, GMT_READ_ERR_VERSION, 0,
			"unsupported future version %u (this build reads version %d)",
			(unsigned)hdr.version, GMT_FORMAT_VERSION);
		goto fail;
	}
	if (hdr.version < GMT_FORMAT_VERSION_MIN) {
		set_err(err, GMT_READ_ERR_HEADER, 0, "corrupt header: version %u",
			(unsigned)hdr.version);
		goto fail;
	}
	if (size < GMT_HEADER_SIZE) {
		set_err(err, GMT_READ_ERR_NOT_TRACE, 0,
			"not a trace: truncated header (%llu of %d bytes)",
			(unsigned long long)size, GMT_HEADER_SIZE);
		goto fail;
	}
	hdr.header_size = gmt_get_le16(h + GMT_HDR_HEADER_SIZE);
	hdr.endian = h[GMT_HDR_ENDIAN];
	hdr.features = gmt_get_le32(h + GMT_HDR_FEATURES);
	hdr.start_wall_ns = gmt_get_le64(h + GMT_HDR_START_WALL);
	hdr.start_mono_ns = gmt_get_le64(h + GMT_HDR_START_MONO);
	hdr.pid = gmt_get_le32(h + GMT_HDR_PID);
	if (hdr.header_size < GMT_HEADER_SIZE) {
		set_err(err, GMT_READ_ERR_HEADER, 0, "corrupt header: header_size %u < %d",
			(unsigned)hdr.header_size, GMT_HEADER_SIZE);
		goto fail;
	}
	if (hdr.header_size > size) {
		set_err(err, GMT_READ_ERR_HEADER, 0,
			"corrupt header: header_size %u is past the end of the file (%llu bytes)",
			(unsigned)hdr.header_size, (unsigned long long)size);
		goto fail;
	}
	if (hdr.endian != GMT_ENDIAN_LITTLE) {
		set_err(err, GMT_READ_ERR_HEADER, 0, "corrupt header: endianness byte %u",
			(unsigned)hdr.endian);
		goto fail;
	}

	const char *why;
	if (hdr.version >= 3 && !gmt_zstd_get(&why) && has_zstd_chunk(fd, hdr.header_size, size)) {
		set_err(err, GMT_READ_ERR_ZSTD, 0,
			"has zstd-compressed chunks and " GMT_ZSTD_SONAME " cannot be loaded (%s)",
			why);
		goto fail;
	}

	struct gmt_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		set_err(err, GMT_READ_ERR_OPEN, ENOMEM, "%s", strerror(ENOMEM));
		goto fail;
	}
	r->fd = fd;
	r->hdr = hdr;
	r->info.file_size = size;
	r->threads = want_worker();
	if (r->threads && (pthread_mutex_init(&r->mu, NULL) || pthread_cond_init(&r->cv, NULL)))
		r->threads = 0; /* glibc's never fail; the serial path if they do */
	r->sync = r->threads;
	gmt_reader_rewind(r);
	return r;
fail:
	close(fd);
	return NULL;
}

void gmt_reader_close(struct gmt_reader *r)
{
	if (!r)
		return;
	if (r->started) {
		pthread_mutex_lock(&r->mu);
		r->quit = 1; /* after the chunk it may be preparing */
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->worker, NULL);
	}
	if (r->sync) {
		pthread_mutex_destroy(&r->mu);
		pthread_cond_destroy(&r->cv);
	}
	close(r->fd);
	if (r->dctx)
		gmt_zstd_get(NULL)->ZSTD_freeDCtx(r->dctx);
	for (int i = 0; i < 2; i++) {
		struct chunk *k = &r->ck[i];
		free(k->zbuf);
		free(k->payload);
		free(k->arena);
		free(k->argv);
		free(k->env);
		free(k->nodes);
		free(k->cache);
		free(k->cache_end);
	}
	free(r);
}

const struct gmt_header *gmt_reader_header(const struct gmt_reader *r)
{
	return &r->hdr;
}

const struct gmt_read_info *gmt_reader_info(const struct gmt_reader *r)
{
	return &r->info;
}

void gmt_reader_rewind(struct gmt_reader *r)
{
	if (r->started) { /* what the worker prepared ahead is dropped */
		pthread_mutex_lock(&r->mu);
		r->running = 0;
		while (r->busy)
			pthread_cond_wait(&r->cv, &r->mu);
		pthread_mutex_unlock(&r->mu);
	}
	r->fresh = 1;
	r->c_next = 0;
	uint64_t size = r->info.file_size;
	memset(&r->info, 0, sizeof(r->info));
	r->info.file_size = size;
	r->info.readable_end = r->hdr.header_size;
	r->pos = r->hdr.header_size;
	r->have_chunk = 0;
	r->chunk_pending = 0;
	r->last_type = 0;
	r->k = NULL;
	memset(&r->dec, 0, sizeof(r->dec));
	r->dec.next_stack_id = 1;
	r->next_stack_id = 1;
	r->next_event_index = 0;
}

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

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	if (n <= *cap)
		return 0;
	size_t want = *cap ? *cap : 16;
	while (want < n)
		want *= 2;
	void *p = realloc(*arr, want * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = want;
	return 0;
}

/* ---- records --------------------------------------------------------- */

enum { DEC_END = 0, DEC_RECORD = 1, DEC_BAD = -1, DEC_UNKNOWN = -2, DEC_NOMEM = -3 };

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

/* Where the next event of the batch starts (the head column's place in an
 * EVENTCOLS batch): for offsets in messages. */
static const uint8_t *ev_at(const struct dec *d)
{
	return d->ev_cols ? d->col[0].p : d->c.p;
}

static int dec_event(struct dec *d, struct gmt_record *rec)
{
	rec->type = GMT_REC_EVENT;
	rec->offset = d->base_offset + (uint64_t)(ev_at(d) - d->base);
	return dec_ev(d, &rec->u.event);
}

/* Moves the real pass past cached events [i, i + n) of the chunk. An
 * EVENTCOLS batch is cached whole or not at all, and its record header has
 * moved the cursor past its columns already: there only the head column
 * moves, for the offsets `dump` shows. */
static void take_cached(struct chunk *k, struct dec *d, size_t i, size_t n)
{
	const struct gmt_event *last = &k->cache[i + n - 1];
	if (d->ev_cols)
		d->col[0].p = k->cache_end[i + n - 1];
	else
		d->c.p = k->cache_end[i + n - 1];
	d->event_index += n;
	d->ev_left -= n;
	/* what decoding the next event of the batch starts from */
	d->ev_time = last->time_ns;
	d->ev_ptr = last->ptr;
	d->ev_stack = last->stack_id;
	d->ev_dev = last->device;
}

/* Decodes the next record (or event) of chunk k; cached: the real pass,
 * which may take events from k's cache. */
static int dec_next(struct chunk *k, struct dec *d, struct gmt_record *rec, int cached)
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
	switch (tag) {
	case GMT_TAG_PROCESS: {
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
		break;
	}
	case GMT_TAG_MODULE:
		rec->type = GMT_REC_MODULE;
		rec->u.module.id = gmt_get_varint(c);
		rec->u.module.load_bias = gmt_get_varint(c);
		rec->u.module.start = gmt_get_varint(c);
		rec->u.module.end = gmt_get_varint(c);
		rec->u.module.path = get_str(k, c);
		rec->u.module.build_id = get_blob(c);
		break;
	case GMT_TAG_DEVICE:
		rec->type = GMT_REC_DEVICE;
		rec->u.device.ordinal = gmt_get_zigzag(c);
		rec->u.device.name = get_str(k, c);
		rec->u.device.uuid = get_blob(c);
		rec->u.device.total_bytes = gmt_get_varint(c);
		rec->u.device.cc_major = gmt_get_varint(c);
		rec->u.device.cc_minor = gmt_get_varint(c);
		rec->u.device.driver_version = gmt_get_varint(c);
		break;
	case GMT_TAG_STACK: {
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
		break;
	}
	case GMT_TAG_THREAD:
		rec->type = GMT_REC_THREAD;
		rec->u.thread.tid = gmt_get_varint(c);
		rec->u.thread.name = get_str(k, c);
		break;
	case GMT_TAG_EVENTS:
		rec->type = GMT_REC_EVENTS;
		rec->u.events.tid = gmt_get_varint(c);
		rec->u.events.base_time_ns = gmt_get_varint(c);
		rec->u.events.count = gmt_get_varint(c);
		/* each event takes >= 5 bytes */
		if (c->bad || rec->u.events.count > left_bytes(c) / 5)
			return DEC_BAD;
		rec->u.events.columns = false;
		d->ev_cols = 0;
		goto events;
	case GMT_TAG_EVENTCOLS: {
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
	}
	events:
		d->ev_left = rec->u.events.count;
		d->ev_tid = rec->u.events.tid;
		d->ev_time = rec->u.events.base_time_ns;
		d->ev_ptr = 0;
		d->ev_stack = 0;
		d->ev_dev = 0;
		break;
	case GMT_TAG_LOST:
		rec->type = GMT_REC_LOST;
		rec->u.lost.tid = gmt_get_varint(c);
		rec->u.lost.count = gmt_get_varint(c);
		rec->u.lost.time_ns = gmt_get_varint(c);
		break;
	case GMT_TAG_SYMBOL:
		rec->type = GMT_REC_SYMBOL;
		rec->u.symbol.ip = gmt_get_varint(c);
		rec->u.symbol.module_id = gmt_get_varint(c);
		rec->u.symbol.function = get_str(k, c);
		rec->u.symbol.file = get_str(k, c);
		rec->u.symbol.line = gmt_get_varint(c);
		break;
	case GMT_TAG_NOTE:
		rec->type = GMT_REC_NOTE;
		rec->u.note.level = gmt_get_varint(c);
		rec->u.note.text = get_str(k, c);
		break;
	case GMT_TAG_TRAILER:
		rec->type = GMT_REC_TRAILER;
		rec->u.trailer.end_time_ns = gmt_get_varint(c);
		rec->u.trailer.events = gmt_get_varint(c);
		rec->u.trailer.lost = gmt_get_varint(c);
		rec->u.trailer.stack_nodes = gmt_get_varint(c);
		rec->u.trailer.reason = gmt_get_varint(c);
		break;
	case GMT_TAG_MEMINFO:
		rec->type = GMT_REC_MEMINFO;
		rec->u.meminfo.tid = gmt_get_varint(c);
		rec->u.meminfo.time_ns = gmt_get_varint(c);
		rec->u.meminfo.device = gmt_get_zigzag(c);
		rec->u.meminfo.free_bytes = gmt_get_varint(c);
		rec->u.meminfo.total_bytes = gmt_get_varint(c);
		rec->u.meminfo.api = gmt_get_varint(c);
		break;
	case GMT_TAG_SAMPLE:
		rec->type = GMT_REC_SAMPLE;
		rec->u.sample.time_ns = gmt_get_varint(c);
		rec->u.sample.nvml_index = gmt_get_varint(c);
		rec->u.sample.uuid = get_blob(c);
		rec->u.sample.used_bytes = gmt_get_varint(c);
		rec->u.sample.total_bytes = gmt_get_varint(c);
		rec->u.sample.flags = gmt_get_varint(c);
		rec->u.sample.process_used_bytes = gmt_get_varint(c);
		rec->u.sample.reason = gmt_get_varint(c);
		break;
	case GMT_TAG_RANGE:
		rec->type = GMT_REC_RANGE;
		rec->u.range.tid = gmt_get_varint(c);
		rec->u.range.time_ns = gmt_get_varint(c);
		rec->u.range.op = gmt_get_varint(c);
		rec->u.range.id = gmt_get_varint(c);
		rec->u.range.source = gmt_get_varint(c);
		rec->u.range.text = get_str(k, c);
		break;
	case GMT_TAG_PYFRAME:
		rec->type = GMT_REC_PYFRAME;
		rec->u.pyframe.id = gmt_get_varint(c);
		rec->u.pyframe.function = get_str(k, c);
		rec->u.pyframe.file = get_str(k, c);
		rec->u.pyframe.line = gmt_get_varint(c);
		break;
	default:
		return DEC_UNKNOWN; /* rec->offset: where the unknown tag starts */
	}
	return c->bad ? DEC_BAD : DEC_RECORD;
}

/* ---- chunks ---------------------------------------------------------- */

/* Records why chunk k ends the readable part; 0 for the caller to return. */
static int stop(struct chunk *k, enum gmt_read_stop why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int stop(struct chunk *k, enum gmt_read_stop why, const char *fmt, ...)
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
	return stop(k, GMT_STOP_IO, "read error: %s", strerror(errnum));
}

static int stop_nomem(struct chunk *k)
{
	k->stop_errnum = ENOMEM;
	return stop(k, GMT_STOP_IO, "%s", strerror(ENOMEM));
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
		if (read_at(fd, buf, (size_t)n, off) < 0)
			return -1;
		for (size_t i = 0; i < n; i++)
			if (buf[i])
				return 0;
		off += n;
	}
	return 1;
}

static const char *tag_name(uint64_t tag)
{
	if (tag == GMT_TAG_EVENTCOLS)
		return "EVENTCOLS";
	return tag >= 1 && tag <= GMT_TAG_MAX_ ? gmt_rec_type_name((int)tag) : "unknown";
}

/* k->zbuf (a GMTZ payload of len bytes, CRC checked) into k->payload. 1:
 * done, *raw_len set; 0: stopped (k says why). */
static int decompress(struct gmt_reader *r, struct chunk *k, uint32_t len, uint32_t *raw_len)
{
	const char *why;
	const struct gmt_zstd *z = gmt_zstd_get(&why);
	if (!z) { /* open checked already; a file that grew since lands here */
		k->stop_errnum = ENOENT;
		return stop(k, GMT_STOP_IO,
			    "zstd-compressed chunk and " GMT_ZSTD_SONAME " cannot be loaded (%s)",
			    why);
	}
	struct gmt_cursor c = {k->zbuf, k->zbuf + len, 0};
	uint64_t want = gmt_get_varint(&c);
	if (c.bad || want > GMT_CHUNK_MAX_PAYLOAD)
		return stop(k, GMT_STOP_CORRUPT, "compressed chunk: bad raw length");
	const uint8_t *frame = c.p;
	size_t flen = (size_t)(c.end - c.p);
	unsigned long long fcs = z->ZSTD_getFrameContentSize(frame, flen);
	if (fcs == GMT_ZSTD_CONTENTSIZE_ERROR)
		return stop(k, GMT_STOP_CORRUPT, "compressed chunk: not a zstd frame");
	if (fcs != GMT_ZSTD_CONTENTSIZE_UNKNOWN && fcs != want)
		return stop(k, GMT_STOP_CORRUPT,
			    "compressed chunk: frame holds %llu bytes, raw length says %llu", fcs,
			    (unsigned long long)want);
	if (grow((void **)&k->payload, &k->payload_cap, want ? (size_t)want : 1, 1) ||
	    (!r->dctx && !(r->dctx = z->ZSTD_createDCtx())))
		return stop_nomem(k);
	size_t n = z->ZSTD_decompressDCtx(r->dctx, k->payload, (size_t)want, frame, flen);
	if (z->ZSTD_isError(n))
		return stop(k, GMT_STOP_CORRUPT, "compressed chunk does not decompress (%s)",
			    z->ZSTD_getErrorName(n));
	if (n != want)
		return stop(k, GMT_STOP_CORRUPT,
			    "compressed chunk: %zu bytes decompressed, raw length says %llu", n,
			    (unsigned long long)want);
	*raw_len = (uint32_t)want;
	return 1;
}

/* Reads, checks and validates the chunk at off (of a file of size bytes)
 * into k, its decoding starting from stack_id and event_index. Touches only
 * k, r->dctx and what open set, so it can run on the worker thread. 1:
 * loaded; 0: the readable part ends here (k says why). */
static int prepare(struct gmt_reader *r, struct chunk *k, uint64_t off, uint64_t size,
		   uint64_t stack_id, uint64_t event_index)
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
		return stop(k, GMT_STOP_TORN, "torn chunk header (%llu of %d bytes)",
			    (unsigned long long)left, GMT_CHUNK_HEADER_SIZE);
	uint8_t h[GMT_CHUNK_HEADER_SIZE];
	if (read_at(r->fd, h, sizeof(h), off) < 0)
		return stop_read(k, errno);
	uint32_t magic = gmt_get_le32(h), len = gmt_get_le32(h + 4), crc = gmt_get_le32(h + 12);
	uint64_t seq = gmt_get_le32(h + 8);
	int zstd = magic == GMT_CHUNK_MAGIC_ZSTD && r->hdr.version >= 3;
	if (magic != GMT_CHUNK_MAGIC && !zstd) {
		int z = zero_tail(r->fd, off, size);
		if (z < 0)
			return stop_read(k, errno);
		if (z)
			return stop(k, GMT_STOP_TORN, "zero-filled tail");
		return stop(k, GMT_STOP_CORRUPT, "bad chunk magic 0x%08x", magic);
	}
	if (len > GMT_CHUNK_MAX_PAYLOAD)
		return stop(k, GMT_STOP_CORRUPT, "chunk payload length %u over the limit %u", len,
			    GMT_CHUNK_MAX_PAYLOAD);
	if ((uint64_t)len > left - GMT_CHUNK_HEADER_SIZE)
		return stop(k, GMT_STOP_TORN, "torn chunk (%llu of %u payload bytes)",
			    (unsigned long long)(left - GMT_CHUNK_HEADER_SIZE), len);
	uint8_t **disk = zstd ? &k->zbuf : &k->payload;
	if (grow((void **)disk, zstd ? &k->zbuf_cap : &k->payload_cap, len ? len : 1, 1))
		return stop_nomem(k);
	if (read_at(r->fd, *disk, len, off + GMT_CHUNK_HEADER_SIZE) < 0)
		return stop_read(k, errno);
	uint64_t chunk_end = off + GMT_CHUNK_HEADER_SIZE + len;
	uint32_t got = gmt_crc32c(0, *disk, len);
	if (got != crc) {
		if (chunk_end == size) /* the last chunk: a write cut short by a crash */
			return stop(k, GMT_STOP_TORN, "CRC mismatch in the last chunk");
		return stop(k, GMT_STOP_CORRUPT, "CRC mismatch (stored 0x%08x, computed 0x%08x)",
			    crc, got);
	}
	uint32_t raw_len = len;
	if (zstd && !decompress(r, k, len, &raw_len))
		return 0;
	if (grow((void **)&k->arena, &k->arena_cap, 2 * (size_t)raw_len + 64, 1))
		return stop_nomem(k);
	k->len = len;
	len = raw_len; /* from here on: the records */

	struct dec d = {0};
	d.c = (struct gmt_cursor){k->payload, k->payload + len, 0};
	d.base = k->payload;
	d.base_offset = off + GMT_CHUNK_HEADER_SIZE;
	d.next_stack_id = stack_id;
	d.event_index = event_index;
	k->start = d; /* the real pass starts from here */
	k->ncache = 0;
	k->cache_first = d.event_index;
	struct gmt_record rec;
	for (;;) {
		int rc = dec_next(k, &d, &rec, 0);
		if (rc == DEC_RECORD) {
			if (rec.type != GMT_REC_EVENTS || !d.ev_left)
				continue;
			if (!k->cache) {
				k->cache = malloc(CACHE_MAX * sizeof(*k->cache));
				k->cache_end = malloc(CACHE_MAX * sizeof(*k->cache_end));
				if (!k->cache_end) {
					free(k->cache);
					k->cache = NULL;
				}
			}
			/* the batch's events straight into the cache while it has
			 * room; an EVENTCOLS batch only whole (see take_cached) */
			int room = !d.ev_cols || k->ncache + d.ev_left <= CACHE_MAX;
			if (room && k->cache && d.ev_cols &&
			    d.event_index == k->cache_first + k->ncache) {
				size_t n = (size_t)d.ev_left, at = k->ncache;
				const uint8_t *head0 = d.col[0].p;
				size_t ok_n = dec_ev_batch(&d, &k->cache[at], &k->cache_end[at], n);
				if (ok_n != n) {
					const uint8_t *hp =
					    ok_n ? k->cache_end[at + ok_n - 1] : head0;
					return stop(k, GMT_STOP_CORRUPT,
						    "malformed event at offset %llu",
						    (unsigned long long)(d.base_offset +
									 (uint64_t)(hp - d.base)));
				}
				k->ncache += n;
				continue;
			}
			while (room && k->cache && d.ev_left && k->ncache < CACHE_MAX &&
			       d.event_index == k->cache_first + k->ncache) {
				rec.offset = d.base_offset + (uint64_t)(ev_at(&d) - d.base);
				if (dec_ev(&d, &k->cache[k->ncache]) != DEC_RECORD)
					return stop(k, GMT_STOP_CORRUPT,
						    "malformed event at offset %llu",
						    (unsigned long long)rec.offset);
				k->cache_end[k->ncache] = ev_at(&d);
				k->ncache++;
			}
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
		if (rc == DEC_NOMEM)
			return stop_nomem(k);
		if (d.ev_left)
			return stop(k, GMT_STOP_CORRUPT, "malformed event at offset %llu",
				    (unsigned long long)rec.offset);
		uint64_t tag_at = rec.offset - d.base_offset;
		struct gmt_cursor tc = {k->payload + tag_at, k->payload + len, 0};
		return stop(k, GMT_STOP_CORRUPT, "malformed %s record at offset %llu",
			    tag_name(gmt_get_varint(&tc)), (unsigned long long)rec.offset);
	}
	k->next_stack_id = d.next_stack_id;
	k->next_event_index = d.event_index;
	k->end = chunk_end;
	k->seq = seq;
	k->crc = crc;
	k->zstd = zstd;
	k->raw_len = raw_len;
	k->ok = 1;
	return 1;
}

/* ---- the worker ------------------------------------------------------ */

static void *worker_main(void *arg)
{
	struct gmt_reader *r = arg;
	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->quit && !(r->running && r->w_next < r->wanted + 2))
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->quit)
			break;
		uint64_t c = r->w_next;
		struct chunk *k = &r->ck[c % 2];
		uint64_t off = r->w_off, size = r->w_size, sid = r->w_sid, eidx = r->w_eidx;
		r->busy = 1;
		pthread_mutex_unlock(&r->mu);
		prepare(r, k, off, size, sid, eidx);
		pthread_mutex_lock(&r->mu);
		r->busy = 0;
		if (r->running) { /* not rewound meanwhile */
			r->w_done = r->w_next = c + 1;
			if (k->ok) { /* the next chunk starts where this one ended */
				r->w_off = k->end;
				r->w_sid = k->next_stack_id;
				r->w_eidx = k->next_event_index;
			} else {
				r->running = 0; /* nothing past the end or a bad chunk */
			}
		}
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* Starts the worker. 0: started; -1: it could not be: the caller prepares
 * chunks itself. */
static int start_worker(struct gmt_reader *r)
{
	/* signals stay with the caller's threads, as without a worker */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&r->worker, NULL, worker_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		r->threads = 0;
		return -1;
	}
	r->started = 1;
	return 0;
}

/* Applies a prepared chunk on the caller's thread, in file order: every
 * counter and stop, as reading it there would. 1: loaded; 0: the end. */
static int commit(struct gmt_reader *r, struct chunk *k)
{
	if (!k->ok) {
		if (k->stop != GMT_STOP_NONE) {
			r->info.stop = k->stop;
			r->info.stop_offset = k->off;
			r->info.stop_errnum = k->stop_errnum;
			memcpy(r->info.stop_msg, k->stop_msg, sizeof(r->info.stop_msg));
		}
		return 0;
	}
	if (k->unknown) {
		r->info.unknown_chunks++;
		r->info.unknown_bytes += k->unknown_bytes;
	}
	if (r->info.chunks == 0)
		r->info.seq_first = k->seq;
	else if (k->seq != ((r->chunk_seq + 1) & 0xffffffffu))
		r->info.seq_gaps++;
	r->info.chunks++;
	r->chunk_offset = k->off;
	r->chunk_seq = k->seq;
	r->chunk_len = k->len;
	r->chunk_crc = k->crc;
	r->chunk_zstd = k->zstd;
	r->chunk_raw_len = k->raw_len;
	r->info.readable_end = k->end;
	r->pos = k->end;
	r->next_stack_id = k->next_stack_id;
	r->next_event_index = k->next_event_index;
	r->dec = k->start;
	r->k = k;
	return 1;
}

/* The chunk at r->pos, prepared. With a worker it was prepared while the
 * caller read the chunk before it, and the worker goes on to the next one
 * into the buffers of the chunk just read: at most two chunks in memory. */
static struct chunk *next_chunk(struct gmt_reader *r)
{
	if (r->threads) {
		if (!r->started && start_worker(r) < 0)
			goto serial;
		pthread_mutex_lock(&r->mu);
		if (r->fresh) {
			r->fresh = 0;
			r->w_next = r->w_done = 0;
			r->w_off = r->pos;
			r->w_size = r->info.file_size;
			r->w_sid = r->next_stack_id;
			r->w_eidx = r->next_event_index;
			r->running = 1;
		}
		r->wanted = r->c_next; /* done with the chunk before it */
		pthread_cond_broadcast(&r->cv);
		while (r->w_done <= r->c_next)
			pthread_cond_wait(&r->cv, &r->mu);
		pthread_mutex_unlock(&r->mu);
		return &r->ck[r->c_next++ % 2];
	}
serial:
	prepare(r, &r->ck[0], r->pos, r->info.file_size, r->next_stack_id, r->next_event_index);
	return &r->ck[0];
}

int gmt_reader_next(struct gmt_reader *r, struct gmt_record *rec)
{
	for (;;) {
		if (r->info.eof)
			return 0;
		if (r->chunk_pending) {
			r->chunk_pending = 0;
			memset(rec, 0, sizeof(*rec));
			rec->type = GMT_REC_CHUNK;
			rec->chunk_offset = rec->offset = r->chunk_offset;
			rec->u.chunk.index = r->info.chunks - 1;
			rec->u.chunk.seq = r->chunk_seq;
			rec->u.chunk.payload_len = r->chunk_len;
			rec->u.chunk.crc = r->chunk_crc;
			rec->u.chunk.zstd = r->chunk_zstd;
			rec->u.chunk.raw_len = r->chunk_raw_len;
			return 1;
		}
		if (!r->have_chunk) {
			if (!commit(r, next_chunk(r))) {
				r->info.eof = 1;
				r->info.unreadable = r->info.file_size - r->info.readable_end;
				r->info.complete = r->last_type == GMT_REC_TRAILER;
				return 0;
			}
			r->have_chunk = 1;
			r->chunk_pending = 1;
			continue;
		}
		int rc = dec_next(r->k, &r->dec, rec, 1);
		if (rc == DEC_RECORD) {
			r->last_type = rec->type;
			if (rec->type == GMT_REC_EVENT)
				r->info.events++;
			else
				r->info.records++;
			return 1;
		}
		/* end of chunk: validated, so nothing else can happen here */
		r->have_chunk = 0;
	}
}

size_t gmt_reader_next_events(struct gmt_reader *r, const struct gmt_event **evs)
{
	struct dec *d = &r->dec;
	if (r->info.eof || r->chunk_pending || !r->have_chunk || !d->ev_left ||
	    d->event_index - r->k->cache_first >= r->k->ncache)
		return 0;
	struct chunk *k = r->k;
	size_t i = d->event_index - k->cache_first, n = k->ncache - i;
	if (n > d->ev_left)
		n = d->ev_left;
	*evs = &k->cache[i];
	take_cached(k, d, i, n);
	r->last_type = GMT_REC_EVENT;
	r->info.events += n;
	return n;
}
