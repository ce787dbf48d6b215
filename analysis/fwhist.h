/* A framework allocator's own view (FWSNAP, FWTRACE and FWSEG records,
 * format version 5: PyTorch's torch.cuda.memory._snapshot(), written by
 * `gpumemtrace run --framework-history`): its snapshots, each with the
 * segments and blocks the allocator held then, and its history replayed
 * into the live tensors and the reserved bytes at any entry, joined to the
 * driver's allocations by address.
 *
 *     trace_open(&t, ...);                  // the metadata pass loads t.fw
 *     if (fwhist_present(&t)) {
 *             const struct fw_snapshot *s = fwhist_last(&t, -1);
 *             fwhist_replay(&t, on_entry, ctx); // entries in order, state after each
 *     }
 *
 * The history is a window: PyTorch keeps its last max_entries entries, and
 * each snapshot writes the entries no earlier one wrote. Where entries are
 * missing (the first window, or a window flagged GMT_FWTRACE_GAP), what was
 * live when the window opened is rebuilt from the segment state at its end,
 * as memory_viz does: a tensor freed in the window but not allocated in it,
 * or a block active at the end that the window never allocated, was live
 * before it (fw_tensor.before).
 *
 * Sizes: a tensor's size is the bytes it asked for (the entry's size); a
 * block's size is what the allocator gave it (rounded, perhaps unsplit). */
#ifndef GMT_ANALYSIS_FWHIST_H
#define GMT_ANALYSIS_FWHIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/hash.h"

#include "analysis/replay.h"
#include "reader/reader.h"

struct trace;

struct fw_block {
	uint64_t address, size, requested;
	uint32_t state; /* GMT_FWBLOCK_* */
	uint64_t stack_id;
};

struct fw_segment {
	int64_t device;
	uint64_t address, size, stream, pool_a, pool_b, stack_id;
	unsigned flags; /* GMT_FWSEG_* (never CONTINUED: those records are merged) */
	struct fw_block *blocks;
	size_t nblocks, blocks_cap;
};

struct fw_setting {
	char *key, *value;
};

/* One FWSNAP and the FWSEG state that followed it. */
struct fw_snapshot {
	uint64_t seq;
	uint64_t time_ns, wall_ns; /* 0: no FWSNAP was read for this seq */
	int tid, reason;	   /* GMT_FWSNAP_WHY_* */
	char *source;		   /* "torch" */
	unsigned flags;		   /* GMT_FWSNAP_* */
	uint64_t max_entries;
	struct fw_setting *settings;
	size_t nsettings;
	struct fw_segment *segs; /* sorted by (device, address) at the end of the pass */
	size_t nsegs, segs_cap;
	bool state_dropped; /* its segments were not kept (FW_STATES_MAX) */
	uint64_t entries;   /* in its FWTRACE records */
	bool gap;	    /* one of them was flagged GMT_FWTRACE_GAP */
};

/* A tensor live in the replay (or rebuilt as live before a window). */
struct fw_key {
	int64_t device;
	uint64_t addr;
};
struct fw_tensor {
	UT_hash_handle hh;
	struct fw_key key;
	uint64_t size; /* as requested */
	uint64_t stream, stack_id;
	uint64_t time_ns; /* its allocation; 0: before the window */
	bool pending;	  /* free requested, the block not back yet */
	bool before;	  /* allocated before the history's window */
};

/* One device's figures as the replay goes. */
struct fw_dev {
	int64_t device;
	uint64_t allocated; /* requested bytes of live tensors */
	uint64_t active;    /* and of those whose free is pending */
	uint64_t reserved;  /* segment bytes */
	uint64_t tensors;   /* live tensors */
	uint64_t peak_allocated, peak_allocated_ns, peak_reserved, peak_reserved_ns;
};

/* What one window needs to start from where no earlier entry leads in. */
struct fw_window;

#define FW_STATES_MAX 64 /* snapshots whose segments are kept (the first ones and the last) */

struct fwhist {
	struct fw_snapshot *snaps; /* by seq, ascending */
	size_t nsnaps, snaps_cap;
	uint64_t entries;	   /* FWTRACE entries read */
	uint64_t out_of_order;	   /* FWTRACE entries of a seq below one already read: skipped */
	uint64_t states_dropped;   /* snapshots whose segments were not kept */
	uint64_t inconsistent;	   /* entries that did not fit the state (an alloc of a live
				    * address, a segment freed below zero) */
	struct fw_window *windows; /* private */
	size_t nwindows, windows_cap;
	struct fw_track *track; /* the metadata pass's per-device state; NULL after it */
};

/* ---- the metadata pass (analysis/trace-records.c) ---- */
void fwhist_on_record(struct trace *t, const struct gmt_record *rec);
void fwhist_finish(struct trace *t);
void fwhist_free(struct fwhist *h);

/* ---- queries ---- */
bool fwhist_present(const struct trace *t);
/* The snapshot of that seq, or NULL. */
const struct fw_snapshot *fwhist_snapshot(const struct trace *t, uint64_t seq);
/* The last snapshot with its segment state, on `device` (-1: any), or NULL. */
const struct fw_snapshot *fwhist_last(const struct trace *t, int64_t device);
/* A framework time (Unix us) on the trace's clock, through the snapshot's
 * pair of stamps; 0 when either is unknown. */
uint64_t fwhist_time_ns(const struct fw_snapshot *s, uint64_t time_us);
/* A setting's value as text, or NULL. */
const char *fwhist_setting(const struct fw_snapshot *s, const char *key);

/* A snapshot's figures on one device (-1: all). */
struct fw_state_figures {
	uint64_t reserved, segments;
	uint64_t allocated, allocated_requested, active_pending; /* block bytes by state */
	uint64_t inactive, inactive_split; /* free bytes; those in split segments */
	uint64_t blocks_allocated;
};
void fwhist_figures(const struct fw_snapshot *s, int64_t device, struct fw_state_figures *out);

/* A snapshot's blocks on one device (-1: all), as fragmentation reads
 * them: where the free bytes are and the largest free block per stream
 * (PyTorch reuses a cached block only on its own stream). */
#define FW_STREAMS_MAX 8
struct fw_blocks_fig {
	uint64_t reserved, segments, blocks;
	uint64_t allocated, requested, pending; /* block bytes; what the tensors asked */
	uint64_t inactive;			/* free blocks */
	uint64_t inactive_split;		/* in segments that hold a live block */
	uint64_t empty_segments, empty_bytes;	/* wholly free: empty_cache() returns them */
	uint64_t largest_free, largest_free_small, largest_free_large;
	uint64_t expandable_bytes; /* segments that are expandable */
	struct fw_stream_fig {
		uint64_t stream, free, largest_free;
	} streams[FW_STREAMS_MAX];
	size_t nstreams, streams_total;
};
void fwhist_blocks(const struct fw_snapshot *s, int64_t device, struct fw_blocks_fig *out);
/* The first snapshot of `reason` (GMT_FWSNAP_WHY_*) with a state on
 * device, or NULL. */
const struct fw_snapshot *fwhist_first(const struct trace *t, int reason, int64_t device);

/* ---- the replay ---- */

/* One entry, decoded, with where it stands. */
struct fw_event {
	uint64_t seq;
	int64_t device;
	uint64_t index;	  /* 0, 1, 2... over the trace's entries in file order */
	uint64_t time_ns; /* on the trace's clock; 0: unknown */
	const struct gmt_fw_entry *e;
	bool window_start; /* the first entry of a window whose start was rebuilt */
};

/* The state after each entry. */
struct fw_state {
	struct fw_tensor *tensors; /* live, by (device, addr) */
	struct fw_dev *devs;
	size_t ndevs, devs_cap;
};
const struct fw_dev *fw_state_dev(const struct fw_state *st, int64_t device);

/* Calls fn for every entry, oldest first, with the state after it. A tensor
 * fn sees in st stays valid until the next call. Returns -1, or the exit
 * code when reading failed. */
typedef void (*fw_entry_fn)(void *ctx, const struct fw_event *ev, const struct fw_state *st);
int fwhist_replay(struct trace *t, fw_entry_fn fn, void *ctx);
/* The same with a call before each entry is applied (the state before it)
 * and one after the last (the final state). */
struct fw_replay_cbs {
	fw_entry_fn before, after;
	void (*end)(void *ctx, const struct fw_state *st);
	void *ctx;
};
int fwhist_replay_cb(struct trace *t, const struct fw_replay_cbs *cb);

#endif
