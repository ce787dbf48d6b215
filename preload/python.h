/* Python frames in native stacks (GPUMEMTRACE_PYTHON). */
#ifndef GMT_PYTHON_H
#define GMT_PYTHON_H

#include <stdint.h>

/* Rewrites the native stack ips[0..n) (innermost first) of the calling
 * thread's event: its Python frames (GMT_PYFRAME_IP ids, each defined
 * once by a PYFRAME record) are read without the GIL and spliced in where
 * the interpreter's own frames were (docs/design.md). A thread that runs
 * no Python gets one "[thread runs no Python]" frame as its outermost. In
 * a process without Python, or with an interpreter we cannot read (a NOTE
 * says so), the stack is left as it is. Returns the new count, at most
 * cap; ips has room for cap entries. */
unsigned gmt_python_splice(uint64_t *ips, unsigned n, unsigned cap);

/* Forgets every frame seen (the next capture reads them afresh), and with
 * pages set which pages are known mapped: for bench/pyframes.py. */
void gmt_python_cache_reset(int pages);

/* 1 once the process is known to have no usable CPython (it never changes
 * back): the event path then skips the call above. */
extern int gmt_python_absent __attribute__((visibility("hidden")));

static inline unsigned gmt_python_splice_if_present(uint64_t *ips, unsigned n, unsigned cap)
{
	if (__atomic_load_n(&gmt_python_absent, __ATOMIC_RELAXED))
		return n;
	return gmt_python_splice(ips, n, cap);
}

#endif
