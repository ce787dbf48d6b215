/* Signal-safe diagnostics: formatted into a stack buffer, one write(2) to
 * stderr. Never allocates, never locks, never exits. Supports %s %d %u %ld
 * %lu %lld %llu %zu %x %lx %llx %p %%. */
#ifndef GMT_LOG_H
#define GMT_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* "gpumemtrace: <message>\n" on stderr: the stderr the program started
 * with, once gmt_log_bind has seen it; if descriptor 2 is another file
 * now (the program closed it and opened its own there), nothing is
 * written and the line is counted (gmt_log_unsaid). */
void gmt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Remembers what descriptor 2 is (device and inode): call once, at load. */
void gmt_log_bind(void);
/* Lines gmt_log did not write. */
uint64_t gmt_log_unsaid(void);
int gmt_format(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
