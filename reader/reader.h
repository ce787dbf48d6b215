/* Streaming reader for trace formats v1..v5 (include/gpumemtrace/format.h).
 *
 *     struct gmt_read_error err;
 *     struct gmt_reader *r = gmt_reader_open(path, &err);
 *     if (!r) { ... err.code, err.msg ... }
 *     struct gmt_record rec;
 *     while (gmt_reader_next(r, &rec)) { ... rec.type ... }
 *     const struct gmt_read_info *info = gmt_reader_info(r); // how it ended
 *     gmt_reader_rewind(r);  // a second pass: no reopen, no re-validation of the header
 *     gmt_reader_close(r);
 *
 * The reader holds at most two chunks in memory (each at most
 * GMT_CHUNK_MAX_PAYLOAD bytes, twice for a compressed chunk: as on disk and
 * decompressed, plus scratch), never the whole file: the one being read and,
 * where two CPUs are usable, the next, which a worker thread loads and
 * checks meanwhile (GPUMEMTRACE_READER_THREADS=0: none). Only the caller's
 * thread touches the reader's state and counters; a reader is used from one
 * thread at a time. In a compressed chunk a
 * record's offset is its payload's file offset plus the record's offset in
 * the decompressed payload. A chunk is
 * checked whole (header, length, CRC32C of its payload, every record decodes
 * within it) before any of its records is handed out, so a consumer never
 * sees half of a bad chunk. The first bad or short chunk ends the readable
 * part; gmt_reader_info says why and how many bytes were left unread.
 *
 * Everything a record points to (strings, arrays) stays valid until the next
 * gmt_reader_next, gmt_reader_rewind or gmt_reader_close. */
#ifndef GMT_READER_H
#define GMT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpumemtrace/format.h>

/* Why gmt_reader_open failed. */
enum gmt_read_err {
	GMT_READ_OK = 0,
	GMT_READ_ERR_OPEN = 1,	    /* cannot open, stat or read the file: errnum */
	GMT_READ_ERR_NOT_TRACE = 2, /* bad magic, or too short for a header */
	GMT_READ_ERR_VERSION = 3,   /* version newer than GMT_FORMAT_VERSION */
	GMT_READ_ERR_HEADER = 4,    /* magic ok, header fields invalid */
	GMT_READ_ERR_ZSTD = 5,	    /* zstd-compressed chunks, and no libzstd to read them */
	GMT_READ_ERR_PICKLE = 6,    /* a PyTorch snapshot pickle we refuse or cannot read */
};

struct gmt_read_error {
	enum gmt_read_err code;
	int errnum;    /* GMT_READ_ERR_OPEN: the errno */
	char msg[256]; /* one line, no trailing newline, without the path */
};

/* The fixed header, decoded. */
struct gmt_header {
	uint16_t version;
	uint16_t header_size;
	uint8_t endian;
	uint32_t features; /* GMT_FEAT_* */
	uint64_t start_wall_ns;
	uint64_t start_mono_ns;
	uint32_t pid;
};

/* Whole chunks missing or repeated, found from the chunks' sequence
 * numbers and the trailer's event count: every chunk's CRC may be good and
 * the trace still not the one written. */
enum gmt_damage {
	GMT_DAMAGE_GAP = 1,    /* a chunk sequence gap: chunks missing */
	GMT_DAMAGE_DUP = 2,    /* a chunk sequence number repeated: chunks duplicated */
	GMT_DAMAGE_TOTALS = 4, /* the events read are not the trailer's count */
};

/* How the readable part ended. */
enum gmt_read_stop {
	GMT_STOP_NONE = 0,    /* still reading, or clean end of file at a chunk boundary */
	GMT_STOP_TORN = 1,    /* a partial (or zero-filled) chunk at the end of the file */
	GMT_STOP_CORRUPT = 2, /* a bad chunk with more file after it, or a bad record */
	GMT_STOP_IO = 3,      /* read(2) failed: errno in stop_errnum */
};

struct gmt_read_info {
	uint64_t file_size;	 /* at open time; a file still growing is read to here */
	uint64_t chunks;	 /* good chunks read so far */
	uint64_t records;	 /* records read so far (an EVENTS batch is one) */
	uint64_t events;	 /* individual events read so far */
	uint64_t readable_end;	 /* file offset just past the last good chunk */
	uint64_t unreadable;	 /* bytes from readable_end to the end of the file */
	uint64_t seq_first;	 /* seq of the first good chunk */
	uint64_t seq_gaps;	 /* chunks whose seq is not the previous seq + 1 (or a
				  * first chunk whose seq is not 0): chunks missing */
	uint64_t seq_dups;	 /* chunks whose seq is not above the previous one: repeated */
	uint64_t unknown_chunks; /* chunks cut short by an unknown record tag */
	uint64_t unknown_bytes;	 /* bytes skipped after those tags */
	bool eof;		 /* gmt_reader_next has returned 0 */
	bool complete;		 /* eof, the last record read is a TRAILER, not damaged */
	unsigned damage;	 /* GMT_DAMAGE_* bits, known at eof */
	bool has_trailer;	 /* a TRAILER was read; its counts: */
	uint64_t trailer_events, trailer_lost;
	enum gmt_read_stop stop;
	uint64_t stop_offset; /* file offset of the bad chunk */
	int stop_errnum;
	char stop_msg[200]; /* why the bad chunk is bad, one line */
};

/* Record types handed out: the format's tags for records, plus two that are
 * not records on disk. An EVENTS record comes as one GMT_REC_EVENTS (the
 * batch head) followed by `count` GMT_REC_EVENT, fully decoded. */
enum gmt_rec_type {
	GMT_REC_PROCESS = GMT_TAG_PROCESS,
	GMT_REC_MODULE = GMT_TAG_MODULE,
	GMT_REC_DEVICE = GMT_TAG_DEVICE,
	GMT_REC_STACK = GMT_TAG_STACK,
	GMT_REC_THREAD = GMT_TAG_THREAD,
	GMT_REC_EVENTS = GMT_TAG_EVENTS,
	GMT_REC_LOST = GMT_TAG_LOST,
	GMT_REC_SYMBOL = GMT_TAG_SYMBOL,
	GMT_REC_NOTE = GMT_TAG_NOTE,
	GMT_REC_TRAILER = GMT_TAG_TRAILER,
	GMT_REC_MEMINFO = GMT_TAG_MEMINFO,
	GMT_REC_SAMPLE = GMT_TAG_SAMPLE,
	GMT_REC_RANGE = GMT_TAG_RANGE,
	GMT_REC_PYFRAME = GMT_TAG_PYFRAME,
	GMT_REC_COUNTERS = GMT_TAG_COUNTERS,
	GMT_REC_FWSEG = GMT_TAG_FWSEG,
	GMT_REC_FWTRACE = GMT_TAG_FWTRACE,
	GMT_REC_FWSNAP = GMT_TAG_FWSNAP,
	GMT_REC_FWOOM = GMT_TAG_FWOOM,
	GMT_REC_EXIT = GMT_TAG_EXIT,
	GMT_REC_EVENT = 64, /* one event of an EVENTS batch */
	GMT_REC_CHUNK = 65, /* a chunk begins: its records follow */
};

/* A string from the trace: a NUL-terminated copy (s[len] == 0). The bytes
 * are whatever was written: they may hold NULs or invalid UTF-8. */
struct gmt_str {
	const char *s;
	size_t len;
};

struct gmt_blob {
	const uint8_t *p;
	size_t len;
};

struct gmt_env {
	struct gmt_str key, value;
};

/* One of a COUNTERS record's entries: the framework's name and value. */
struct gmt_counter {
	struct gmt_str name;
	uint64_t value;
};

/* One entry of a FWTRACE record, decoded (absolute values). */
struct gmt_fw_entry {
	uint32_t action; /* GMT_FW_* (may be one this build does not know) */
	uint64_t addr;	 /* GMT_FW_OOM: the device's free bytes */
	uint64_t size, stream;
	uint64_t time_us; /* the framework's stamp, Unix us; 0: none */
	uint64_t stack_id;
};

/* One block of a FWSEG record, decoded. */
struct gmt_fw_block {
	uint64_t address, size, requested_size;
	uint32_t state; /* GMT_FWBLOCK_* (may be one this build does not know) */
	uint64_t stack_id;
};

struct gmt_stack_node {
	uint64_t id; /* implicit: 1, 2, 3... across the file */
	uint64_t parent;
	uint64_t ip;
};

struct gmt_event {
	uint64_t index;	  /* 0, 1, 2... across the file */
	uint64_t time_ns; /* absolute, CLOCK_MONOTONIC like the header's start_mono */
	uint64_t tid;
	uint32_t api;	 /* GMT_API_* (may be an id this build does not know) */
	uint32_t flags;	 /* GMT_EV_* bits of the head, as written */
	uint64_t result; /* 0 unless GMT_EV_FAILED */
	int64_t device;	 /* -1: host or unknown */
	uint64_t ptr, size, aux, aux2;
	uint64_t stack_id;
};

struct gmt_record {
	enum gmt_rec_type type;
	uint64_t chunk_offset; /* file offset of the chunk holding it */
	uint64_t offset;       /* file offset of the record's tag */
	union {
		struct {
			uint64_t index, seq;
			uint32_t payload_len, crc; /* payload_len: bytes on disk */
			bool zstd;		   /* GMTZ: raw_len bytes decompressed */
			uint32_t raw_len;
		} chunk;
		struct {
			uint64_t pid, ppid, start_wall_ns;
			struct gmt_str hostname, exe;
			size_t argc;
			const struct gmt_str *argv;
			size_t nenv;
			const struct gmt_env *env;
		} process;
		struct {
			uint64_t id, load_bias, start, end;
			struct gmt_str path;
			struct gmt_blob build_id;
		} module;
		struct {
			int64_t ordinal;
			struct gmt_str name;
			struct gmt_blob uuid;
			uint64_t total_bytes, cc_major, cc_minor, driver_version;
		} device;
		struct {
			size_t count;
			const struct gmt_stack_node *nodes;
		} stack;
		struct {
			uint64_t tid;
			struct gmt_str name;
		} thread;
		struct {
			uint64_t tid, base_time_ns, count;
			bool columns; /* on disk as EVENTCOLS */
		} events;
		struct gmt_event event;
		struct {
			uint64_t tid, count, time_ns;
		} lost;
		struct {
			uint64_t ip, module_id;
			struct gmt_str function, file;
			uint64_t line;
		} symbol;
		struct {
			uint64_t level;
			struct gmt_str text;
		} note;
		struct {
			uint64_t end_time_ns, events, lost, stack_nodes, reason;
		} trailer;
		struct {
			uint64_t tid, time_ns;
			int64_t device;
			uint64_t free_bytes, total_bytes;
			uint64_t api;
		} meminfo;
		struct {
			uint64_t time_ns, nvml_index;
			struct gmt_blob uuid;
			uint64_t used_bytes, total_bytes, flags, process_used_bytes, reason;
		} sample;
		struct {
			uint64_t tid, time_ns, op, id, source;
			struct gmt_str text;
		} range;
		struct {
			uint64_t id;
			struct gmt_str function, file;
			uint64_t line;
		} pyframe;
		struct {
			uint64_t tid, time_ns, reason;
			struct gmt_str source, device;
			int64_t ordinal;
			size_t count;
			const struct gmt_counter *v;
		} counters;
		struct {
			uint64_t tid, time_ns, wall_ns, seq, reason;
			struct gmt_str source;
			uint64_t flags, max_entries;
			size_t count;
			const struct gmt_env *settings; /* key: the setting, value: as text */
		} fwsnap;
		struct {
			uint64_t seq;
			int64_t device;
			uint64_t flags, base_time_us;
			size_t count;
			const struct gmt_fw_entry *v;
		} fwtrace;
		struct {
			uint64_t seq;
			int64_t device;
			uint64_t address, total_size, stream, flags, pool_a, pool_b, stack_id;
			size_t count;
			const struct gmt_fw_block *v;
		} fwseg;
		struct {
			uint64_t tid, time_ns, how;
			struct gmt_str source, type;
			int64_t ordinal;
			size_t count;
			const struct gmt_counter *v; /* the figures the helper read */
			struct gmt_str message;
		} fwoom;
		struct {
			uint64_t time_ns, how;
			int64_t status;
			uint64_t signal;
		} exit;
	} u;
};

/* NULL on failure, with *err filled (err may not be NULL). */
struct gmt_reader *gmt_reader_open(const char *path, struct gmt_read_error *err);
void gmt_reader_close(struct gmt_reader *r);

const struct gmt_header *gmt_reader_header(const struct gmt_reader *r);

/* 1: *rec holds the next record. 0: the readable part is over (see
 * gmt_reader_info); keeps returning 0 until a rewind. */
int gmt_reader_next(struct gmt_reader *r, struct gmt_record *rec);

/* A faster way through the events: where the next records are events of an
 * EVENTS batch (already decoded when their chunk was checked), points *evs
 * at up to the rest of that batch and returns how many, as if that many
 * gmt_reader_next calls had returned them (without their record offsets).
 * 0: use gmt_reader_next. The events stay valid as a record's data does. */
size_t gmt_reader_next_events(struct gmt_reader *r, const struct gmt_event **evs);

/* A trace still being written: after gmt_reader_next has returned 0 at the
 * end of what was there (or at a torn last chunk, maybe one being
 * written), looks again. 1: the file grew (or its tail may now be whole):
 * gmt_reader_next goes on from the last good chunk, with every counter and
 * stack id carried on; 0: nothing new, or the read ended at a bad chunk or
 * an I/O error. */
int gmt_reader_follow(struct gmt_reader *r);

/* Back to the first chunk, for another pass; counters restart. */
void gmt_reader_rewind(struct gmt_reader *r);

const struct gmt_read_info *gmt_reader_info(const struct gmt_reader *r);

/* "PROCESS", "EVENT", ... ; "?" for anything else. */
const char *gmt_rec_type_name(int type);

#endif
