/* Allocation that cannot fail, for the reading side: out of memory is one
 * error line and exit 3, or, inside a call of a library front end (capi/,
 * loaded into Python), a jump back to that call, which returns an error:
 * a library never ends its caller's process. The tracer never links this
 * (make check-layers). */
#ifndef GMT_READER_XALLOC_H
#define GMT_READER_XALLOC_H

#include <setjmp.h>
#include <stddef.h>

/* Set by a library entry point around its work (capi/guard.h); NULL in the
 * CLI. Out of memory then longjmps there: what was allocated is leaked. */
extern _Thread_local jmp_buf *gmt_xalloc_escape;

void *xrealloc(void *p, size_t n);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
/* The error line and exit 3 (or the jump), for allocators that are not these. */
_Noreturn void xalloc_failed(void);
/* Grows arr (n used of cap) by doubling when full. */
#define GROW(arr, n, cap)                                                                          \
	do {                                                                                       \
		if ((n) == (cap)) {                                                                \
			(cap) = (cap) ? 2 * (cap) : 16;                                            \
			(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));                           \
		}                                                                                  \
	} while (0)

#endif
