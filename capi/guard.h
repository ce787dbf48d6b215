/* Out of memory inside a call the reader library exports returns an error
 * to the caller (Python), never ends the caller's process: each exported
 * function that can allocate runs its body with reader/xalloc.h's escape
 * set, and the body's allocations that fail jump back here. What the body
 * had allocated is leaked, and a handle that ran out keeps saying so.
 *
 *	GMTR_GUARDED(type, name, params, args, on_oom)
 *
 * defines `type name params` calling `name##_body args`; on_oom is a
 * statement run after the jump (it returns the error value).
 *
 * The reading code's lines (analysis/diag.h: a damaged trace, a read
 * error) never reach the host program's stderr: during the call they land
 * in gmtr_said, the last one kept, for the body to return as its error. */
#ifndef GMT_CAPI_GUARD_H
#define GMT_CAPI_GUARD_H

#include <setjmp.h>

#include "analysis/diag.h"
#include "reader/xalloc.h"

#define GMTR_EXPORT __attribute__((visibility("default")))

static _Thread_local char gmtr_said[256];

#define GMTR_GUARDED(type, name, params, args, on_oom)                                             \
	GMTR_EXPORT type name params                                                               \
	{                                                                                          \
		jmp_buf jb;                                                                        \
		jmp_buf *outer = gmt_xalloc_escape;                                                \
		struct diag_capture cap = {gmtr_said, sizeof(gmtr_said)};                          \
		struct diag_capture *outer_cap = gmt_diag_capture;                                 \
		gmtr_said[0] = 0;                                                                  \
		if (setjmp(jb)) {                                                                  \
			gmt_xalloc_escape = outer;                                                 \
			gmt_diag_capture = outer_cap;                                              \
			on_oom;                                                                    \
		}                                                                                  \
		gmt_xalloc_escape = &jb;                                                           \
		gmt_diag_capture = &cap;                                                           \
		type r = name##_body args;                                                         \
		gmt_xalloc_escape = outer;                                                         \
		gmt_diag_capture = outer_cap;                                                      \
		return r;                                                                          \
	}

#endif
