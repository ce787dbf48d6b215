/* Allocation that cannot fail, for the reading side (never the library). */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "reader/diag.h"
#include "reader/xalloc.h"

_Thread_local jmp_buf *gmt_xalloc_escape;

_Noreturn void xalloc_failed(void)
{
	if (gmt_xalloc_escape)
		longjmp(*gmt_xalloc_escape, 1);
	say_error(NULL, "out of memory");
	exit(EXIT_INPUT);
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		xalloc_failed();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		xalloc_failed();
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}
