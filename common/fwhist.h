/* The framework-history records (FWSNAP, FWTRACE, FWSEG; format version 5):
 * their names and their encoders, shared by every writer of them (the
 * library's flush thread, and the CLI when it converts a snapshot file).
 * The test encoder (tests/tools/trace-builder.c) stays independent of this
 * file. Header-only. */
#ifndef GMT_COMMON_FWHIST_H
#define GMT_COMMON_FWHIST_H

#include <stdint.h>
#include <string.h>

#include "gpumemtrace/format.h"
#include "common/codec.h"

/* PyTorch's own names: the trace entry actions (c10/core/
 * CachingDeviceAllocator.h, parseTraceEntryAction) and the block states
 * (torch/csrc/cuda/memory_snapshot.cpp). */
static inline const char *gmt_fw_action_name(uint32_t action)
{
	static const char *const names[GMT_FW_ACTION_MAX_ + 1] = {
	    "unknown",	     "alloc",	     "free_requested", "free_completed",
	    "segment_alloc", "segment_free", "segment_map",    "segment_unmap",
	    "oom",	     "snapshot",     "annotate",
	};
	return action <= GMT_FW_ACTION_MAX_ ? names[action] : "unknown";
}

/* GMT_FW_UNKNOWN for a name that is none of them. */
static inline uint32_t gmt_fw_action_parse(const char *name, size_t len)
{
	for (uint32_t a = 1; a <= GMT_FW_ACTION_MAX_; a++) {
		const char *n = gmt_fw_action_name(a);
		if (strlen(n) == len && !memcmp(n, name, len))
			return a;
	}
	return GMT_FW_UNKNOWN;
}

static inline const char *gmt_fwblock_state_name(uint32_t state)
{
	static const char *const names[] = {"inactive", "active_allocated", "active_pending_free",
					    "unknown"};
	return state <= GMT_FWBLOCK_UNKNOWN ? names[state] : "unknown";
}

/* The 2.13 docstring's "active_awaiting_free" is the same state as the
 * C++'s "active_pending_free". */
static inline uint32_t gmt_fwblock_state_parse(const char *name, size_t len)
{
	static const struct {
		const char *name;
		uint32_t state;
	} known[] = {
	    {"inactive", GMT_FWBLOCK_INACTIVE},
	    {"active_allocated", GMT_FWBLOCK_ACTIVE_ALLOCATED},
	    {"active_pending_free", GMT_FWBLOCK_ACTIVE_PENDING_FREE},
	    {"active_awaiting_free", GMT_FWBLOCK_ACTIVE_PENDING_FREE},
	};
	for (size_t i = 0; i < sizeof known / sizeof *known; i++)
		if (strlen(known[i].name) == len && !memcmp(known[i].name, name, len))
			return known[i].state;
	return GMT_FWBLOCK_UNKNOWN;
}

/* ---- encoders: each writes at most the bytes its _MAX says ---- */

/* The coding state of one FWTRACE record's entries, or one FWSEG record's
 * blocks. */
struct gmt_fw_enc {
	uint64_t addr, time, stack;
};

#define GMT_FW_TRACE_HEAD_MAX (6 * GMT_VARINT_MAX) /* tag included */
#define GMT_FW_ENTRY_MAX      (6 * GMT_VARINT_MAX)
#define GMT_FW_SEG_HEAD_MAX   (11 * GMT_VARINT_MAX)
#define GMT_FW_BLOCK_MAX      (5 * GMT_VARINT_MAX)

/* A FWSNAP record's head after its tag and tid (at most
 * GMT_FW_SNAP_HEAD_MAX + source_len bytes); count settings must follow. */
#define GMT_FW_SNAP_HEAD_MAX (10 * GMT_VARINT_MAX)
static inline uint8_t *gmt_fw_put_snap_rest(uint8_t *p, uint64_t time_ns, uint64_t wall_ns,
					    uint64_t seq, uint64_t reason, const char *source,
					    size_t source_len, uint64_t flags, uint64_t max_entries,
					    uint64_t count)
{
	p = gmt_put_varint(p, time_ns);
	p = gmt_put_varint(p, wall_ns);
	p = gmt_put_varint(p, seq);
	p = gmt_put_varint(p, reason);
	p = gmt_put_varint(p, source_len);
	if (source_len) /* source may be NULL then */
		memcpy(p, source, source_len);
	p += source_len;
	p = gmt_put_varint(p, flags);
	p = gmt_put_varint(p, max_entries);
	return gmt_put_varint(p, count);
}

/* The same with the tag and tid before it. */
static inline uint8_t *gmt_fw_put_snap_head(uint8_t *p, uint64_t tid, uint64_t time_ns,
					    uint64_t wall_ns, uint64_t seq, uint64_t reason,
					    const char *source, size_t source_len, uint64_t flags,
					    uint64_t max_entries, uint64_t count)
{
	p = gmt_put_varint(p, GMT_TAG_FWSNAP);
	p = gmt_put_varint(p, tid);
	return gmt_fw_put_snap_rest(p, time_ns, wall_ns, seq, reason, source, source_len, flags,
				    max_entries, count);
}

/* One setting: at most 2 * GMT_VARINT_MAX + key_len + value_len bytes. */
static inline uint8_t *gmt_fw_put_setting(uint8_t *p, const char *key, size_t key_len,
					  const char *value, size_t value_len)
{
	p = gmt_put_varint(p, key_len);
	if (key_len)
		memcpy(p, key, key_len);
	p += key_len;
	p = gmt_put_varint(p, value_len);
	if (value_len)
		memcpy(p, value, value_len);
	return p + value_len;
}

/* A FWTRACE record's tag and head; count entries must follow. */
static inline uint8_t *gmt_fw_put_trace_head(uint8_t *p, struct gmt_fw_enc *st, uint64_t seq,
					     int64_t device, uint64_t flags, uint64_t base_time_us,
					     uint64_t count)
{
	p = gmt_put_varint(p, GMT_TAG_FWTRACE);
	p = gmt_put_varint(p, seq);
	p = gmt_put_varint(p, gmt_zigzag(device));
	p = gmt_put_varint(p, flags);
	p = gmt_put_varint(p, base_time_us);
	p = gmt_put_varint(p, count);
	*st = (struct gmt_fw_enc){0, base_time_us, 0};
	return p;
}

static inline uint8_t *gmt_fw_put_entry(uint8_t *p, struct gmt_fw_enc *st, uint32_t action,
					uint64_t addr, uint64_t size, uint64_t stream,
					uint64_t time_us, uint64_t stack)
{
	p = gmt_put_varint(p, action);
	p = gmt_put_varint(p, gmt_zigzag((int64_t)(addr - st->addr)));
	p = gmt_put_varint(p, size);
	p = gmt_put_varint(p, stream);
	p = gmt_put_varint(p, gmt_zigzag((int64_t)(time_us - st->time)));
	p = gmt_put_varint(p, gmt_zigzag((int64_t)(stack - st->stack)));
	*st = (struct gmt_fw_enc){addr, time_us, stack};
	return p;
}

/* A FWSEG record's tag and head; count blocks must follow. */
static inline uint8_t *gmt_fw_put_seg_head(uint8_t *p, struct gmt_fw_enc *st, uint64_t seq,
					   int64_t device, uint64_t address, uint64_t total_size,
					   uint64_t stream, uint64_t flags, uint64_t pool_a,
					   uint64_t pool_b, uint64_t stack, uint64_t count)
{
	p = gmt_put_varint(p, GMT_TAG_FWSEG);
	p = gmt_put_varint(p, seq);
	p = gmt_put_varint(p, gmt_zigzag(device));
	p = gmt_put_varint(p, address);
	p = gmt_put_varint(p, total_size);
	p = gmt_put_varint(p, stream);
	p = gmt_put_varint(p, flags);
	p = gmt_put_varint(p, pool_a);
	p = gmt_put_varint(p, pool_b);
	p = gmt_put_varint(p, stack);
	p = gmt_put_varint(p, count);
	*st = (struct gmt_fw_enc){address, 0, stack};
	return p;
}

static inline uint8_t *gmt_fw_put_block(uint8_t *p, struct gmt_fw_enc *st, uint64_t address,
					uint64_t size, uint64_t requested_size, uint32_t state,
					uint64_t stack)
{
	p = gmt_put_varint(p, gmt_zigzag((int64_t)(address - st->addr)));
	p = gmt_put_varint(p, size);
	p = gmt_put_varint(p, requested_size);
	p = gmt_put_varint(p, state);
	p = gmt_put_varint(p, gmt_zigzag((int64_t)(stack - st->stack)));
	st->addr = address + size;
	st->stack = stack;
	return p;
}

#endif
