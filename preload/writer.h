/* Trace writer: records encoded into checksummed chunks, and the chunks
 * written to the trace file. One owner at a time (the flush thread, or a
 * finishing thread holding the flush lock), so nothing here locks.
 *
 * Three files: preload/writer.c is the file (creating it, the pending
 * chunk, compression, the writes); preload/encode.c turns the rings'
 * records, stacks, modules and devices into records in the pending chunk
 * (frames are named elsewhere: by the CLI, or preload/scanner.c);
 * preload/procinfo.c is the PROCESS record (command line, environment). */
#ifndef GMT_WRITER_H
#define GMT_WRITER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common/codec.h"
#include "gpumemtrace/format.h"
#include "preload/device.h"
#include "preload/modules.h"
#include "preload/ring.h"
#include "preload/stacks.h"

/* Chunk compression (GMTZ): off, wanted (libzstd not loaded yet: never on
 * the hook path), or on. */
enum { GMT_ZS_OFF = 0, GMT_ZS_WANTED = 1, GMT_ZS_ON = 2 };

struct gmt_writer {
	int fd;		   /* high and close-on-exec, never 0-2 (gmt_writer_create) */
	uint64_t dev, ino; /* the file fd must still be: the program may close and reuse it */
	int failed;	   /* a write failed: the trace ends at the last good chunk */
	uint64_t written;  /* bytes written: a smaller file was truncated under us */
	uint32_t reopened; /* times the program closed fd and the path gave the file back */
	int omit_argv;	   /* GPUMEMTRACE_RECORD_ARGV=0: the PROCESS record keeps no argv */
	/* The program closed or reused fd: chunks stay pending until a thread
	 * of the program reopens the trace (gmt_writer_reopen), or the end
	 * does (may_reopen set by whoever writes the last trailer). */
	int fd_lost; /* written under flush_lock; read without it by the event path */
	int may_reopen;
	uint32_t reopened_noted;
	/* A write under way since this time (gmt_now_ns, | 1), else 0; the
	 * writing thread passes io_gate (when set) as it clears it. */
	uint64_t io_since;
	pthread_mutex_t *io_gate;
	char path[4096];
	char abs[4096 + 256]; /* path made absolute at creation: the program may chdir */

	uint8_t *chunk; /* GMT_CHUNK_HEADER_SIZE bytes of room, then payload */
	size_t len, cap;
	uint32_t seq;

	int zstate;		  /* GMT_ZS_* */
	struct ZSTD_CCtx_s *cctx; /* reused by every chunk */
	void *zws;		  /* its memory, when it is a static one */
	size_t zws_len;
	uint8_t *zbuf; /* the compressed chunk, header included */
	size_t zcap;

	/* The EVENTS record being built, one thread's batch. */
	uint8_t *ev;
	size_t ev_len, ev_cap;
	/* An EVENTCOLS batch (chunks compressed when it began) is written
	 * straight into its columns; ev_len is then their total. */
	int ev_cols;
	uint8_t *col[GMT_EV_COLUMNS];	 /* BATCH_TARGET + slack each, made once */
	uint32_t ev_col[GMT_EV_COLUMNS]; /* the columns' lengths */
	uint32_t ev_count;
	int ev_tid;
	uint64_t ev_base, ev_prev_time, ev_prev_ptr;
	uint32_t ev_prev_stack;
	int32_t ev_prev_dev;

	struct gmt_stacks stacks;
	uint32_t modules_emitted; /* MODULE records written, of the process's table */
	uint32_t names_asked;	  /* stack nodes whose frames went to the naming */
	int devices_done;
	uint64_t devices_first_ns; /* when a flush first found CUDA initialized */
	struct gmt_device_facts devices;
	uint8_t devices_written[GMT_MAX_FACTS_DEVICES];
	int devices_settle; /* the trace is ending: write what is known */

	uint64_t events, lost;
};

/* ---- the file (writer.c) ---- */

/* Moves fd to a high close-on-exec number, never 0-2: with stdout closed,
 * open() hands us 1, and the program's printf would land in the trace; a
 * daemon that closes 3-1023 and opens its files there never meets it.
 * Returns the new fd, or -1 (errno set; fd closed) when only 0-2 were free. */
int gmt_fd_high(int fd);
/* Grows the process's descriptor table to hold gmt_fd_high's number, at
 * load while the process has one thread: growing a table that threads share
 * waits for an RCU grace period (the kernel's expand_fdtable), 10-28 ms that
 * every traced process paid at its first event (issue 30.5). Uses a
 * descriptor of its own (an eventfd: closing a dup of the program's would
 * drop its POSIX locks on that file). */
void gmt_fd_table_reserve(void);

/* Creates the file from the template (never following a symlink, never
 * overwriting: a taken name gets .1, .2 ... before .gmt) and writes the
 * file header. start_mono: the trace's time zero (0: now); no event may be
 * earlier. Returns 0, or -1 with errno set. */
int gmt_writer_create(struct gmt_writer *w, const char *path_template, int stack_depth,
		      uint64_t start_mono);
/* Loads libzstd when compression is wanted: never on the hook path. No
 * libzstd: one NOTE, and the chunks stay uncompressed. */
void gmt_writer_compress_init(struct gmt_writer *w);
/* Appends the created file's absolute path and a NUL to the file `list`
 * (GPUMEMTRACE_TRACE_LIST, made by `gpumemtrace run`), in one O_APPEND write
 * so that concurrent processes never mix their lines. Never creates `list`.
 * Returns 0, or -1 with errno set. */
int gmt_writer_list(const struct gmt_writer *w, const char *list);
/* Room for n more bytes of records in the pending chunk (written first
 * when they would push it past its target size), or NULL (no memory);
 * gmt_writer_commit(w, end) then takes what was put there. */
uint8_t *gmt_writer_room(struct gmt_writer *w, size_t n);
static inline void gmt_writer_commit(struct gmt_writer *w, uint8_t *end)
{
	w->len = (size_t)(end - w->chunk);
}
/* How long the write under way has been stuck at now (gmt_now_ns), or 0
 * with none: any thread may ask. */
uint64_t gmt_writer_stuck_ns(const struct gmt_writer *w, uint64_t now);
/* Whether an event the program did not wait for is the stuck write's (a
 * stalled file system: a NOTE and one line) rather than plainly lost: the
 * write has been under way stuck_ns, at least GPUMEMTRACE_FULL_WAIT_MS
 * (full_wait_ns) or past the event's own deadline, and never less than
 * GMT_STALL_MIN_NS: with FULL_WAIT_MS=0 (never wait) every write under way
 * read as a stall ("no write for over 0 ms"), on every burst (issue 30.6). */
enum { GMT_STALL_MIN_MS = 100 };
int gmt_lost_to_stall(uint64_t stuck_ns, uint64_t full_wait_ns, int deadline_passed);
/* The shortest stuck write that counts as a stall, in ms: the larger of
 * GPUMEMTRACE_FULL_WAIT_MS and GMT_STALL_MIN_MS. */
int gmt_stall_ms(int full_wait_ms);
/* Writes the pending chunk. Returns 0, or -1 once writing has failed.
 * With fd_lost, and may_reopen clear, keeps it pending and returns 0. */
int gmt_writer_flush(struct gmt_writer *w);
/* Reopens the trace by its path if the program closed or reused its
 * descriptor, writing nothing: on a thread of the program, between its
 * own calls (the number open() takes for a moment is not one the program
 * is opening); the pending chunk waits for the flush thread. Returns 0,
 * or -1 once writing has failed (the path no longer names the trace). */
int gmt_writer_reclaim(struct gmt_writer *w);
/* gmt_writer_reclaim, then gmt_writer_flush: at the end, by whoever writes
 * the last trailer. */
int gmt_writer_reopen(struct gmt_writer *w);
/* Closes our descriptor (unless the program made it its own) and frees
 * the file's buffers, without writing. */
void gmt_writer_file_abandon(struct gmt_writer *w);

/* A string record field: its length, then its bytes. */
static inline uint8_t *gmt_writer_put_str(uint8_t *p, const void *s, size_t n)
{
	p = gmt_put_varint(p, n);
	memcpy(p, s, n);
	return p + n;
}

static inline uint64_t gmt_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the records (encode.c, procinfo.c) ---- */

/* Creates the file (gmt_writer_create) and writes its first records: the
 * process, the modules (scanned here: the caller may wait for the loader's
 * lock). compress: chunks are to be compressed (from the
 * next flush on, once gmt_writer_compress_init loaded libzstd). Returns 0,
 * or -1 with errno set. */
int gmt_writer_open(struct gmt_writer *w, const char *path_template, int stack_depth, int compress,
		    uint64_t start_mono);
/* Forgets everything without writing: the child side of fork. */
void gmt_writer_abandon(struct gmt_writer *w);

/* The PROCESS record (procinfo.c). */
void gmt_writer_process(struct gmt_writer *w);
void gmt_writer_ring_record(struct gmt_writer *w, struct gmt_ring *r, const struct gmt_ring_hdr *h);
void gmt_writer_end_batch(struct gmt_writer *w);
void gmt_writer_lost(struct gmt_writer *w, int tid, uint64_t count, uint64_t time_ns);
/* MODULE records for the modules published since the last call
 * (preload/modules.h): no scan, no lock. */
void gmt_writer_modules(struct gmt_writer *w);
void gmt_writer_devices(struct gmt_writer *w);
void gmt_writer_reserve(struct gmt_writer *w);
void gmt_writer_note(struct gmt_writer *w, int level, const char *text);
/* An EXIT record (GMT_EXIT_* how): written right before the final trailer. */
void gmt_writer_exit(struct gmt_writer *w, uint64_t time_ns, unsigned how, int status);
void gmt_writer_trailer(struct gmt_writer *w, unsigned reason, uint64_t end_ns);

#endif
