/* Trace writer: encodes records into checksummed chunks and writes them.
 * One owner at a time (the flush thread, or a finishing thread holding the
 * flush lock), so nothing here locks. */
#ifndef GMT_WRITER_H
#define GMT_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "gpumemtrace/format.h"
#include "preload/device.h"
#include "preload/modules.h"
#include "preload/ring.h"
#include "preload/stacks.h"
#include "preload/tracer.h"

/* DEVICE records kept for the first this many ordinals. */
#define GMT_WRITER_MAX_DEVICES 16

/* What the driver's queries gave for each device, merged over several
 * askings: a query that failed once may answer later, and what one asking
 * learnt stays true. */
struct gmt_device_facts {
	int n; /* devices asked about */
	uint8_t seen[GMT_WRITER_MAX_DEVICES];
	struct gmt_device_info d[GMT_WRITER_MAX_DEVICES];
	char why[GMT_WRITER_MAX_DEVICES][160]; /* each one's first failed query */
};
/* Asks the driver about every device not in skip (may be NULL); returns
 * how many it has (-1: CUDA not initialized yet). */
int gmt_device_facts_query(struct gmt_device_facts *f, const uint8_t *skip);
void gmt_device_facts_merge(struct gmt_device_facts *into, const struct gmt_device_facts *from);

struct gmt_ipset;

struct gmt_writer {
	int fd;		   /* high and close-on-exec, never 0-2 (gmt_writer_open) */
	uint64_t dev, ino; /* the file fd must still be: the program may close and reuse it */
	int failed;	   /* a write failed: the trace ends at the last good chunk */
	uint64_t written;  /* bytes written: a smaller file was truncated under us */
	char path[4096];

	uint8_t *chunk; /* GMT_CHUNK_HEADER_SIZE bytes of room, then payload */
	size_t len, cap;
	uint32_t seq;

	/* Chunk compression (GMTZ): off, wanted (libzstd not loaded yet: the
	 * flush thread loads it, never the hook path), or on. */
	int zstate;
	struct ZSTD_CCtx_s *cctx; /* reused by every chunk */
	uint8_t *zbuf;		  /* the compressed chunk, header included */
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
	struct gmt_modules modules;
	uint32_t modules_emitted;
	uint32_t nodes_symbolized;
	struct gmt_ipset *symbolized;
	struct gmt_symbolizer *sym; /* kept: late events name only their new frames */
	uint32_t sym_modules;	    /* modules registered with sym */
	int devices_done;
	uint64_t devices_first_ns; /* when a flush first found CUDA initialized */
	struct gmt_device_facts devices;
	uint8_t devices_written[GMT_WRITER_MAX_DEVICES];
	int devices_settle; /* the trace is ending: write what is known */

	uint64_t events, lost;
};

/* Creates the file from the template (never following a symlink, never
 * overwriting: a taken name gets .1, .2 ... before .gmt) and writes the
 * header and the process record. Returns 0, or -1 with errno set. */
/* start_mono: the trace's time zero (0: now); no event may be earlier. */
int gmt_writer_open(struct gmt_writer *w, const char *path_template, int stack_depth, int compress,
		    uint64_t start_mono);
/* Loads libzstd when compression is wanted: on the flush thread only. No
 * libzstd: one NOTE, and the chunks stay uncompressed. */
void gmt_writer_compress_init(struct gmt_writer *w);
/* Appends the created file's absolute path and a NUL to the file `list`
 * (GPUMEMTRACE_TRACE_LIST, made by `gpumemtrace run`), in one O_APPEND write
 * so that concurrent processes never mix their lines. Never creates `list`.
 * Returns 0, or -1 with errno set. */
int gmt_writer_list(const struct gmt_writer *w, const char *list);
void gmt_writer_close(struct gmt_writer *w);
/* Forgets everything without writing: the child side of fork. */
void gmt_writer_abandon(struct gmt_writer *w);

void gmt_writer_ring_record(struct gmt_writer *w, struct gmt_ring *r, const struct gmt_ring_hdr *h);
void gmt_writer_end_batch(struct gmt_writer *w);
void gmt_writer_lost(struct gmt_writer *w, int tid, uint64_t count, uint64_t time_ns);
void gmt_writer_scan_modules(struct gmt_writer *w);
void gmt_writer_devices(struct gmt_writer *w);
int gmt_writer_symbols(struct gmt_writer *w);
void gmt_writer_reserve(struct gmt_writer *w);
void gmt_writer_note(struct gmt_writer *w, int level, const char *text);
void gmt_writer_trailer(struct gmt_writer *w, unsigned reason, uint64_t end_ns);
/* Writes the pending chunk. Returns 0, or -1 once writing has failed. */
int gmt_writer_flush(struct gmt_writer *w);

#endif
