/* Writing a trace from the CLI side: what `gpumemtrace import` writes, and
 * the trace a PyTorch snapshot pickle is read through (reader/snapimport.h).
 * The format is include/gpumemtrace/format.h; records go into chunks of
 * TW_CHUNK_TARGET bytes, zstd-compressed when that is smaller and libzstd
 * loads (as the library's writer does), each with one write(). EVENTS are
 * written by row. Framework-history records come from common/fwhist.h's
 * encoders through tw_room/tw_commit.
 *
 * Every function returns 0 or -1; after -1 (a write or memory failure,
 * errno set) the writer takes nothing more. */
#ifndef GMT_READER_TWRITE_H
#define GMT_READER_TWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TW_CHUNK_TARGET (1u << 20)
#define TW_BATCH_TARGET (64u << 10)
#define TW_STACK_BATCH	4096

struct tw {
	int fd;
	int err; /* the errno of the first failure; 0: none */
	bool compress;
	void *cctx;
	uint8_t *chunk, *zbuf;
	size_t len, cap, zcap;
	uint32_t seq;
	uint64_t events, nodes;
	uint64_t raw_bytes, file_bytes; /* payload bytes written, file bytes */
	/* the open EVENTS batch */
	uint8_t *ev;
	size_t ev_len, ev_cap;
	uint64_t ev_count, ev_tid, ev_base, ev_prev_time, ev_prev_ptr, ev_prev_stack;
	int64_t ev_prev_dev;
	/* stack nodes not written yet */
	uint64_t *node_parent, *node_ip;
	size_t nodes_pending, nodes_cap;
};

struct tw_header {
	uint64_t start_wall_ns, start_mono_ns;
	uint32_t pid;
	bool stacks;
};

/* Writes the header to fd (which the caller made, and closes). */
int tw_open(struct tw *w, int fd, const struct tw_header *h, bool compress);
/* Writes what is pending and frees the buffers (not the fd). */
int tw_close(struct tw *w);
/* Frees the buffers, writing nothing more (after a failure). Harmless
 * after tw_close, or on a writer zeroed and never opened. */
void tw_abandon(struct tw *w);

/* Room for n more bytes of one record, and its end once written. */
uint8_t *tw_room(struct tw *w, size_t n);
void tw_commit(struct tw *w, uint8_t *end);

int tw_process(struct tw *w, uint64_t pid, uint64_t start_wall_ns, const char *host,
	       const char *exe, size_t argc, const char *const *argv, size_t nenv,
	       const char *const *env_keys, const char *const *env_values);
int tw_device(struct tw *w, int64_t ordinal, const char *name, const uint8_t uuid[16],
	      uint64_t total_bytes);
int tw_note(struct tw *w, int level, const char *text);
int tw_pyframe(struct tw *w, uint64_t id, const char *function, size_t flen, const char *file,
	       size_t filelen, uint64_t line);
/* A new stack node (parent, ip): its id, in file order (1, 2, ...); 0 on
 * failure. It is written with the open batch, before it. */
uint64_t tw_node(struct tw *w, uint64_t parent, uint64_t ip);
struct tw_event {
	uint64_t time_ns, tid;
	uint32_t api;
	uint64_t result; /* nonzero: failed */
	int64_t device;
	uint64_t ptr, size, stack;
	bool has_aux, has_aux2;
	uint64_t aux, aux2;
};
int tw_event(struct tw *w, const struct tw_event *e);
int tw_module(struct tw *w, uint64_t id, uint64_t start, uint64_t end, const char *path);
int tw_symbol(struct tw *w, uint64_t ip, uint64_t module_id, const char *function, size_t flen,
	      const char *file, size_t filelen, uint64_t line);
int tw_range(struct tw *w, uint64_t tid, uint64_t time_ns, uint64_t op, uint64_t id,
	     uint64_t source, const char *text);
int tw_trailer(struct tw *w, uint64_t end_ns, uint64_t lost, uint64_t reason);
/* Closes the open EVENTS batch (and writes pending nodes): before any
 * record that is not an event. */
int tw_end_batch(struct tw *w);

#endif
