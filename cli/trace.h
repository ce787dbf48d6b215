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
#ifndef GMT_CLI_TRACE_H
#define GMT_CLI_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uthash.h>

#include "cli.h"
#include "replay.h"

struct trace_module {
	uint64_t id, bias, start, end;
	char *path;
	const char *library; /* basename of path: "libnccl.so.2", "python3.11" */
	uint8_t *build_id;
	size_t build_id_len;
	bool cuda; /* the CUDA driver or runtime, or the tracer itself */
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
	struct trace_node *nodes; /* nodes[id - 1] */
	size_t nnodes;
	struct trace_meminfo *meminfo;
	size_t nmeminfo;
	char **notes;
	size_t nnotes;
	/* totals */
	uint64_t events, lost;
	uint64_t first_time_ns, last_time_ns; /* of events; 0 without events */
	bool complete;
	struct gmt_read_info info; /* after the metadata pass */
	/* private */
	void *symbolizer;
	bool symbolizer_tried;
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

/* After the last pass: the warning line for an incomplete trace (or the
 * error line for corruption); returns 0 or the exit code (cli_finish). */
int trace_finish(struct trace *t);

/* Time since the trace started, ns. */
int64_t trace_rel(const struct trace *t, uint64_t time_ns);

/* ---- stacks ---- */

/* Number of frames in stack `id` (0 for the empty stack). */
int trace_stack_depth(const struct trace *t, uint64_t id);
/* Frame `depth` of stack `id`, resolved (SYMBOL records, else the module
 * files on this machine, else module+offset). false past the last frame. */
bool trace_frame(struct trace *t, uint64_t id, int depth, struct trace_frame *out);
/* The allocation site: the first frame, innermost out, outside the CUDA
 * driver, runtime and tracer; the innermost frame when all are inside. */
bool trace_site(struct trace *t, uint64_t id, struct trace_frame *out);
/* The library an allocation is charged to: the module of its site frame
 * ("libnccl.so.2", "libtorch_cuda.so", the program). "(no stack)" for 0. */
const char *trace_library(struct trace *t, uint64_t id);
/* "function (file:line)", else "module+0xoff", into buf. */
const char *trace_frame_text(const struct trace_frame *f, char *buf, size_t size);

/* Grouping for top/leaks/diff: the key text of stack `id` under `by`
 * ("stack": the site and `depth` callers; "function": the site function;
 * "library"; "api" needs the event, so it takes the api id). */
enum trace_group { GROUP_STACK, GROUP_FUNCTION, GROUP_LIBRARY, GROUP_API };
int trace_group_parse(const char *s, enum trace_group *out); /* 0 ok */
const char *trace_group_key(struct trace *t, enum trace_group by, int depth, uint64_t stack_id,
			    uint32_t api, char *buf, size_t size);

/* ---- sizes ---- */

/* "1.5GiB", "512MiB", "2GB", "4096", "1.5 GiB" (case-insensitive units:
 * B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB; KB = 1000, KiB = 1024).
 * Returns 0, or -1 for anything else. */
int parse_size(const char *s, uint64_t *out);

#endif
