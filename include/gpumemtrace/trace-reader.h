/* libgpumemtrace-reader.so: a trace as tables, for other languages. The
 * Python package reads traces through it with ctypes (docs/python.md); the
 * CLI's reader and analysis do the reading, so every front end sees one
 * model (the same time order, phases and live bytes as the reports).
 *
 *     char err[256];
 *     struct gmtr *t = gmtr_open("run.gmt", err, sizeof(err));
 *     const char *meta = gmtr_meta_json(t);         // process, devices, modules, status
 *     int64_t n = gmtr_table(t, "events", NULL);     // builds the table once
 *     struct gmtr_column c;
 *     gmtr_column(t, "events", "size", &c);          // c.values: n uint64
 *     gmtr_close(t);
 *
 * Tables and their columns: gmtr_schema_json() (docs/python.md is made
 * from it). Columns are laid out as Apache Arrow's: fixed-width values,
 * bit-packed booleans and validity (LSB first), strings dictionary-encoded
 * (int32 indices into a dictionary of int32 offsets and UTF-8 bytes), so a
 * binding wraps them without a copy. Everything stays valid until
 * gmtr_close. A handle is used from one thread at a time.
 *
 * Out of memory never ends the caller's process: the call that ran out
 * returns its error ("out of memory"), what it had built is leaked, and
 * the handle refuses further reads (close it).
 *
 * The ABI is versioned by gmtr_abi(): fields are only ever appended. */
#ifndef GPUMEMTRACE_TRACE_READER_H
#define GPUMEMTRACE_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GMTR_ABI 1

enum gmtr_type {
	GMTR_I64 = 1,
	GMTR_U64 = 2,
	GMTR_I32 = 3,
	GMTR_BOOL = 4, /* bit-packed */
	GMTR_DICT = 5, /* int32 indices; dict_* hold the strings */
};

struct gmtr_column {
	const char *name;
	int type; /* enum gmtr_type */
	uint64_t rows;
	const void *values;   /* rows values (GMTR_BOOL: (rows + 7) / 8 bytes) */
	const uint8_t *valid; /* NULL: no nulls; else bit-packed, 1 = valid */
	uint64_t nulls;
	uint64_t dict_size;	     /* GMTR_DICT: the strings */
	const int32_t *dict_offsets; /* dict_size + 1 */
	const char *dict_data;	     /* dict_offsets[dict_size] bytes */
};

struct gmtr;

/* GMTR_ABI of the library loaded. */
int gmtr_abi(void);

/* Opens a trace and reads its metadata. NULL on failure, with one line in
 * err (the reason, without the path). A damaged or truncated trace opens:
 * its status is in the metadata ("complete", "lost_events", "damage"). */
struct gmtr *gmtr_open(const char *path, char *err, size_t errlen);
void gmtr_close(struct gmtr *t);

/* JSON: {"path", "format_version", "process": {...}, "devices": [...],
 * "modules": [...], "notes": [...], "status": {...}}. */
const char *gmtr_meta_json(struct gmtr *t);

/* Builds a table (once) and returns its row count; -1 when the table is
 * unknown or its read failed (gmtr_error says why). columns: NULL or "" for
 * all, else a comma-separated list (the others are not built). */
int64_t gmtr_table(struct gmtr *t, const char *table, const char *columns);

/* A column of a built table. 0, or -1 when unknown or not built. */
int gmtr_column(struct gmtr *t, const char *table, const char *name, struct gmtr_column *out);

/* The last error, one line ("" for none). */
const char *gmtr_error(struct gmtr *t);

/* JSON: {"abi": 1, "tables": {"events": {"doc", "columns": [{"name",
 * "type", "doc"}...]}...}}. */
const char *gmtr_schema_json(void);

/* ---- a trace still being written, window by window -------------------
 * A window is a range pushed with a text that starts with `prefix` and
 * popped on the same thread (the pytest plugin pushes one per test). Its
 * figures are those of the allocations made between its push and its pop,
 * by any thread, replayed with the reports' rules: memory allocated before
 * it and freed within it changes nothing. The figures are exact once every
 * event up to the pop is in the file (gpumemtrace_flush_v1, gpumemtrace.h). */
struct gmtr_window {
	const char *name; /* the range's text after the prefix */
	int closed;	  /* popped, and its figures computed */
	uint64_t tid;
	int64_t start_ns, end_ns;      /* since the trace began; end -1 while open */
	uint64_t peak_bytes;	       /* the most device memory its allocations held at once */
	uint64_t live_bytes;	       /* what they still held at its end */
	uint64_t allocs, failed, ooms; /* allocation calls: succeeded, failed, of them OOM */
	const char *sites_json; /* [{"site", "bytes", "allocs"}...]: its allocations live at its
				 * peak by site, largest first, at most 10 */
};

struct gmtr_follow;
/* Opens a trace to follow (it must exist). NULL on failure, err as gmtr_open. */
struct gmtr_follow *gmtr_follow_open(const char *path, const char *prefix, char *err,
				     size_t errlen);
/* Reads what the trace gained; returns how many windows it has opened so
 * far, or -1 once a read ran out of memory (the windows so far stay). */
int64_t gmtr_follow_poll(struct gmtr_follow *f);
/* Window i (in the order opened). 0, or -1 past the last. */
int gmtr_follow_window(struct gmtr_follow *f, int64_t i, struct gmtr_window *out);
/* JSON: window i's device bytes over its time, [[ns since its start,
 * bytes]...] (at most 512 points: in each of 256 bins of its time the most
 * and the last value), "[]" while it is open; NULL past the last. */
const char *gmtr_follow_timeline_json(struct gmtr_follow *f, int64_t i);
/* JSON: what the framework held from the driver (its reserved bytes, its
 * cache included) at its most while window i was open, from its counters
 * (run --framework-counters): [{"source", "device", "reserved_peak",
 * "reserved_at_start", "exact", "at_most"}...], one per framework and
 * device read inside the window ("[]": none). exact false: reserved_peak
 * is the most read, and at_most (null: unknown) a ceiling. NULL past the
 * last. */
const char *gmtr_follow_framework_json(struct gmtr_follow *f, int64_t i);
/* JSON: {"events", "lost_events", "lost_in_children"} so far. */
const char *gmtr_follow_status_json(struct gmtr_follow *f);
void gmtr_follow_close(struct gmtr_follow *f);

#ifdef __cplusplus
}
#endif

#endif
