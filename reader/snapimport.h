/* A PyTorch memory snapshot pickle (torch.cuda.memory._dump_snapshot)
 * converted into a trace: what `gpumemtrace import` writes, and how every
 * command reads a pickle (gmt_reader_open converts it first, into an
 * unlinked temporary file).
 *
 * The mapping (docs/trace-format.md, "PyTorch snapshots"):
 *   - the snapshot's segments are the device's allocations: segment_alloc
 *     and segment_free become cudaMalloc and cudaFree events, an
 *     expandable segment's segment_map and segment_unmap cuMemCreate +
 *     cuMemMap and cuMemUnmap + cuMemRelease;
 *   - a history that starts mid-run (PyTorch keeps the last max_entries):
 *     what was reserved before its first entry is rebuilt from the
 *     segments at its end and the frees of segments it never saw made,
 *     as memory_viz does, placed at its start, and a NOTE says how much;
 *   - frames become stacks: Python frames as PYFRAME records, C++ frames
 *     (stacks="all") as SYMBOLs in a module named after the library they
 *     come from (libtorch, the interpreter, libc);
 *   - time_us becomes the events' times (older snapshots have none: the
 *     entries are then 1 us apart, in order, and a NOTE says so);
 *   - allocator_settings become the process's PYTORCH_CUDA_ALLOC_CONF;
 *   - external_annotations become RANGE start/end pairs.
 * Memory is bounded by the live segments and the distinct frames and
 * stacks, all against the pickle budget (reader/pickle.h). */
#ifndef GMT_READER_SNAPIMPORT_H
#define GMT_READER_SNAPIMPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "reader/pickle.h"

/* Converts the pickle in in_fd (in_size bytes) to a trace written to
 * out_fd. name: the pickle's path, for the trace's command line. 0, or -1
 * with *err (one line): the pickle's own errors (pickle.h), or a write
 * error (PK_ERR_IO, with errno's text). */
int snap_import(int in_fd, uint64_t in_size, int out_fd, const char *name, bool compress,
		struct pk_error *err);

#endif
