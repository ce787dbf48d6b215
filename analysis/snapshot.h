/* Shared by plot, flamegraph and export: the kinds device memory is split
 * into, the live set at the device peak or at the end of a trace, the
 * events with the live memory after each, and the memory by stack. */
#ifndef GMT_ANALYSIS_SNAPSHOT_H
#define GMT_ANALYSIS_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "reader/hash.h"

#include "analysis/trace.h"

enum dev_kind { DK_DEVICE, DK_ASYNC, DK_VMM, DK_COUNT };
extern const char *const dev_kind_label[DK_COUNT]; /* "cudaMalloc / cuMemAlloc"... */
extern const char *const dev_kind_key[DK_COUNT];   /* "device", "stream_ordered", "vmm" */
/* The kind of a live allocation that counts as device memory; -1 otherwise. */
int dev_kind_of(const struct rp_live *l);

/* Calls fn for every device-memory allocation live at the moment all
 * devices together peaked (at_end false) or at the end of the trace.
 * *when_ns: that moment (absolute). Returns -1, or the exit code. */
typedef void (*snapshot_fn)(void *ctx, const struct rp_live *l);
int snapshot_live(struct trace *t, bool at_end, snapshot_fn fn, void *ctx, uint64_t *when_ns);
/* The same at the trace's first out-of-memory: right after its first failed
 * device allocation, else (a framework's OOM that made no driver call) at
 * fw_oom_ns when not 0. *found: whether there was one (fn not called
 * otherwise). */
int snapshot_live_oom(struct trace *t, uint64_t fw_oom_ns, snapshot_fn fn, void *ctx,
		      uint64_t *when_ns, bool *found);
/* The same in one read of the file: opens path into t (trace_open's
 * returns; after a failed open t is not open) and replays while reading.
 * fn is called after the read (the stacks' names known), for each
 * allocation live at the moment, and, for those freed after the peak, once
 * per (device, stack, api) with size the group's bytes (only device,
 * stack_id, api, size and bucket set): for reports that sum by stack. */
int snapshot_live_read(struct trace *t, const char *cmd, const char *path, bool at_end,
		       snapshot_fn fn, void *ctx, uint64_t *when_ns);

/* Every event in order, for the exports that write one record per event.
 * With live, the live device memory by kind on each device below
 * SNAPSHOT_DEVS after the event (kinds[device][dev_kind]), and which
 * devices it changed; without, kinds and changed are NULL. Returns -1, or
 * the exit code. */
#define SNAPSHOT_DEVS 64
typedef void (*snapshot_event_fn)(void *ctx, const struct gmt_event *e,
				  const uint64_t (*kinds)[DK_COUNT], const bool *changed);
int snapshot_walk(struct trace *t, bool live, snapshot_event_fn fn, void *ctx);

/* Device memory by stack: what every stack allocated over the run (count,
 * bytes) and what it held live at a moment (as snapshot_live's). */
struct snapshot_stack {
	UT_hash_handle hh;
	uint64_t stack_id;
	int64_t v[4]; /* alloc_objects, alloc_space, inuse_objects, inuse_space */
};
/* Into *out (a uthash table: snapshot_stacks_free). -1, or the exit code. */
int snapshot_stacks(struct trace *t, bool at_end, struct snapshot_stack **out);
void snapshot_stacks_free(struct snapshot_stack **stacks);

#endif
