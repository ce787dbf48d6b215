/* Python frames in native stacks (GPUMEMTRACE_PYTHON). */
#ifndef GMT_PYTHON_H
#define GMT_PYTHON_H

#include <stdint.h>

/* Rewrites the native stack ips[0..n) (innermost first) of the calling
 * thread's event: when the thread holds the GIL, the interpreter's frames
 * and everything outer to them give way to the thread's Python frames
 * (GMT_PYFRAME_IP ids, each defined once by a PYFRAME record); when Python
 * runs in the process but this thread does not hold the GIL, the stack
 * gets GMT_PYFRAME_NONE as its outermost frame. Otherwise, and in a
 * process without Python, the stack is left as it is. Returns the new
 * count, at most cap; ips has room for cap entries. */
unsigned gmt_python_splice(uint64_t *ips, unsigned n, unsigned cap);

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
