/* A trace as the report commands see it: its metadata (process, devices,
 * modules, symbols, stack tree, notes, trailer) loaded by one streaming pass,
 * then its events replayed in time order as often as a command needs.
 *
 *     struct trace t;
 *     int rc = trace_open(&t, "top", path);   // -1: ok; else the exit code
 *     trace_replay(&t, on_event, ctx);         // pass 2, 3... in time order
 *     trace_close(&t);
 *
 * Memory is bounded by metadata, live allocations and unique stacks, never
 * by the number of events. */
#ifndef GMT_ANALYSIS_TRACE_H
#define GMT_ANALYSIS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/hash.h"

#include "common/api.h"
#include "common/frameworks.h"
#include "common/text.h"
#include "analysis/diag.h"
#include "reader/reader.h"
#include "reader/xalloc.h"
#include "analysis/replay.h"

struct trace_module {
	uint64_t id, bias, start, end;
	char *path;
	const char *library; /* basename of path: "libnccl.so.2", "python3.11" */
	uint8_t *build_id;
	size_t build_id_len;
	enum gmt_fw_id fw; /* its row of the framework table (fw_of_module) */
	bool cuda;	   /* the CUDA driver or runtime, or the tracer itself */
};

struct trace_device {
	int64_t ordinal;
	char *name; /* "" without a DEVICE record */
	uint8_t uuid[16];
	uint64_t total_bytes;
	int cc_major, cc_minor, driver_version;
};

struct trace_env {
	char *key, *value;
};

struct trace_frame {
	uint64_t ip;
	int depth; /* 0: innermost */
	const struct trace_module *module;
	const char *function, *file; /* NULL: unknown */
	uint64_t line;
	bool in_cuda; /* trace_site: every frame is in the CUDA libraries */
	bool python;  /* a Python frame (GMT_PYFRAME_IP); module is NULL */
};

struct trace_symbol;
struct trace_node {
	uint64_t parent, ip;
};

/* A memory snapshot the library took right after a failed allocation
 * (GMT_TAG_MEMINFO): what cuMemGetInfo said on the failing thread. */
struct trace_meminfo {
	uint64_t time_ns;
	int64_t device;
	uint64_t free_bytes, total_bytes;
	uint32_t api;
	int tid;
};

/* One NVML reading of one device (GMT_TAG_SAMPLE). */
struct trace_sample {
	uint64_t time_ns;
	int64_t device; /* the CUDA ordinal whose DEVICE uuid matches; -1: none */
	uint64_t nvml_index;
	uint8_t uuid[16];
	uint64_t used_bytes, total_bytes; /* the whole device, all processes */
	uint64_t process_used_bytes;	  /* this process, as nvidia-smi shows it */
	bool process_known;
	int reason; /* GMT_SAMPLE_WHY_* */
};

/* A phase marker (GMT_TAG_RANGE), in time order. */
struct trace_range {
	uint64_t time_ns;
	int tid;
	int op; /* GMT_RANGE_* */
	uint64_t id;
	int source; /* GMT_RANGE_SRC_* */
	char *text; /* "" for POP and END */
};

/* A framework's own memory counters (GMT_TAG_COUNTERS), as it names them;
 * analysis/counters.h reads them. */
struct trace_counter {
	char *name;
	uint64_t value;
};
struct trace_counters {
	uint64_t time_ns;
	int tid;
	int reason;	   /* GMT_COUNTERS_WHY_* */
	char *source;	   /* "torch", "jax", "tensorflow" */
	char *device_name; /* the framework's: "cuda:0", "gpu:0" */
	int64_t device;	   /* CUDA ordinal; -1: unknown */
	struct trace_counter *v;
	size_t n;
};

/* A framework's out-of-memory error as the helper saw it
 * (GMT_TAG_FWOOM); analysis/fwoom.h reads them. */
#define TRACE_MAX_FWOOM	 1024  /* kept; the rest are counted (fwooms_total) */
#define TRACE_FWOOM_TEXT 16384 /* of each message: what analysis/fwoom-msg.c reads */
struct trace_fwoom {
	uint64_t time_ns;
	int tid;
	int how;		 /* GMT_FWOOM_* */
	char *source, *type;	 /* "torch", "torch.OutOfMemoryError" */
	char *message;		 /* at most TRACE_FWOOM_TEXT bytes of it */
	size_t message_len;	 /* of the copy */
	int64_t device;		 /* CUDA ordinal; -1: unknown */
	struct trace_counter *v; /* the figures the helper read then */
	size_t n;
};

struct trace_pyframe;
struct trace_demangled;
struct fwhist;
struct site_opts;
struct site_cache;
struct site_api_cache;
struct site_name;

struct trace {
	const char *cmd, *path;
	struct gmt_reader *reader;
	struct gmt_header hdr;
	/* process */
	bool has_process;
	uint64_t pid, ppid, start_wall_ns;
	char *command, *exe, *host;
	struct trace_env *env;
	size_t nenv;
	/* devices seen in DEVICE records or in events, sorted by ordinal */
	struct trace_device *devs;
	size_t ndevs;
	struct trace_module *mods;
	size_t nmods;
	struct trace_symbol *symbols;
	size_t symbols_added;	  /* SYMBOL records read so far (a follower sees it grow) */
	struct trace_node *nodes; /* nodes[id - 1] */
	size_t nnodes;
	struct trace_meminfo *meminfo;
	size_t nmeminfo;
	char **notes;
	size_t nnotes;
	struct trace_sample *samples; /* in time order */
	size_t nsamples;
	struct trace_range *ranges; /* in time order (file order among equal times) */
	size_t nranges;
	struct trace_pyframe *pyframes;
	struct trace_counters *counters; /* in file order */
	size_t ncounters;
	struct fwhist *fw;	    /* a framework's own view (analysis/fwhist.h); NULL: none */
	struct trace_fwoom *fwooms; /* in file order */
	size_t nfwooms;
	uint64_t fwooms_total;
	/* how the process ended (GMT_TAG_EXIT): the last such record */
	bool has_exit;
	int exit_how; /* GMT_EXIT_* */
	int64_t exit_status;
	uint64_t exit_signal, exit_time_ns;
	/* totals */
	uint64_t events, lost;
	uint64_t first_time_ns, last_time_ns; /* of events; 0 without events */
	bool complete;
	struct gmt_read_info info; /* after the metadata pass */
	/* the trailer, as written, against what the records hold */
	bool has_trailer;
	uint64_t trailer_end_ns, trailer_events, trailer_lost, trailer_reason;
	uint64_t trailer_stack_nodes;
	bool ends_with_trailer;			/* the last record read is a TRAILER */
	uint64_t last_seq;			/* of the last good chunk */
	uint64_t lost_in_records, lost_records; /* LOST records; lost = max(these, trailer) */
	/* LOST records of tid 0: events of children made without fork
	 * handlers (_Fork, a raw clone), not of this process. */
	uint64_t lost_in_children;
	bool nvml_missing; /* the library said NVML could not be used (a NOTE) */
	/* how sites are chosen and named (analysis/sites.h); set after opening */
	const struct site_opts *site_opts; /* NULL: the built-in rules */
	bool short_names;		   /* tables: short C++ names */
	/* private */
	struct site_cache *site_cache;
	struct site_api_cache *api_cache;
	struct site_name *short_cache;
	void *symbolizer; /* frames named from the module files (trace-names.c) */
	bool symbolizer_tried;
	uint64_t name_seconds; /* its bound (GPUMEMTRACE_NAME_SECONDS) */
	struct trace_demangled *demangled;
	size_t mods_cap, nodes_cap, devs_cap, meminfo_cap, notes_cap;
	size_t samples_cap, ranges_cap, counters_cap, fwooms_cap;
	bool have_last_dev;
	int64_t last_dev; /* of the last event: most repeat it */
};

/* Opens `path` and loads its metadata. Returns -1 on success, else the exit
 * code, after printing the one error line ("gpumemtrace CMD: PATH: ..."). */
int trace_open(struct trace *t, const char *cmd, const char *path);
void trace_close(struct trace *t);

/* Calls fn for every event in time order (file order among equal times).
 * With rp non-NULL, each event is applied to rp first and fn sees the live
 * set after it. Shows a progress bar on a terminal for long reads. Returns
 * -1, or the exit code if the read failed mid-way. */
typedef void (*trace_event_fn)(void *ctx, const struct gmt_event *e, struct replay *rp);
int trace_replay(struct trace *t, struct replay *rp, trace_event_fn fn, void *ctx);
/* (rp is not initialized by trace_replay: replay_init it first.) */

/* trace_open and a first trace_replay in one read of the file: the
 * metadata is complete only when it returns, so fn must not need it (nor
 * the ranges or samples) before then. Same returns as trace_open. */
int trace_open_replay(struct trace *t, const char *cmd, const char *path, struct replay *rp,
		      trace_event_fn fn, void *ctx);

/* A trace still being written, read as it grows: trace_open_follow opens
 * it and reads nothing (same returns as trace_open); each trace_follow
 * then reads what was added since the last, the metadata as trace_open
 * does (the metadata is whole again when it returns), and hands each new
 * event to on_event (in file order: each thread's events in time order,
 * the threads' batches interleaved; rp is NULL) and every other record to
 * on_record (may be NULL). Returns whether anything new was read. */
typedef void (*trace_record_fn)(void *ctx, const struct gmt_record *rec);
int trace_open_follow(struct trace *t, const char *cmd, const char *path);
bool trace_follow(struct trace *t, trace_event_fn on_event, trace_record_fn on_record, void *ctx);
/* A follower that has used the ranges, samples, counters and memory
 * snapshots read so far drops them: the next trace_follow holds only what
 * it adds, so a day-long follow keeps (and re-sorts) one poll's worth. */
void trace_follow_forget(struct trace *t);

/* After the last pass: the warning line for an incomplete trace (or the
 * error line for corruption); returns 0 or the exit code (reader_finish_cmd). */
int trace_finish(struct trace *t);

/* Time since the trace started, ns. */
int64_t trace_rel(const struct trace *t, uint64_t time_ns);
/* A relative time in human units: "+850 ns", "+12.3 us", "+4.56 ms",
 * "+1.234 s", "+2m05.3s", "+1h02m03s". buf >= 32. */
const char *trace_fmt_time(char *buf, int64_t ns);

/* ---- stacks ---- */

/* Number of frames in stack `id` (0 for the empty stack). */
int trace_stack_depth(const struct trace *t, uint64_t id);
/* Frame `depth` of stack `id`, resolved (SYMBOL records, else the module
 * files on this machine, else module+offset; PYFRAME records for Python
 * frames). false past the last frame. */
bool trace_frame(struct trace *t, uint64_t id, int depth, struct trace_frame *out);
/* Every frame of stack `id`, resolved, innermost first, into *out
 * (malloc'd); returns the count. */
int trace_frames(struct trace *t, uint64_t id, struct trace_frame **out);
/* The allocation site: the first frame of the user's code under the site
 * rules (analysis/sites.h, t->site_opts); the innermost frame when all are
 * inside the CUDA libraries. */
bool trace_site(struct trace *t, uint64_t id, struct trace_frame *out);
/* The library an allocation is charged to: the module of the first frame
 * outside the CUDA driver, runtime and tracer, whatever the site rules say
 * ("libnccl.so.2", "libtorch_cuda.so", the program; "python" for a Python
 * frame). "(no stack)" for 0. */
const char *trace_library(struct trace *t, uint64_t id);
/* "function (file:line)", else "module+0xoff", into buf. */
const char *trace_frame_text(const struct trace_frame *f, char *buf, size_t size);

/* Grouping for top/leaks/diff: the key text of stack `id` under `by`
 * ("stack": the site and `depth` callers; "function": the site function;
 * "library"; "api" needs the event, so it takes the api id). */
enum trace_group { GROUP_STACK, GROUP_FUNCTION, GROUP_LIBRARY, GROUP_API, GROUP_RANGE };
/* GROUP_RANGE (top --by range, analysis/phase.h) needs the event's thread and
 * time: trace_group_key gives a placeholder; its rows come from
 * trace_rows_get_key. The option tables (cli/) name the groups. */
const char *trace_group_key(struct trace *t, enum trace_group by, int depth, uint64_t stack_id,
			    uint32_t api, char *buf, size_t size);

/* The module holding ip, or NULL. */
const struct trace_module *trace_module_at(const struct trace *t, uint64_t ip);
/* " <- caller <- caller's caller" (up to n callers above frame site_depth,
 * stopping at the C start-up code), appended to buf. */
const char *trace_callers_text(struct trace *t, uint64_t id, int site_depth, int n, char *buf,
			       size_t size);
/* The device entry (NULL if unknown). */
const struct trace_device *trace_device(const struct trace *t, int64_t ordinal);
/* End of the trace: the trailer's time, else (a killed or truncated trace)
 * the time of the last record read: the last good chunk's. */
uint64_t trace_end_ns(const struct trace *t);
/* From time zero to trace_end_ns; 0 when the trace has neither an event nor
 * a trailer (killed before its first flush: there is no end to speak of),
 * never negative. Every report's duration is this one. */
int64_t trace_duration_ns(const struct trace *t);

/* ---- partial data ---- */

/* This process's events missing from the trace (a full ring; events of
 * children made without fork handlers, lost_in_children, are not). */
uint64_t trace_lost_own(const struct trace *t);
/* Why the trace is not complete ("no trailer: ...", "torn tail"...), or
 * NULL when it is. */
const char *trace_incomplete_why(const struct trace *t);
/* Events lost or the trace incomplete: every report says so. */
bool trace_partial(const struct trace *t);
/* "500 events lost, incomplete trace (torn tail)" ("" when neither),
 * into buf (>= 160). */
const char *trace_partial_what(const struct trace *t, char *buf, size_t size);
/* "PARTIAL DATA: " what ": allocations and frees may be missing", into
 * buf (>= 256): the line every report and export carries. */
const char *trace_partial_text(const struct trace *t, char *buf, size_t size);
/* ---- naming after the run (gpumemtrace symbolize, run) ---- */

struct trace_symbolize {
	uint64_t frames; /* distinct native frames in the trace's stacks */
	uint64_t had;	 /* of those, named by the trace's own SYMBOL records */
	uint64_t named;	 /* named now, from the module files on this machine */
	uint64_t cut;	 /* not looked up: naming's bound passed (GPUMEMTRACE_NAME_SECONDS) */
	bool appended;	 /* records were added */
};
/* Names the frames of t that the trace does not name, from the module
 * files on this machine, and adds their SYMBOL records (with an info NOTE
 * saying so, a warning NOTE if naming was cut short, and a fresh TRAILER
 * when the trace was complete) to its file, or writes a copy to the empty
 * file `out` (-1: in place; a copy holds the readable part, and a NOTE says
 * what was left out). In place only when the file ends in whole chunks and
 * no process holds it open. Returns -1, or the exit code after its one
 * error line. */
int trace_symbolize(struct trace *t, int out, struct trace_symbolize *res);
/* The symbolizer that names t's frames from the module files
 * (common/symbolize.h: what became of each module), made on first use. */
struct gmt_symbolizer;
struct gmt_symbolizer *trace_symbolizer(struct trace *t);

/* ---- several traces ---- */

/* The process's rank from RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or
 * SLURM_PROCID in its environment; -1 if none. */
int64_t trace_rank(const struct trace *t);
/* "rank 3 (pid 1234)", "pid 1234". */
const char *trace_label(const struct trace *t, char *buf, size_t size);

/* ---- report rows (top, leaks) ---- */

/* What a successful allocation event adds to: its enum bucket (replay.h);
 * -1 for events that allocate nothing (frees, failures, lookups). */
int trace_alloc_bucket(const struct gmt_event *e);

enum { TM_PEAK, TM_END, TM_TOTAL, TM_CALLS, TM_COUNT };
struct trace_row {
	UT_hash_handle hh;
	char *id; /* "device|key" */
	const char *key;
	int64_t device;
	uint64_t stack_id; /* the first stack seen (of the first trace) */
	uint32_t api;
	int trace;	      /* the trace that stack_id belongs to */
	uint64_t v[TM_COUNT]; /* summed over the traces */
	uint64_t peak_allocs, end_allocs, failed;
	uint64_t first_ns, last_ns; /* of its allocations live at the end (rel) */
	uint64_t bucket_end[BK_COUNT];
	uint64_t cur[TM_COUNT]; /* this trace's values, until trace_rows_fold */
	uint64_t max[TM_COUNT];
	int max_trace[TM_COUNT], ntraces;
	/* the libraries that made its calls (trace_library of each stack): a
	 * group of stacks may mix two (cuBLAS's workspace and c10's blocks) */
	struct trace_row_lib *libs;
	size_t nlibs, lib_last;
	uint64_t lib_stack; /* the stack lib_last was found for */
};
struct trace_row_lib {
	char *name;
	uint64_t v[TM_COUNT]; /* summed over the traces */
};
struct trace_row_ref;
struct trace_rows {
	struct trace_row *rows;
	struct trace_row_ref *cache; /* (device, stack, api) -> row, this trace */
	enum trace_group by;
	int depth, trace;
};
void trace_rows_init(struct trace_rows *rs, enum trace_group by, int depth);
/* The row of an explicit key (GROUP_RANGE); stack_id and api are kept for
 * the output. */
struct trace_row *trace_rows_get_key(struct trace_rows *rs, int64_t device, const char *key,
				     uint64_t stack_id, uint32_t api);
struct trace_row *trace_rows_get(struct trace_rows *rs, struct trace *t, int64_t device,
				 uint64_t stack_id, uint32_t api);
/* Adds v to the row's metric (cur[metric]) and to the library that made
 * stack_id's call. */
void trace_row_add(struct trace_row *r, struct trace *t, uint64_t stack_id, int metric, uint64_t v);
/* The row's libraries, largest by v[metric] first (then by the other
 * figures, then by name), into a malloc'd array; the count. */
size_t trace_row_libs(const struct trace_row *r, int metric, const struct trace_row_lib ***out);
/* The library column: the one library, or with brief "libcublas.so.13 +1",
 * else "mixed: libcublas.so.13 64.1 MiB, libc10_cuda.so 33.0 MiB" (the
 * libraries with a share of v[metric]). NULL when the row has none. */
const char *trace_row_library(const struct trace_row *r, int metric, bool brief, char *buf,
			      size_t size);
/* Ends the current trace: folds each row's cur[] into max[]/max_trace[]. */
void trace_rows_fold(struct trace_rows *rs);
/* The rows sorted by v[metric] (then the key), malloc'd; *n set. */
struct trace_row **trace_rows_sorted(struct trace_rows *rs, int metric, size_t *n);
void trace_rows_free(struct trace_rows *rs);

/* ---- sizes ---- */

/* "1.5GiB", "512MiB", "2GB", "4096", "1.5 GiB" (case-insensitive units:
 * B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB; KB = 1000, KiB = 1024).
 * Returns 0, or -1 for anything else. */
int parse_size(const char *s, uint64_t *out);

#endif
