/* Allocation that cannot fail, for the reading side (never the tracer). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/xalloc.h"

_Thread_local jmp_buf *gmt_xalloc_escape;

static void (*failure_fn)(void);

void xalloc_on_failure(void (*fn)(void))
{
	failure_fn = fn;
}

_Noreturn void xalloc_failed(void)
{
	if (gmt_xalloc_escape)
		longjmp(*gmt_xalloc_escape, 1);
	if (failure_fn)
		failure_fn();
	fputs("out of memory\n", stderr);
	abort();
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

FILE *xmemstream(char **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	FILE *f = open_memstream(buf, len);
	if (!f)
		xalloc_failed();
	return f;
}

char *xmemstream_close(FILE *f, char **buf)
{
	if (fclose(f) != 0 || !*buf)
		xalloc_failed();
	return *buf;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}
