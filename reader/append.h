/* Records added to a trace after its run (gpumemtrace symbolize, and run
 * after its command exits): whole chunks after the last good one, numbered
 * on from it, compressed (GMTZ) when the trace's version has such chunks
 * and libzstd loads, as the library writes them (docs/trace-format.md:
 * records may follow a trailer when a fresh trailer follows them).
 *
 *     struct gmt_append *a = gmt_append_new(version, last_seq + 1);
 *     gmt_append_symbol(a, ip, module_id, "main", "main.c", 12);
 *     gmt_append_trailer(a, end_ns, events, lost, stack_nodes, reason);
 *     gmt_append_write(a, fd, file_size);   // all or nothing
 *     gmt_append_free(a);
 *
 * Memory: the records until they are written (about a SYMBOL per distinct
 * frame). */
#ifndef GMT_READER_APPEND_H
#define GMT_READER_APPEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct gmt_append;

struct gmt_append *gmt_append_new(uint16_t version, uint64_t next_seq);
void gmt_append_free(struct gmt_append *a);

/* Each returns 0, or -1 when memory ran out (the record is not added). */
int gmt_append_symbol(struct gmt_append *a, uint64_t ip, uint64_t module_id, const char *function,
		      const char *file, uint64_t line);
int gmt_append_note(struct gmt_append *a, unsigned level, const char *text);
int gmt_append_trailer(struct gmt_append *a, uint64_t end_ns, uint64_t events, uint64_t lost,
		       uint64_t stack_nodes, uint64_t reason);
/* Records added so far. */
uint64_t gmt_append_records(const struct gmt_append *a);

/* Writes every chunk to fd (O_APPEND, or at its end), a regular file whose
 * size must still be `size` (the end of the trace as it was read), or a
 * pipe: 0; or -1 with errno, and a regular file cut back to `size` when a
 * write failed part way (EAGAIN: the file is no longer `size` bytes long:
 * something else writes it). */
int gmt_append_write(struct gmt_append *a, int fd, uint64_t size);

/* true when process pid (the trace's header pid) is alive and holds the
 * file (dev, ino) open: its tracer may still write to it. Processes this
 * one cannot see (another pid namespace, /proc hidden) count as gone. */
bool gmt_trace_writer_alive(uint32_t pid, dev_t dev, ino_t ino);

#endif
