/* The process's end and fork (preload/life.c). Core-internal: the hooks
 * reach the end through preload/tracer.h. */
#ifndef GMT_PRELOAD_LIFE_H
#define GMT_PRELOAD_LIFE_H

#include "preload/state.h"

/* Registers the handler that hears main's return status (once, when the
 * trace is created: see life.c). */
void gmt_exit_watch(void);

/* The fork handlers setup.c registers. */
void gmt_fork_prepare(void);
void gmt_fork_parent(void);
void gmt_fork_child(void);

/* Maps the pages that tell a child made without our fork handler (_Fork,
 * a raw clone) and count its events (at configuration). */
void gmt_children_setup(void);
/* Counts the event of such a child; returns 1. */
int gmt_untraced_child_event(void);

/* On every event: a child made without our fork handler records nothing
 * (it has no flush thread) and counts its event as lost in its parent's
 * trace. One load and a branch while the answer is no. */
static inline int untraced_child(void)
{
	return __builtin_expect(!*gmt_rt.armed, 0) && gmt_untraced_child_event();
}

#endif
