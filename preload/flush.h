/* The flush thread (preload/flush.c). Core-internal. */
#ifndef GMT_PRELOAD_FLUSH_H
#define GMT_PRELOAD_FLUSH_H

/* Starts the flush thread (the trace file exists). Returns
 * pthread_create's result. Caller holds setup_lock. */
int gmt_flush_start(void);

/* Drains every ring and writes it with a trailer, in one write: whoever
 * records after the final trailer (the flush thread gone) writes this way.
 * Caller holds flush_lock. */
void gmt_flush_now_with_trailer(unsigned reason);

#endif
