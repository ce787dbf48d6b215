/* Signal-safe diagnostics: formatted into a stack buffer, one write(2) to
 * stderr. Never allocates, never locks, never exits. Supports %s %d %u %ld
 * %lu %lld %llu %zu %x %lx %llx %p %%. */
#ifndef GMT_LOG_H
#define GMT_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* "gpumemtrace: <message>\n" on stderr. */
void gmt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int gmt_vformat(char *buf, size_t size, const char *fmt, va_list ap);
int gmt_format(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
