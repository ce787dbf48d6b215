/* Allocation that cannot fail, for the reading side: out of memory calls
 * the front end's handler (the CLI's: one error line and exit 3), else
 * prints "out of memory" and aborts. The library never links this (make
 * check-layers). */
#ifndef GMT_READER_XALLOC_H
#define GMT_READER_XALLOC_H

#include <stddef.h>

void *xrealloc(void *p, size_t n);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
/* Out of memory, for allocators that are not these. */
_Noreturn void xalloc_failed(void);
/* The front end's handler for it; it must not return. */
void xalloc_on_failure(void (*fn)(void));
/* Grows arr (n used of cap) by doubling when full. */
#define GROW(arr, n, cap)                                                                          \
	do {                                                                                       \
		if ((n) == (cap)) {                                                                \
			(cap) = (cap) ? 2 * (cap) : 16;                                            \
			(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));                           \
		}                                                                                  \
	} while (0)

#endif
