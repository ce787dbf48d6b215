/* What the reader's .c files share: the reader's state, a chunk's buffers, the
 * decoding state. Not part of the API (reader.h is). The rd_ functions are
 * theirs only.
 *
 * reader.c   the API: open, rewind, the worker thread, handing records out
 * chunks.c   a chunk read from disk, its CRC checked, decompressed
 * records.c  a chunk's records decoded (one function per tag), and checked
 *            whole before any is handed out */
#ifndef GMT_READER_INTERNAL_H
#define GMT_READER_INTERNAL_H

#include <pthread.h>
#include <stdlib.h>

#include "common/codec.h"
#include "common/zstd.h"
#include "reader/reader.h"

/* libc's loader, for libzstd (reader/chunks.c). */
extern const struct gmt_dl rd_dl;

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
	struct gmt_counter *counters;
	size_t counters_cap;
	struct gmt_fw_entry *fw_entries;
	size_t fw_entries_cap;
	struct gmt_fw_block *fw_blocks;
	size_t fw_blocks_cap;
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
	uint64_t raw_total; /* payload bytes (decompressed) of the chunks up to this one */
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
	uint64_t raw_total;			  /* payload bytes decompressed before that chunk */
	/* The most payload a file may decompress to: its size times
	 * GPUMEMTRACE_MAX_EXPANSION (UINT64_MAX: no limit), so a small hostile
	 * file cannot make a command read gigabytes of events. */
	uint64_t raw_limit, file_bytes;
	unsigned expansion;
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
	uint64_t wanted;			      /* the chunk the caller reads or waits for */
	uint64_t w_next, w_done;		      /* chunks [0, w_done) are prepared */
	uint64_t w_off, w_size, w_sid, w_eidx, w_raw; /* where chunk w_next starts */
	int running;				      /* 0: stopped (a last chunk, or a rewind) */
	int busy;				      /* inside prepare */
	pthread_t worker;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

#define CACHE_MAX 32768

enum { DEC_END = 0, DEC_RECORD = 1, DEC_BAD = -1, DEC_UNKNOWN = -2, DEC_NOMEM = -3 };

static inline int grow(void **arr, size_t *cap, size_t n, size_t elem)
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

/* Where the next event of the batch starts (the head column's place in an
 * EVENTCOLS batch): for offsets in messages. */
static inline const uint8_t *ev_at(const struct dec *d)
{
	return d->ev_cols ? d->col[0].p : d->c.p;
}

/* Moves the real pass past cached events [i, i + n) of the chunk. An
 * EVENTCOLS batch is cached whole or not at all, and its record header has
 * moved the cursor past its columns already: there only the head column
 * moves, for the offsets `dump` shows. */
static inline void take_cached(struct chunk *k, struct dec *d, size_t i, size_t n)
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

/* chunks.c */
int rd_read_at(int fd, void *buf, size_t len, uint64_t off);
int rd_has_zstd_chunk(int fd, uint64_t off, uint64_t size);
int rd_stop(struct chunk *k, enum gmt_read_stop why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rd_stop_nomem(struct chunk *k);
int rd_prepare(struct gmt_reader *r, struct chunk *k, uint64_t off, uint64_t size,
	       uint64_t stack_id, uint64_t event_index, uint64_t raw_before);

/* records.c */
int rd_dec_next(struct chunk *k, struct dec *d, struct gmt_record *rec, int cached);
int rd_check_records(struct chunk *k, uint64_t base_offset, uint32_t len, uint64_t stack_id,
		     uint64_t event_index);

#endif
