/* The tracer's own work on a program's thread is never a cancellation
 * point: where it may open, read, write, sleep or join, it runs with
 * cancellation disabled, and a cancellation pending on the thread acts at
 * the thread's own next cancellation point, as untraced. Acting inside us,
 * it left our locks (and the CUDA runtime's, around us) held for good. */
#ifndef GMT_NOCANCEL_H
#define GMT_NOCANCEL_H

#include <pthread.h>

/* Cancellation off on this thread until gmt_nocancel_end(what it returns). */
static inline int gmt_nocancel_begin(void)
{
	int old = PTHREAD_CANCEL_ENABLE;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void gmt_nocancel_end(int old)
{
	/* Re-enabling never acts on a pending deferred cancellation. */
	pthread_setcancelstate(old, NULL);
}

#endif
