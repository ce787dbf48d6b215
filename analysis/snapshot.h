/* Shared by plot, flamegraph and export: the kinds device memory is split
 * into, and the live set at the device peak or at the end of a trace. */
#ifndef GMT_ANALYSIS_SNAPSHOT_H
#define GMT_ANALYSIS_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

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

#endif
