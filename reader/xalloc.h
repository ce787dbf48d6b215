/* Allocation that cannot fail, for the reading side. Out of memory, inside
 * a call of a library front end (capi/, loaded into Python), jumps back to
 * that call, which returns an error: a library never ends its caller's
 * process. Elsewhere it calls the front end's handler (the CLI's: one error
 * line and exit 3), else prints "out of memory" and aborts. The tracer
 * never links this (make check-layers). */
#ifndef GMT_READER_XALLOC_H
#define GMT_READER_XALLOC_H

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>

/* Set by a library entry point around its work (capi/guard.h); NULL in the
 * CLI. Out of memory then longjmps there: what was allocated is leaked. */
extern _Thread_local jmp_buf *gmt_xalloc_escape;

void *xrealloc(void *p, size_t n);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
/* Out of memory (the jump, the handler or abort), for allocators that are
 * not these. */
_Noreturn void xalloc_failed(void);
/* The front end's handler for it; it must not return. */
void xalloc_on_failure(void (*fn)(void));
/* A memory stream that cannot fail: open_memstream, and its close, which
 * returns the text (a stream out of room fails its close). */
FILE *xmemstream(char **buf, size_t *len);
char *xmemstream_close(FILE *f, char **buf);
/* Grows arr (n used of cap) by doubling when full. */
#define GROW(arr, n, cap)                                                                          \
	do {                                                                                       \
		if ((n) == (cap)) {                                                                \
			(cap) = (cap) ? 2 * (cap) : 16;                                            \
			(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));                           \
		}                                                                                  \
	} while (0)

#endif
