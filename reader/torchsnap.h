/* PyTorch's memory snapshot (torch.cuda.memory._snapshot(), pickled by
 * _dump_snapshot) read as a stream of typed items, over reader/pickle.h.
 * The keys are PyTorch's (torch/csrc/cuda/Module.cpp, memorySnapshot;
 * /work/shared/notes/framework-view.md section 1):
 *
 *   {"segments": [segment...], "device_traces": [[entry...] per device],
 *    "allocator_settings": {...}, "external_annotations": [...]}
 *
 * or, from memory_snapshot(), the segments list alone. Items come in file
 * order: every segment (the allocator's state when the snapshot was
 * taken), then each device's entries, oldest first, then the settings and
 * the annotations. Unknown keys are passed over; a missing key reads as
 * absent (has_*), never as 0.
 *
 *     struct ts *s = ts_open(fd, size, &err);
 *     const struct ts_item *it;
 *     while ((rc = ts_next(s, &it)) > 0) { switch (it->kind) ... }
 *
 * What an item points to (strings, frames, blocks) lives until the next
 * ts_next. */
#ifndef GMT_READER_TORCHSNAP_H
#define GMT_READER_TORCHSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/pickle.h"

enum ts_action {
	TS_UNKNOWN = 0,
	TS_ALLOC,
	TS_FREE_REQUESTED,
	TS_FREE_COMPLETED,
	TS_SEGMENT_ALLOC,
	TS_SEGMENT_FREE,
	TS_SEGMENT_MAP,
	TS_SEGMENT_UNMAP,
	TS_OOM,
	TS_SNAPSHOT,
	TS_ACTION_MAX_ = TS_SNAPSHOT,
};

enum ts_state {
	TS_INACTIVE = 0,
	TS_ACTIVE_ALLOCATED,
	TS_ACTIVE_PENDING_FREE, /* the 2.13 docstring's active_awaiting_free */
	TS_STATE_UNKNOWN,
};

/* One frame: Python's or, with stacks="all", C++'s. */
struct ts_frame {
	const char *filename, *name;
	size_t filename_len, name_len;
	uint64_t line;
	/* the frame's dict when the pickle shares it (the memo keeps it):
	 * while the caller holds a reference (pk_obj_ref), the same pointer
	 * is the same frame; NULL when not shared */
	struct pk_obj *shared;
};

/* Frames, innermost first (as PyTorch gathers them). */
struct ts_stack {
	const struct ts_frame *f;
	size_t n;
};

struct ts_block {
	uint64_t address, size, requested_size;
	bool has_requested;
	enum ts_state state;
	struct ts_stack frames;
};

struct ts_segment {
	int64_t device;
	uint64_t address, total_size, allocated_size, active_size, requested_size;
	uint64_t stream;
	bool small;		 /* segment_type "small" */
	bool expandable;	 /* is_expandable */
	uint64_t pool_a, pool_b; /* segment_pool_id; (0, 0) the default pool */
	struct ts_stack frames;
	const struct ts_block *blocks;
	size_t nblocks;
};

struct ts_entry {
	int64_t device; /* its list's index in device_traces */
	uint64_t index; /* in that list */
	enum ts_action action;
	uint64_t addr;	      /* TS_OOM: 0 */
	uint64_t device_free; /* TS_OOM: cudaMemGetInfo's free bytes */
	uint64_t size, stream;
	bool has_time;
	uint64_t time_us; /* Unix us */
	struct ts_stack frames;
	bool has_frames; /* the entry had a "frames" key */
	/* torch 2.14: _set_memory_metadata's string (the thread's at the
	 * entry), or for an "annotate" entry (_annotate_tensor: action
	 * TS_UNKNOWN, annotate set) the annotation; NULL: none */
	const char *user_metadata;
	bool annotate;
};

/* allocator_settings: the allocator's configuration at snapshot time. */
struct ts_settings {
	const struct pk_val *dict; /* the dict itself: every key, as written */
	const char *conf;	   /* PYTORCH_CUDA_ALLOC_CONF, as set; NULL: absent */
	bool has_max_split;
	uint64_t max_split_size; /* bytes; SIZE_MAX (or -1 in the pickle): unset */
	bool max_split_unset;
	bool has_gc;
	double garbage_collection_threshold;
	bool has_expandable;
	bool expandable_segments;
	bool has_roundup;
	/* roundup_power2_divisions: divisions per power-of-two interval from
	 * 1 MiB ("1") up, 16 of them; 0: none */
	uint64_t roundup[16];
	bool has_release_lock;
	bool release_lock_on_cudamalloc;
};

/* One of external_annotations: a record_function range's start or end. */
struct ts_annotation {
	int64_t device;
	bool has_time;
	uint64_t time_us;
	const char *stage, *name; /* "START"/"END"; NULL: absent */
};

enum ts_kind { TS_ITEM_SEGMENT, TS_ITEM_ENTRY, TS_ITEM_SETTINGS, TS_ITEM_ANNOTATION };

struct ts_item {
	enum ts_kind kind;
	union {
		struct ts_segment seg;
		struct ts_entry entry;
		struct ts_settings settings;
		struct ts_annotation ann;
	};
};

struct ts;
/* NULL with *err when the file is not a pickle we read (pickle.h). */
struct ts *ts_open(int fd, uint64_t size, struct pk_error *err);
/* 1: *out holds the next item; 0: the end; -1: an error (ts_error). The
 * snapshot's shape is checked as it comes: a segment without an address,
 * an entry without an action... each ends the read with one line. */
int ts_next(struct ts *s, const struct ts_item **out);
void ts_rewind(struct ts *s);
/* Only the entries of this device (-1: every device) from now on. */
void ts_only_device(struct ts *s, int64_t device);
const struct pk_error *ts_error(const struct ts *s);
/* The pickle's protocol, known after ts_open. */
int ts_protocol(const struct ts *s);
/* After a whole pass: whether the pickle's top level was a snapshot (a
 * dict with segments or device_traces, or a list of segments). */
bool ts_was_snapshot(const struct ts *s);
void ts_close(struct ts *s);

const char *ts_action_name(enum ts_action a);
const char *ts_state_name(enum ts_state s);

#endif
