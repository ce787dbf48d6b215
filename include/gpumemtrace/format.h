/* gpumemtrace trace format, version 5 (readers also take versions 1 to 4). Shared by the
 * library and the CLI.
 *
 * docs/trace-format.md is the prose; `gpumemtrace dump` is the spec you can
 * run. Every multi-byte fixed field is little-endian and is written byte by
 * byte (common/codec.h), never as a struct, so no compiler padding reaches disk.
 *
 * File = header (GMT_HEADER_SIZE bytes) + chunks, each:
 *
 *   0      4       8       12      16
 *   +------+-------+-------+-------+=====================+
 *   | GMTC | len   | seq   | crc32c| payload (len bytes) |
 *   +------+-------+-------+-------+=====================+
 *
 * A chunk is written with one write(), so a killed process leaves whole
 * chunks plus at most one torn tail, which the CRC exposes. The payload is a
 * sequence of records, each a varint tag followed by its body (below).
 *
 * Version 3 adds the compressed chunk: magic GMTZ, the same header (len is
 * the payload's length on disk, the CRC covers those bytes), and a payload
 * of v raw_len + one zstd frame that decompresses to exactly raw_len bytes
 * (raw_len <= GMT_CHUNK_MAX_PAYLOAD) of records, as a GMTC payload holds. A
 * writer uses it only when it is smaller; GMTC and GMTZ chunks mix freely.
 * A frame that does not decompress, or not to raw_len bytes, makes the
 * chunk corrupt, as a CRC mismatch does. */
#ifndef GPUMEMTRACE_FORMAT_H
#define GPUMEMTRACE_FORMAT_H

#include <stdint.h>

#define GMT_MAGIC	       "\x89GMTRACE" /* 8 bytes; the high byte catches 7-bit mangling */
#define GMT_MAGIC_LEN	       8
#define GMT_FORMAT_VERSION     5
#define GMT_FORMAT_VERSION_MIN 1 /* oldest version readers still take */
#define GMT_HEADER_SIZE	       64
#define GMT_ENDIAN_LITTLE      1

/* Header layout (offsets in bytes). Readers honour header_size, so later
 * versions may append fields. */
enum gmt_header_offset {
	GMT_HDR_MAGIC = 0,	  /* u8[8]  */
	GMT_HDR_VERSION = 8,	  /* u16    */
	GMT_HDR_HEADER_SIZE = 10, /* u16    */
	GMT_HDR_ENDIAN = 12,	  /* u8: GMT_ENDIAN_LITTLE */
	GMT_HDR_FEATURES = 16,	  /* u32: GMT_FEAT_* */
	GMT_HDR_START_WALL = 24,  /* u64: CLOCK_REALTIME ns at trace start */
	GMT_HDR_START_MONO = 32,  /* u64: CLOCK_MONOTONIC ns at trace start (library load) */
	GMT_HDR_PID = 40,	  /* u32 */
};

enum gmt_feature {
	GMT_FEAT_STACKS = 1u << 0, /* events carry native stack ids */
};

#define GMT_CHUNK_MAGIC	      0x43544d47u /* "GMTC" little-endian */
#define GMT_CHUNK_MAGIC_ZSTD  0x5a544d47u /* "GMTZ": zstd payload (version 3) */
#define GMT_CHUNK_HEADER_SIZE 16
#define GMT_CHUNK_MAX_PAYLOAD (16u << 20)

/* Record tags. A reader skips nothing it does not know: an unknown tag ends
 * the chunk, because record bodies carry no length. New record kinds bump
 * the format version. Bodies ("v" varint, "z" zigzag varint, "s" varint
 * length + bytes, "b" the same for binary):
 *
 * PROCESS  v pid, v ppid, v start_wall_ns, s hostname, s exe,
 *          v argc, argc x s arg, v nenv, nenv x (s key, s value)
 * MODULE   v id, v load_bias, v start, v end, s path, b build_id
 * DEVICE   z ordinal, s name, b uuid, v total_bytes, v cc_major, v cc_minor,
 *          v driver_version
 * STACK    v count, count x (v parent_id, v ip): new stack-tree nodes. Ids
 *          are implicit, 1, 2, 3... in file order; 0 is the empty stack.
 *          The ip is a return address (the frame's pc for the first).
 * THREAD   v tid, s name
 * EVENTS   v tid, v base_time_ns, v count, then count events:
 *
 *     head  v  (api << 4) | dev_changed << 3 | has_aux2 << 2 | has_aux << 1 | failed
 *     dt    v  ns since the previous event of this record (or base_time)
 *     dptr  z  ptr - previous ptr of this record (starts at 0)
 *     size  v
 *     dstk  z  stack_id - previous stack id of this record (starts at 0)
 *     [failed]      v result (CUresult / cudaError_t)
 *     [dev_changed] z device (-1: host or unknown); starts at 0
 *     [has_aux]     v aux   (meaning per API: gmt_api_info)
 *     [has_aux2]    v aux2
 *
 * LOST     v tid, v count, v time_ns: events a full ring could not take
 * SYMBOL   v ip, v module_id, s function, s file, v line (0: unknown)
 * NOTE     v level (0 info, 1 warning), s text
 * MEMINFO  v tid, v time_ns, z device, v free_bytes, v total_bytes, v api:
 *          what cuMemGetInfo said on the failing thread right after an
 *          allocation failed with out-of-memory (only when a context was
 *          current: the tracer never creates one)
 * SAMPLE   v time_ns, v nvml_index, b uuid (16 bytes, as CUDA's), v used_bytes,
 *          v total_bytes, v flags (GMT_SAMPLE_*), v process_used_bytes,
 *          v reason (GMT_SAMPLE_WHY_*): one NVML reading of one device, taken on
 *          the tracer's sampling thread. process_used_bytes is what nvidia-smi
 *          shows for this process; valid with GMT_SAMPLE_PROCESS_KNOWN.
 *          (version 2)
 * RANGE    v tid, v time_ns, v op (GMT_RANGE_*), v id, v source
 *          (GMT_RANGE_SRC_*), s text: a phase marker. PUSH/POP nest per
 *          thread; START/END pair by id across threads; MARK is an instant.
 *          POP and END carry an empty text. (version 2)
 * PYFRAME  v id, s function, s file, v line: a Python frame. A stack node
 *          whose ip is GMT_PYFRAME_IP(id) is this frame: Python frames are
 *          spliced into the native stack where the interpreter ran them.
 *          id 0 (GMT_PYFRAME_NONE) is never defined: it marks a stack whose
 *          thread ran Python but did not hold the GIL, so its Python frames
 *          could not be read. PYFRAMEs may follow the stack nodes that use
 *          them: readers resolve them after the whole file. (version 2)
 * EVENTCOLS  the same events as EVENTS, one column per field, so that
 *          zstd sees like bytes together (written in place of EVENTS when
 *          chunks are compressed; version 3): v tid, v base_time_ns,
 *          v count, 6 x v column length in bytes, then the columns: every
 *          event's head, dt, ptr, size, dstk, and last its optional fields
 *          ([result] [device] [aux] [aux2], event by event). The ptr
 *          column holds each pointer whole, u64 little-endian (a free then
 *          repeats its allocation's 8 bytes, which zstd finds), not dptr.
 *          Each column holds exactly count values (the optional one: what
 *          the heads call for). Read as an EVENTS record.
 * COUNTERS v tid, v time_ns, v reason (GMT_COUNTERS_WHY_*), s source
 *          ("torch", "jax", "tensorflow"), s device (the framework's name
 *          for it: "cuda:0", "gpu:0"), z ordinal (-1: unknown), v count,
 *          count x (s name, v value): a framework's own memory counters, as
 *          it names them, written through the marker API by the helper of
 *          `run --framework-counters`. (version 4)
 * FWSNAP   v tid, v time_ns, v wall_ns, v seq, v reason (GMT_FWSNAP_WHY_*),
 *          s source ("torch"), v flags (GMT_FWSNAP_*), v max_entries (the
 *          framework's history bound; 0: unknown or none), v count,
 *          count x (s key, s value): a snapshot of a framework allocator's
 *          own view (PyTorch's torch.cuda.memory._snapshot()), taken on
 *          thread tid at time_ns (monotonic) = wall_ns (CLOCK_REALTIME):
 *          the pair maps the framework's wall-clock entry times onto the
 *          trace's clock. seq (>= 1) names the snapshot: its FWTRACE and
 *          FWSEG records carry it and come after it in the file (records
 *          of other snapshots may come between). The pairs are the
 *          allocator's settings, values as text. (version 5)
 * FWTRACE  v seq, z device, v flags (GMT_FWTRACE_*), v base_time_us,
 *          v count, count x entry: the allocator's history entries on
 *          one device, oldest first, that no earlier snapshot wrote.
 *          Each entry is coded against the previous one of the record
 *          (state starts at addr 0, time base_time_us, stack 0):
 *            v action (GMT_FW_*), z daddr, v size, v stream,
 *            z dtime_us, z dstack
 *          addr is the block's or segment's address; for GMT_FW_OOM it
 *          is the device's free bytes (cudaMemGetInfo), size the rounded
 *          request. time_us is the framework's own stamp (Unix us; 0:
 *          none). stack names the entry's frames in the stack tree
 *          (Python frames as PYFRAME ips, innermost first). At most
 *          GMT_FW_BATCH_MAX entries. (version 5)
 * FWSEG    v seq, z device, v address, v total_size, v stream, v flags
 *          (GMT_FWSEG_*), v pool_a, v pool_b, v stack, v count,
 *          count x block: one segment of a snapshot and its blocks, in
 *          address order, each coded as
 *            z gap (its address - the end of the record's previous
 *              block; for its first block, - the segment's address),
 *            v size, v requested_size, v state (GMT_FWBLOCK_*),
 *            z dstack (against the previous block's; the first block's
 *              against the segment's stack)
 *          A segment of more than GMT_FW_BATCH_MAX blocks is written
 *          as several records, the later ones flagged
 *          GMT_FWSEG_CONTINUED. pool (a, b) is the segment's pool id,
 *          (0, 0) the default pool. (version 5)
 * FWOOM    v tid, v time_ns, v how (GMT_FWOOM_*), s source ("torch", "jax",
 *          "tensorflow", "cupy"), s type (the exception's class,
 *          "torch.OutOfMemoryError"; empty for the observer), z ordinal (-1:
 *          unknown), v count, count x (s name, v value), s message: a
 *          framework's out-of-memory error as the helper of `run
 *          --framework-counters` saw it: the figures it read then (the
 *          observer's arguments, the pool's counters) and the error's text
 *          (cut at GMT_FWOOM_MESSAGE_MAX bytes). (version 5)
 * EXIT     v time_ns, v how (GMT_EXIT_*), z status, v signal (0: none): how
 *          the process ended, as the library saw it; written right before
 *          the final TRAILER. A trace without one ended some other way (a
 *          signal, a crash) or comes from before version 5. (version 5)
 * TRAILER  v end_time_ns, v events, v lost, v stack_nodes, v reason
 *          (GMT_END_*). Complete trace: the last record read is a TRAILER.
 *          A TRAILER followed by more chunks (a failed exec) is not final. */
enum gmt_tag {
	GMT_TAG_PROCESS = 1,
	GMT_TAG_MODULE = 2,
	GMT_TAG_DEVICE = 3,
	GMT_TAG_STACK = 4,
	GMT_TAG_THREAD = 5,
	GMT_TAG_EVENTS = 6,
	GMT_TAG_LOST = 7,
	GMT_TAG_SYMBOL = 8,
	GMT_TAG_NOTE = 9,
	GMT_TAG_TRAILER = 10,
	GMT_TAG_MEMINFO = 11,
	GMT_TAG_SAMPLE = 12,	/* version 2 */
	GMT_TAG_RANGE = 13,	/* version 2 */
	GMT_TAG_PYFRAME = 14,	/* version 2 */
	GMT_TAG_EVENTCOLS = 15, /* version 3 */
	GMT_TAG_COUNTERS = 16,	/* version 4 */
	GMT_TAG_FWSEG = 17,	/* version 5 */
	GMT_TAG_FWTRACE = 18,	/* version 5 */
	GMT_TAG_FWSNAP = 19,	/* version 5 */
	GMT_TAG_FWOOM = 20,	/* version 5 */
	GMT_TAG_EXIT = 21,	/* version 5 */
	GMT_TAG_MAX_ = 21,
};

/* SAMPLE flags and reasons. */
enum gmt_sample_flag {
	GMT_SAMPLE_PROCESS_KNOWN = 1u << 0, /* process_used_bytes is valid */
};
enum gmt_sample_why {
	GMT_SAMPLE_WHY_PERIODIC = 0, /* every GPUMEMTRACE_SAMPLE_MS */
	GMT_SAMPLE_WHY_PEAK = 1,     /* traced device bytes reached a new high */
	GMT_SAMPLE_WHY_OOM = 2,	     /* an allocation failed */
	GMT_SAMPLE_WHY_START = 3,    /* the sampler's first reading */
	GMT_SAMPLE_WHY_END = 4,	     /* at the end of the trace */
};

/* COUNTERS reasons. */
enum gmt_counters_why {
	GMT_COUNTERS_WHY_PERIODIC = 0, /* every GPUMEMTRACE_SAMPLE_MS */
	GMT_COUNTERS_WHY_OOM = 1,      /* the framework's out-of-memory observer */
	GMT_COUNTERS_WHY_START = 2,    /* the framework was first seen */
	GMT_COUNTERS_WHY_END = 3,      /* at interpreter exit */
};

/* FWSNAP reasons and flags. */
enum gmt_fwsnap_why {
	GMT_FWSNAP_WHY_REQUESTED = 0, /* through the API, for no reason below */
	GMT_FWSNAP_WHY_OOM = 1,	      /* the framework's out-of-memory observer */
	GMT_FWSNAP_WHY_EXIT = 2,      /* at interpreter exit */
	GMT_FWSNAP_WHY_CHANGE = 3,    /* the program itself changed the recording */
	GMT_FWSNAP_WHY_IMPORT = 4,    /* converted from a snapshot file */
};
enum gmt_fwsnap_flag {
	GMT_FWSNAP_HISTORY = 1u << 0,	 /* the history was being recorded */
	GMT_FWSNAP_PY_STACKS = 1u << 1,	 /* entries carry Python frames */
	GMT_FWSNAP_CPP_STACKS = 1u << 2, /* and C++ frames */
	GMT_FWSNAP_NO_TIME = 1u << 3,	 /* entries carry no time (older PyTorch) */
};

/* FWTRACE actions: PyTorch's trace entry actions. */
enum gmt_fw_action {
	GMT_FW_UNKNOWN = 0,	   /* an action this writer did not know */
	GMT_FW_ALLOC = 1,	   /* a block handed to a tensor; size: as requested */
	GMT_FW_FREE_REQUESTED = 2, /* the tensor freed; the block waits for its streams */
	GMT_FW_FREE_COMPLETED = 3, /* the block back in the cache */
	GMT_FW_SEGMENT_ALLOC = 4,  /* cudaMalloc of a segment */
	GMT_FW_SEGMENT_FREE = 5,   /* cudaFree of a segment */
	GMT_FW_SEGMENT_MAP = 6,	   /* pages mapped into an expandable segment */
	GMT_FW_SEGMENT_UNMAP = 7,  /* and unmapped */
	GMT_FW_OOM = 8,		   /* an allocation failed: addr = device free bytes */
	GMT_FW_SNAPSHOT = 9,	   /* a snapshot was taken */
	GMT_FW_ANNOTATE = 10,	   /* metadata attached to a live block (torch 2.14) */
	GMT_FW_ACTION_MAX_ = 10,
};
enum gmt_fwtrace_flag {
	/* Entries before this record's first one are missing: the history
	 * dropped them (its bound, or a program that cleared it). */
	GMT_FWTRACE_GAP = 1u << 0,
};

/* FWSEG flags and block states. */
enum gmt_fwseg_flag {
	GMT_FWSEG_EXPANDABLE = 1u << 0, /* is_expandable */
	GMT_FWSEG_SMALL = 1u << 1,	/* segment_type "small" (else "large") */
	GMT_FWSEG_CONTINUED = 1u << 2,	/* more blocks of the previous FWSEG's segment */
};
enum gmt_fwblock_state {
	GMT_FWBLOCK_INACTIVE = 0,	     /* free, in the cache */
	GMT_FWBLOCK_ACTIVE_ALLOCATED = 1,    /* a tensor's */
	GMT_FWBLOCK_ACTIVE_PENDING_FREE = 2, /* freed, waiting for its streams */
	GMT_FWBLOCK_UNKNOWN = 3,
};
/* Entries per FWTRACE record and blocks per FWSEG record, at most. */
#define GMT_FW_BATCH_MAX 65536

/* FWOOM: where the helper saw the error. */
enum gmt_fwoom_how {
	GMT_FWOOM_OBSERVER = 0,	  /* PyTorch's out-of-memory observer: the allocator gave up;
				   * the program may still catch the error */
	GMT_FWOOM_EXCEPTHOOK = 1, /* uncaught in the main thread (sys.excepthook) */
	GMT_FWOOM_THREAD = 2,	  /* uncaught in a thread (threading.excepthook) */
	GMT_FWOOM_AT_EXIT = 3,	  /* found at exit (sys.last_value): uncaught, but another
				   * excepthook replaced ours */
};
#define GMT_FWOOM_MESSAGE_MAX 4096
#define GMT_FWOOM_VALUES_MAX  32

/* EXIT: the way out. */
enum gmt_exit_how {
	GMT_EXIT_EXIT = 0,  /* exit(status) or main's return */
	GMT_EXIT__EXIT = 1, /* _exit / _Exit (os._exit) */
};

/* RANGE ops and sources. */
enum gmt_range_op {
	GMT_RANGE_PUSH = 1,  /* nvtxRangePush*, gpumemtrace_range_push */
	GMT_RANGE_POP = 2,   /* nvtxRangePop, gpumemtrace_range_pop */
	GMT_RANGE_START = 3, /* nvtxRangeStart*: id names it for its END */
	GMT_RANGE_END = 4,   /* nvtxRangeEnd */
	GMT_RANGE_MARK = 5,  /* nvtxMark*, gpumemtrace_mark */
};
enum gmt_range_source {
	GMT_RANGE_SRC_NVTX = 0,
	GMT_RANGE_SRC_API = 1, /* include/gpumemtrace/gpumemtrace.h */
};

/* Python frames in the stack tree: ips at or above this base are never
 * user-space code addresses on any 64-bit Linux target. */
#define GMT_PYFRAME_IP_BASE   0xfe00000000000000ull
#define GMT_PYFRAME_IP(id)    (GMT_PYFRAME_IP_BASE + (uint64_t)(id))
#define GMT_IS_PYFRAME_IP(ip) ((uint64_t)(ip) >= GMT_PYFRAME_IP_BASE)
#define GMT_PYFRAME_ID(ip)    ((uint64_t)(ip)-GMT_PYFRAME_IP_BASE)
#define GMT_PYFRAME_NONE      0

enum gmt_end_reason {
	GMT_END_EXIT = 0,  /* exit() or return from main */
	GMT_END__EXIT = 1, /* _exit / _Exit */
	GMT_END_EXEC = 2,  /* about to exec */
};

/* Event head bits. */
#define GMT_EV_FAILED	   0x1u
#define GMT_EV_HAS_AUX	   0x2u
#define GMT_EV_HAS_AUX2	   0x4u
#define GMT_EV_DEV_CHANGED 0x8u
#define GMT_EV_API_SHIFT   4
#define GMT_EV_COLUMNS	   6 /* EVENTCOLS: head, dt, dptr, size, dstk, optional */

/* What an API does to the live set. */
enum gmt_op {
	GMT_OP_ALLOC = 1,      /* ptr (or handle) of size bytes becomes live */
	GMT_OP_FREE = 2,       /* ptr (or handle) dies */
	GMT_OP_VMM_MAP = 3,    /* ptr..ptr+size maps handle aux at offset aux2 */
	GMT_OP_VMM_UNMAP = 4,  /* ptr..ptr+size unmapped */
	GMT_OP_VMM_RETAIN = 5, /* handle ptr gains a reference (aux = address) */
	GMT_OP_POOL_TRIM = 6,  /* pool ptr trimmed to size bytes */
	GMT_OP_LOOKUP = 7,     /* entry-point lookup; not a memory event */
	GMT_OP_CTX_CREATE = 8, /* a context made or retained: not in the live set */
	GMT_OP_CTX_DESTROY = 9,
};

/* Which memory an allocation is. Device bytes (the summary's peak) are
 * DEVICE + ASYNC + VMM_PHYS on a device location. */
enum gmt_kind {
	GMT_KIND_NONE = 0,
	GMT_KIND_DEVICE = 1,   /* cuMemAlloc, cudaMalloc, pitch, 3D */
	GMT_KIND_ASYNC = 2,    /* stream-ordered */
	GMT_KIND_VMM_PHYS = 3, /* cuMemCreate handle; aux = location type */
	GMT_KIND_MANAGED = 4,
	GMT_KIND_HOST_PINNED = 5, /* cuMemAllocHost, cudaHostAlloc... */
	GMT_KIND_HOST_REGISTERED = 6,
	GMT_KIND_VMM_VA = 7, /* address reservation */
	GMT_KIND_ARRAY = 8,
	GMT_KIND_IPC = 9,   /* another process's memory, opened here */
	GMT_KIND_POOL = 10, /* a memory pool object */
	GMT_KIND_MAX_ = 10,
};

/* Namespaces a free is matched in: frees are matched by address (or handle)
 * whichever function frees, but a VMM handle, an array and a pool are not
 * addresses. */
enum gmt_space {
	GMT_SPACE_ADDR = 0,
	GMT_SPACE_VMM_HANDLE = 1,
	GMT_SPACE_ARRAY = 2,
	GMT_SPACE_POOL = 3,
	GMT_SPACE_VA = 4, /* reservations overlap mapped addresses */
};

/* What an event's aux and aux2 hold: the last column of GMT_API_LIST
 * (`gpumemtrace dump` names them so). Present only when set
 * (GMT_EV_HAS_AUX, GMT_EV_HAS_AUX2). */
enum gmt_aux {
	GMT_AUX_NONE = 0,	 /* nothing */
	GMT_AUX_PITCH = 1,	 /* aux = pitch, aux2 = width in bytes */
	GMT_AUX_STREAM = 2,	 /* aux = stream, aux2 = pool (FromPool) */
	GMT_AUX_FLAGS = 3,	 /* aux = the call's flags */
	GMT_AUX_LOCATION = 4,	 /* aux = location type (1 device, 2 host...) */
	GMT_AUX_MAP = 5,	 /* aux = the handle mapped, aux2 = its offset */
	GMT_AUX_RESERVE = 6,	 /* aux = alignment, aux2 = the requested address */
	GMT_AUX_ADDRESS = 7,	 /* aux = the address asked about */
	GMT_AUX_HANDLE_TYPE = 8, /* aux = the shareable handle's type */
	GMT_AUX_NVML = 9,	 /* aux = NVML bytes used before the call, aux2 = after */
};

/* X(id, name, op, kind, space, aux). Ids are on disk: never renumber, only
 * append. ptr and size per API:
 *   alloc:           ptr, size = bytes the caller holds
 *   pitch, 3D:       size = pitch * height (* depth)
 *   cuMemCreate:     ptr = handle
 *   cuMemMap:        ptr = va, size
 *   reserve:         ptr = va, size
 *   retain, import:  ptr = handle
 *   arrays:          ptr = array, size = width * height * depth * element bytes
 *   pool create:     ptr = pool; trim: ptr = pool, size = bytes to keep
 *   contexts:        ptr = context, size = what the call cost the device
 *                    (after - before, 0 when it cost nothing or NVML is
 *                    missing; for DESTROY what it gave back, before - after);
 *                    NVML's readings in aux and aux2 when it measured them.
 *                    The process's usage when NVML reports it, else the
 *                    device's. Primary-context retains after the first cost 0. */
/* clang-format off */
#define GMT_API_LIST(X)                                                                          \
	X(1, cuMemAlloc_v2, GMT_OP_ALLOC, GMT_KIND_DEVICE, GMT_SPACE_ADDR, GMT_AUX_NONE)                             \
	X(2, cuMemAllocPitch_v2, GMT_OP_ALLOC, GMT_KIND_DEVICE, GMT_SPACE_ADDR, GMT_AUX_PITCH)                       \
	X(3, cuMemFree_v2, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NONE)                                 \
	X(4, cuMemAllocManaged, GMT_OP_ALLOC, GMT_KIND_MANAGED, GMT_SPACE_ADDR, GMT_AUX_FLAGS)                       \
	X(5, cuMemAllocHost_v2, GMT_OP_ALLOC, GMT_KIND_HOST_PINNED, GMT_SPACE_ADDR, GMT_AUX_FLAGS)                   \
	X(6, cuMemHostAlloc, GMT_OP_ALLOC, GMT_KIND_HOST_PINNED, GMT_SPACE_ADDR, GMT_AUX_FLAGS)                      \
	X(7, cuMemFreeHost, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NONE)                                \
	X(8, cuMemHostRegister_v2, GMT_OP_ALLOC, GMT_KIND_HOST_REGISTERED, GMT_SPACE_ADDR, GMT_AUX_FLAGS)            \
	X(9, cuMemHostUnregister, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NONE)                          \
	X(10, cuMemAllocAsync, GMT_OP_ALLOC, GMT_KIND_ASYNC, GMT_SPACE_ADDR, GMT_AUX_STREAM)                         \
	X(11, cuMemAllocAsync_ptsz, GMT_OP_ALLOC, GMT_KIND_ASYNC, GMT_SPACE_ADDR, GMT_AUX_STREAM)                    \
	X(12, cuMemAllocFromPoolAsync, GMT_OP_ALLOC, GMT_KIND_ASYNC, GMT_SPACE_ADDR, GMT_AUX_STREAM)                 \
	X(13, cuMemAllocFromPoolAsync_ptsz, GMT_OP_ALLOC, GMT_KIND_ASYNC, GMT_SPACE_ADDR, GMT_AUX_STREAM)            \
	X(14, cuMemFreeAsync, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_STREAM)                            \
	X(15, cuMemFreeAsync_ptsz, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_STREAM)                       \
	X(16, cuMemPoolCreate, GMT_OP_ALLOC, GMT_KIND_POOL, GMT_SPACE_POOL, GMT_AUX_NONE)                            \
	X(17, cuMemPoolDestroy, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_POOL, GMT_AUX_NONE)                            \
	X(18, cuMemPoolTrimTo, GMT_OP_POOL_TRIM, GMT_KIND_NONE, GMT_SPACE_POOL, GMT_AUX_NONE)                        \
	X(19, cuMemCreate, GMT_OP_ALLOC, GMT_KIND_VMM_PHYS, GMT_SPACE_VMM_HANDLE, GMT_AUX_LOCATION)                  \
	X(20, cuMemRelease, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_VMM_HANDLE, GMT_AUX_NONE)                          \
	X(21, cuMemMap, GMT_OP_VMM_MAP, GMT_KIND_NONE, GMT_SPACE_VMM_HANDLE, GMT_AUX_MAP)                            \
	X(22, cuMemUnmap, GMT_OP_VMM_UNMAP, GMT_KIND_NONE, GMT_SPACE_VMM_HANDLE, GMT_AUX_NONE)                       \
	X(23, cuMemAddressReserve, GMT_OP_ALLOC, GMT_KIND_VMM_VA, GMT_SPACE_VA, GMT_AUX_RESERVE)                     \
	X(24, cuMemAddressFree, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_VA, GMT_AUX_NONE)                              \
	X(25, cuMemRetainAllocationHandle, GMT_OP_VMM_RETAIN, GMT_KIND_NONE, GMT_SPACE_VMM_HANDLE, GMT_AUX_ADDRESS)  \
	X(26, cuMemImportFromShareableHandle, GMT_OP_ALLOC, GMT_KIND_IPC, GMT_SPACE_VMM_HANDLE, GMT_AUX_HANDLE_TYPE) \
	X(27, cuArrayCreate_v2, GMT_OP_ALLOC, GMT_KIND_ARRAY, GMT_SPACE_ARRAY, GMT_AUX_NONE)                         \
	X(28, cuArray3DCreate_v2, GMT_OP_ALLOC, GMT_KIND_ARRAY, GMT_SPACE_ARRAY, GMT_AUX_NONE)                       \
	X(29, cuArrayDestroy, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ARRAY, GMT_AUX_NONE)                             \
	X(30, cuIpcOpenMemHandle_v2, GMT_OP_ALLOC, GMT_KIND_IPC, GMT_SPACE_ADDR, GMT_AUX_NONE)                       \
	X(31, cuIpcCloseMemHandle, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NONE)                         \
	X(32, cuDevicePrimaryCtxRetain, GMT_OP_CTX_CREATE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NVML)              \
	X(33, cuDevicePrimaryCtxRelease_v2, GMT_OP_CTX_DESTROY, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NVML)         \
	X(34, cuDevicePrimaryCtxReset_v2, GMT_OP_CTX_DESTROY, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NVML)           \
	X(35, cuCtxCreate_v2, GMT_OP_CTX_CREATE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NVML)                        \
	X(36, cuCtxCreate_v3, GMT_OP_CTX_CREATE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NVML)                        \
	X(37, cuCtxCreate_v4, GMT_OP_CTX_CREATE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NVML)                        \
	X(38, cuCtxDestroy_v2, GMT_OP_CTX_DESTROY, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NVML)                      \
	X(40, cudaMalloc, GMT_OP_ALLOC, GMT_KIND_DEVICE, GMT_SPACE_ADDR, GMT_AUX_NONE)                               \
	X(41, cudaMallocPitch, GMT_OP_ALLOC, GMT_KIND_DEVICE, GMT_SPACE_ADDR, GMT_AUX_PITCH)                         \
	X(42, cudaMalloc3D, GMT_OP_ALLOC, GMT_KIND_DEVICE, GMT_SPACE_ADDR, GMT_AUX_PITCH)                            \
	X(43, cudaFree, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NONE)                                    \
	X(44, cudaMallocManaged, GMT_OP_ALLOC, GMT_KIND_MANAGED, GMT_SPACE_ADDR, GMT_AUX_FLAGS)                      \
	X(45, cudaMallocHost, GMT_OP_ALLOC, GMT_KIND_HOST_PINNED, GMT_SPACE_ADDR, GMT_AUX_FLAGS)                     \
	X(46, cudaHostAlloc, GMT_OP_ALLOC, GMT_KIND_HOST_PINNED, GMT_SPACE_ADDR, GMT_AUX_FLAGS)                      \
	X(47, cudaFreeHost, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NONE)                                \
	X(48, cudaHostRegister, GMT_OP_ALLOC, GMT_KIND_HOST_REGISTERED, GMT_SPACE_ADDR, GMT_AUX_FLAGS)               \
	X(49, cudaHostUnregister, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NONE)                          \
	X(50, cudaMallocAsync, GMT_OP_ALLOC, GMT_KIND_ASYNC, GMT_SPACE_ADDR, GMT_AUX_STREAM)                         \
	X(51, cudaMallocAsync_ptsz, GMT_OP_ALLOC, GMT_KIND_ASYNC, GMT_SPACE_ADDR, GMT_AUX_STREAM)                    \
	X(52, cudaMallocFromPoolAsync, GMT_OP_ALLOC, GMT_KIND_ASYNC, GMT_SPACE_ADDR, GMT_AUX_STREAM)                 \
	X(53, cudaMallocFromPoolAsync_ptsz, GMT_OP_ALLOC, GMT_KIND_ASYNC, GMT_SPACE_ADDR, GMT_AUX_STREAM)            \
	X(54, cudaFreeAsync, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_STREAM)                             \
	X(55, cudaFreeAsync_ptsz, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_STREAM)                        \
	X(56, cudaMemPoolCreate, GMT_OP_ALLOC, GMT_KIND_POOL, GMT_SPACE_POOL, GMT_AUX_NONE)                          \
	X(57, cudaMemPoolDestroy, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_POOL, GMT_AUX_NONE)                          \
	X(58, cudaMemPoolTrimTo, GMT_OP_POOL_TRIM, GMT_KIND_NONE, GMT_SPACE_POOL, GMT_AUX_NONE)                      \
	X(59, cudaMallocArray, GMT_OP_ALLOC, GMT_KIND_ARRAY, GMT_SPACE_ARRAY, GMT_AUX_NONE)                          \
	X(60, cudaMalloc3DArray, GMT_OP_ALLOC, GMT_KIND_ARRAY, GMT_SPACE_ARRAY, GMT_AUX_NONE)                        \
	X(61, cudaFreeArray, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ARRAY, GMT_AUX_NONE)                              \
	X(62, cudaIpcOpenMemHandle, GMT_OP_ALLOC, GMT_KIND_IPC, GMT_SPACE_ADDR, GMT_AUX_NONE)                        \
	X(63, cudaIpcCloseMemHandle, GMT_OP_FREE, GMT_KIND_NONE, GMT_SPACE_ADDR, GMT_AUX_NONE)
/* clang-format on */

enum gmt_api {
#define GMT_API_ENUM_(id, name, op, kind, space, aux) GMT_API_##name = id,
	GMT_API_LIST(GMT_API_ENUM_)
#undef GMT_API_ENUM_
	    GMT_API_END_, /* the last id + 1: ids only grow down the list (common/api.c) */
	GMT_API_MAX_ = GMT_API_END_ - 1,
};

#endif
