/* A test-only trace encoder: a second implementation of format v1, written
 * from include/gpumemtrace/format.h alone (its own varint, zigzag,
 * little-endian and CRC-32C code), so the reader is checked against the spec
 * rather than against itself. Builds the whole file in memory. */
#ifndef GMT_TRACE_BUILDER_H
#define GMT_TRACE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

struct tb;

struct tb_header {
	uint16_t version;     /* default GMT_FORMAT_VERSION */
	uint16_t header_size; /* default 64; bytes past 64 are zeros */
	uint8_t endian;	      /* 0: GMT_ENDIAN_LITTLE */
	uint32_t features;
	uint64_t start_wall_ns, start_mono_ns;
	uint32_t pid;
};

/* One event, in absolute values: the builder computes the deltas. */
struct tb_event {
	uint64_t time_ns;
	uint32_t api;
	uint64_t result; /* non-zero: failed */
	int64_t device;
	uint64_t ptr, size, aux, aux2, stack_id;
};

struct tb *tb_new(const struct tb_header *h); /* h may be NULL: defaults */
void tb_free(struct tb *b);

void tb_process(struct tb *b, uint64_t pid, uint64_t ppid, uint64_t start_wall_ns, const char *host,
		const char *exe, int argc, const char *const *argv, int nenv,
		const char *const *keys, const char *const *values);
void tb_module(struct tb *b, uint64_t id, uint64_t bias, uint64_t start, uint64_t end,
	       const char *path, const uint8_t *build_id, size_t build_id_len);
void tb_device(struct tb *b, int64_t ordinal, const char *name, const uint8_t *uuid,
	       size_t uuid_len, uint64_t total, uint64_t cc_major, uint64_t cc_minor,
	       uint64_t driver);
void tb_stack(struct tb *b, size_t count, const uint64_t *parents, const uint64_t *ips);
void tb_thread(struct tb *b, uint64_t tid, const char *name);
void tb_events_begin(struct tb *b, uint64_t tid, uint64_t base_time_ns);
void tb_event(struct tb *b, const struct tb_event *e); /* inside begin/end */
/* One event from its named fields, the others 0 (the unit tests' one event
 * helper): TB_EVENT(b, .time_ns = 100, .api = GMT_API_cudaMalloc,
 * .ptr = 0x1000, .size = 4096). */
#define TB_EVENT(b, ...) tb_event((b), &(const struct tb_event){__VA_ARGS__})
uint64_t tb_event_count(const struct tb *b); /* events written so far */
void tb_events_end(struct tb *b);
void tb_lost(struct tb *b, uint64_t tid, uint64_t count, uint64_t time_ns);
void tb_symbol(struct tb *b, uint64_t ip, uint64_t module_id, const char *function,
	       const char *file, uint64_t line);
void tb_note(struct tb *b, uint64_t level, const char *text);
void tb_meminfo(struct tb *b, uint64_t tid, uint64_t time_ns, int64_t device, uint64_t free_bytes,
		uint64_t total_bytes, uint64_t api);
void tb_trailer(struct tb *b, uint64_t end_ns, uint64_t events, uint64_t lost, uint64_t stack_nodes,
		uint64_t reason);
void tb_sample(struct tb *b, uint64_t time_ns, uint64_t nvml_index, const uint8_t *uuid,
	       size_t uuid_len, uint64_t used, uint64_t total, uint64_t flags,
	       uint64_t process_used, uint64_t reason);
void tb_range(struct tb *b, uint64_t tid, uint64_t time_ns, uint64_t op, uint64_t id,
	      uint64_t source, const char *text);
void tb_pyframe(struct tb *b, uint64_t id, const char *function, const char *file, uint64_t line);
/* COUNTERS: n names and values (version 4). */
void tb_counters(struct tb *b, uint64_t tid, uint64_t time_ns, uint64_t reason, const char *source,
		 const char *device, int64_t ordinal, size_t n, const char *const *names,
		 const uint64_t *values);
/* The framework-history records (version 5): a snapshot, its entries (in
 * absolute values: the builder computes the deltas; base_time_us is the
 * first entry's time) and its segments (pool (0, 0)). */
struct tb_fw_entry {
	uint64_t action, addr, size, stream, time_us, stack_id;
};
struct tb_fw_block {
	uint64_t address, size, requested, state, stack_id;
};
void tb_fwsnap(struct tb *b, uint64_t tid, uint64_t time_ns, uint64_t wall_ns, uint64_t seq,
	       uint64_t reason, const char *source, uint64_t flags, uint64_t max_entries, size_t n,
	       const char *const *keys, const char *const *values);
void tb_fwtrace(struct tb *b, uint64_t seq, int64_t device, uint64_t flags, size_t n,
		const struct tb_fw_entry *e);
void tb_fwseg(struct tb *b, uint64_t seq, int64_t device, uint64_t address, uint64_t total_size,
	      uint64_t stream, uint64_t flags, uint64_t stack_id, size_t n,
	      const struct tb_fw_block *blk);
/* FWOOM: a framework's out-of-memory error (version 5). */
void tb_fwoom(struct tb *b, uint64_t tid, uint64_t time_ns, uint64_t how, const char *source,
	      const char *type, int64_t ordinal, size_t n, const char *const *names,
	      const uint64_t *values, const char *message);
/* EXIT: how the process ended (version 5). */
void tb_exit(struct tb *b, uint64_t time_ns, uint64_t how, int64_t status, uint64_t signal);
void tb_raw(struct tb *b, const void *bytes, size_t len); /* payload bytes as given */
void tb_varint(struct tb *b, uint64_t v);		  /* one varint, raw */

/* Ends the current chunk (if it holds anything); later records start a new
 * one. tb_data and tb_write end it too. */
void tb_chunk(struct tb *b);

/* The whole file; valid until the next call on b. */
const uint8_t *tb_data(struct tb *b, size_t *len);
size_t tb_chunks(struct tb *b);
size_t tb_chunk_offset(struct tb *b, size_t i); /* file offset of chunk i */
int tb_write(struct tb *b, const char *path);	/* 0 ok, -1 errno */

uint32_t tb_crc32c(const void *buf, size_t len); /* bitwise, no table */

#endif
