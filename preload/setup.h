/* Start-up (preload/setup.c). Core-internal; gmt_tracing is in tracer.h. */
#ifndef GMT_PRELOAD_SETUP_H
#define GMT_PRELOAD_SETUP_H

#include "preload/ring.h"

/* A thread's first event, the only one that locks and allocates: makes the
 * thread's ring (and, for the process's first event, the trace file and
 * the flush thread). NULL: tracing is off, or no ring could be made. */
struct gmt_ring *gmt_ring_for_this_thread(void);

#endif
