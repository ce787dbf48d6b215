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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/internal.h"
#include "reader/pickle.h"
#include "reader/snapimport.h"

/* No default: -Wswitch names a new type without a name here. */
const char *gmt_rec_type_name(int type)
{
	switch ((enum gmt_rec_type)type) {
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
	case GMT_REC_COUNTERS:
		return "COUNTERS";
	case GMT_REC_FWSEG:
		return "FWSEG";
	case GMT_REC_FWTRACE:
		return "FWTRACE";
	case GMT_REC_FWSNAP:
		return "FWSNAP";
	case GMT_REC_FWOOM:
		return "FWOOM";
	case GMT_REC_EXIT:
		return "EXIT";
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

/* How many times its size a file may decompress to (see raw_limit):
 * GPUMEMTRACE_MAX_EXPANSION, 0 for no limit. Real traces expand 1-6 times,
 * a tight loop of identical calls about 40 times (docs/reliability.md). */
#define EXPANSION_DEFAULT 256u
static unsigned max_expansion(void)
{
	static int warned;
	const char *e = getenv("GPUMEMTRACE_MAX_EXPANSION");
	if (!e || !*e)
		return EXPANSION_DEFAULT;
	char *end;
	errno = 0;
	unsigned long v = strtoul(e, &end, 10);
	if (*end || errno || v > 1000000000ul || *e == '-' || *e == '+' || *e == ' ') {
		if (!warned) {
			warned = 1;
			fprintf(stderr,
				"gpumemtrace: ignoring GPUMEMTRACE_MAX_EXPANSION='%s' (want 0, no "
				"limit, or a factor up to 1000000000); using %u\n",
				e, EXPANSION_DEFAULT);
		}
		return EXPANSION_DEFAULT;
	}
	return (unsigned)v;
}

/* The fixed header of a file of size bytes. 0: *hdr filled; -1: *err says
 * why not. */
static int read_header(int fd, uint64_t size, struct gmt_header *hdr, struct gmt_read_error *err)
{
	uint8_t h[GMT_HEADER_SIZE] = {0};
	size_t have = size < GMT_HEADER_SIZE ? (size_t)size : GMT_HEADER_SIZE;
	if (rd_read_at(fd, h, have, 0) < 0) {
		set_err(err, GMT_READ_ERR_OPEN, errno, "%s", strerror(errno));
		return -1;
	}
	if (size == 0) {
		set_err(err, GMT_READ_ERR_NOT_TRACE, 0, "not a trace: empty file");
		return -1;
	}
	if (size < GMT_MAGIC_LEN || memcmp(h, GMT_MAGIC, GMT_MAGIC_LEN) != 0) {
		set_err(err, GMT_READ_ERR_NOT_TRACE, 0, "not a trace (bad magic)");
		return -1;
	}
	if (size < GMT_HDR_HEADER_SIZE) {
		set_err(err, GMT_READ_ERR_NOT_TRACE, 0,
			"not a trace: truncated header (%llu of %d bytes)",
			(unsigned long long)size, GMT_HEADER_SIZE);
		return -1;
	}
	hdr->version = gmt_get_le16(h + GMT_HDR_VERSION);
	if (hdr->version > GMT_FORMAT_VERSION) {
		set_err(err, GMT_READ_ERR_VERSION, 0,
			"unsupported future version %u (this build reads version %d)",
			(unsigned)hdr->version, GMT_FORMAT_VERSION);
		return -1;
	}
	if (hdr->version < GMT_FORMAT_VERSION_MIN) {
		set_err(err, GMT_READ_ERR_HEADER, 0, "corrupt header: version %u",
			(unsigned)hdr->version);
		return -1;
	}
	if (size < GMT_HEADER_SIZE) {
		set_err(err, GMT_READ_ERR_NOT_TRACE, 0,
			"not a trace: truncated header (%llu of %d bytes)",
			(unsigned long long)size, GMT_HEADER_SIZE);
		return -1;
	}
	hdr->header_size = gmt_get_le16(h + GMT_HDR_HEADER_SIZE);
	hdr->endian = h[GMT_HDR_ENDIAN];
	hdr->features = gmt_get_le32(h + GMT_HDR_FEATURES);
	hdr->start_wall_ns = gmt_get_le64(h + GMT_HDR_START_WALL);
	hdr->start_mono_ns = gmt_get_le64(h + GMT_HDR_START_MONO);
	hdr->pid = gmt_get_le32(h + GMT_HDR_PID);
	if (hdr->header_size < GMT_HEADER_SIZE) {
		set_err(err, GMT_READ_ERR_HEADER, 0, "corrupt header: header_size %u < %d",
			(unsigned)hdr->header_size, GMT_HEADER_SIZE);
		return -1;
	}
	if (hdr->header_size > size) {
		set_err(err, GMT_READ_ERR_HEADER, 0,
			"corrupt header: header_size %u is past the end of the file (%llu bytes)",
			(unsigned)hdr->header_size, (unsigned long long)size);
		return -1;
	}
	if (hdr->endian != GMT_ENDIAN_LITTLE) {
		set_err(err, GMT_READ_ERR_HEADER, 0, "corrupt header: endianness byte %u",
			(unsigned)hdr->endian);
		return -1;
	}
	return 0;
}

static bool is_pickle(int fd, uint64_t size)
{
	uint8_t b[2];
	return size >= 2 && rd_read_at(fd, b, 2, 0) == 0 && pk_sniff(b, 2);
}

/* An unlinked file of our own for the converted trace: O_TMPFILE in
 * $TMPDIR (else /tmp), else memory. */
static int temp_file(void)
{
	const char *dir = getenv("TMPDIR");
	int fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && dir && *dir)
		fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = memfd_create("gpumemtrace-snapshot", MFD_CLOEXEC);
	return fd;
}

/* A PyTorch snapshot pickle (reader/snapimport.h), converted: the
 * trace's descriptor, or -1 with *err. */
static int convert_pickle(int fd, uint64_t size, const char *path, struct gmt_read_error *err)
{
	int out = temp_file();
	if (out < 0) {
		set_err(err, GMT_READ_ERR_OPEN, errno,
			"a PyTorch snapshot, and no temporary file to convert it into: %s",
			strerror(errno));
		return -1;
	}
	struct pk_error pe;
	if (snap_import(fd, size, out, path, false, &pe)) {
		enum gmt_read_err code = pe.code == PK_ERR_IO || pe.code == PK_ERR_NOMEM
					     ? GMT_READ_ERR_OPEN
					     : GMT_READ_ERR_PICKLE;
		if (pe.offset)
			set_err(err, code, 0, "PyTorch snapshot: %s (at byte %llu)", pe.msg,
				(unsigned long long)pe.offset);
		else
			set_err(err, code, 0, "PyTorch snapshot: %s", pe.msg);
		close(out);
		return -1;
	}
	return out;
}

struct gmt_reader *gmt_reader_open(const char *path, struct gmt_read_error *err)
{
	memset(err, 0, sizeof(*err));
	/* O_NONBLOCK: a FIFO with no writer would block the open forever; the
	 * fstat below (on what was opened, not the name) turns it away. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		set_err(err, GMT_READ_ERR_OPEN, errno, "%s", strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
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
	struct gmt_header hdr = {0};
	if (is_pickle(fd, size)) { /* read through the trace it converts to */
		int tfd = convert_pickle(fd, size, path, err);
		close(fd);
		if (tfd < 0)
			return NULL;
		fd = tfd;
		if (fstat(fd, &st) < 0) {
			set_err(err, GMT_READ_ERR_OPEN, errno, "%s", strerror(errno));
			goto fail;
		}
		size = (uint64_t)st.st_size;
	}
	if (read_header(fd, size, &hdr, err) < 0)
		goto fail;

	const char *why;
	if (hdr.version >= 3 && !gmt_zstd_get(&rd_dl, &why) &&
	    rd_has_zstd_chunk(fd, hdr.header_size, size)) {
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
	r->file_bytes = size;
	r->expansion = max_expansion();
	r->raw_limit =
	    !r->expansion || size > UINT64_MAX / r->expansion ? UINT64_MAX : size * r->expansion;
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
		gmt_zstd_get(&rd_dl, NULL)->ZSTD_freeDCtx(r->dctx);
	for (int i = 0; i < 2; i++) {
		struct chunk *k = &r->ck[i];
		free(k->zbuf);
		free(k->payload);
		free(k->arena);
		free(k->argv);
		free(k->env);
		free(k->counters);
		free(k->fw_entries);
		free(k->fw_blocks);
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
	r->raw_total = 0;
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
		uint64_t raw = r->w_raw;
		r->busy = 1;
		pthread_mutex_unlock(&r->mu);
		rd_prepare(r, k, off, size, sid, eidx, raw);
		pthread_mutex_lock(&r->mu);
		r->busy = 0;
		if (r->running) { /* not rewound meanwhile */
			r->w_done = r->w_next = c + 1;
			if (k->ok) { /* the next chunk starts where this one ended */
				r->w_off = k->end;
				r->w_sid = k->next_stack_id;
				r->w_eidx = k->next_event_index;
				r->w_raw = k->raw_total;
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
	if (r->info.chunks == 0) {
		r->info.seq_first = k->seq;
		r->info.seq_gaps += k->seq != 0; /* the writer's first chunk is seq 0 */
	} else if (k->seq == ((r->chunk_seq + 1) & 0xffffffffu)) {
		/* in sequence */
	} else if (k->seq <= r->chunk_seq) {
		r->info.seq_dups++;
	} else {
		r->info.seq_gaps++;
	}
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
	r->raw_total = k->raw_total;
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
			r->w_raw = r->raw_total;
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
	rd_prepare(r, &r->ck[0], r->pos, r->info.file_size, r->next_stack_id, r->next_event_index,
		   r->raw_total);
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
				struct gmt_read_info *in = &r->info;
				bool ended = r->last_type == GMT_REC_TRAILER;
				/* (a trailer followed by more, after a failed exec,
				 * counts only what came before it) */
				in->damage =
				    (in->seq_gaps ? GMT_DAMAGE_GAP : 0) |
				    (in->seq_dups ? GMT_DAMAGE_DUP : 0) |
				    (ended && in->events != in->trailer_events ? GMT_DAMAGE_TOTALS
									       : 0);
				in->complete = ended && !in->damage;
				return 0;
			}
			r->have_chunk = 1;
			r->chunk_pending = 1;
			continue;
		}
		int rc = rd_dec_next(r->k, &r->dec, rec, 1);
		if (rc == DEC_RECORD) {
			r->last_type = rec->type;
			if (rec->type == GMT_REC_EVENT)
				r->info.events++;
			else
				r->info.records++;
			if (rec->type == GMT_REC_TRAILER) {
				r->info.has_trailer = 1;
				r->info.trailer_events = rec->u.trailer.events;
				r->info.trailer_lost = rec->u.trailer.lost;
			}
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

int gmt_reader_follow(struct gmt_reader *r)
{
	struct gmt_read_info *in = &r->info;
	if (!in->eof || in->stop == GMT_STOP_CORRUPT || in->stop == GMT_STOP_IO)
		return 0;
	struct stat st;
	if (fstat(r->fd, &st) != 0 || st.st_size < 0)
		return 0;
	uint64_t size = (uint64_t)st.st_size;
	/* a torn tail may be a chunk still being written: try it again */
	if (size < in->readable_end || (size == in->file_size && in->stop != GMT_STOP_TORN))
		return 0;
	if (r->started) { /* as a rewind: the worker's read-ahead ended at the old end */
		pthread_mutex_lock(&r->mu);
		r->running = 0;
		while (r->busy)
			pthread_cond_wait(&r->cv, &r->mu);
		pthread_mutex_unlock(&r->mu);
	}
	r->fresh = 1;
	r->c_next = 0;
	r->have_chunk = 0;
	r->chunk_pending = 0;
	r->k = NULL;
	in->file_size = size;
	/* the bound on decompressed bytes grows with the file: a trace followed
	 * from its first chunks would otherwise stop at 256 times those */
	r->file_bytes = size;
	r->raw_limit =
	    !r->expansion || size > UINT64_MAX / r->expansion ? UINT64_MAX : size * r->expansion;
	in->eof = false;
	in->complete = false;
	in->damage = 0;
	in->unreadable = 0;
	in->stop = GMT_STOP_NONE;
	in->stop_offset = 0;
	in->stop_errnum = 0;
	in->stop_msg[0] = '\0';
	return 1;
}
