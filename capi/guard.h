/* Out of memory inside a call the reader library exports returns an error
 * to the caller (Python), never ends the caller's process: each exported
 * function that can allocate runs its body with reader/xalloc.h's escape
 * set, and the body's allocations that fail jump back here. What the body
 * had allocated is leaked, and a handle that ran out keeps saying so.
 *
 *	GMTR_GUARDED(type, name, params, args, on_oom)
 *
 * defines `type name params` calling `name##_body args`; on_oom is a
 * statement run after the jump (it returns the error value). */
#ifndef GMT_CAPI_GUARD_H
#define GMT_CAPI_GUARD_H

#include <setjmp.h>

#include "reader/xalloc.h"

#define GMTR_EXPORT __attribute__((visibility("default")))

#define GMTR_GUARDED(type, name, params, args, on_oom)                                             \
	GMTR_EXPORT type name params                                                               \
	{                                                                                          \
		jmp_buf jb;                                                                        \
		jmp_buf *outer = gmt_xalloc_escape;                                                \
		if (setjmp(jb)) {                                                                  \
			gmt_xalloc_escape = outer;                                                 \
			on_oom;                                                                    \
		}                                                                                  \
		gmt_xalloc_escape = &jb;                                                           \
		type r = name##_body args;                                                         \
		gmt_xalloc_escape = outer;                                                         \
		return r;                                                                          \
	}

#endif
