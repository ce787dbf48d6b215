/* How the core's threads signal each other: futex words with bounded waits,
 * the event path's asymmetric fence, and the flush thread's wake-up.
 * Core-internal (preload/sync.c); nothing here locks or allocates. */
#ifndef GMT_PRELOAD_SYNC_H
#define GMT_PRELOAD_SYNC_H

#include <stdint.h>

/* Futex words our threads signal each other with (a thread is up, a thread
 * is done). Waits are bounded: fork, exit and exec never hang on us. Both
 * are async-signal-safe. gmt_futex_set stores value (release) and wakes
 * every waiter; gmt_futex_wait_while waits while *word == value, at most
 * max_ms, and returns what it saw last (acquire). */
void gmt_futex_set(uint32_t *word, uint32_t value);
/* How long fork waits for one of our threads to start (it takes microseconds). */
enum { GMT_THREAD_UP_WAIT_MS = 1000 };
uint32_t gmt_futex_wait_while(uint32_t *word, uint32_t value, unsigned max_ms);

/* Bumps gmt_rt.wake and wakes the flush thread. Pairs with the load of
 * gmt_rt.wake before its FUTEX_WAIT (flush.c). Async-signal-safe. */
void gmt_flush_wake(void);

/* The fence between an event's commit and the FINISHED check is asymmetric:
 * the event path's half is a compiler barrier, the finisher's (rare) half
 * is membarrier(2), a full barrier on every running thread of the process.
 * An mfence per event cost ~25 ns per alloc+free pair here. 0: membarrier
 * is missing (old kernel, valgrind) and both halves are real fences. */
extern int gmt_fence_asym;
/* Registers for membarrier; again in a fork child (one thread: safe). */
void gmt_fence_setup(void);

/* The event path's half. Pairs with gmt_fence_finished. */
static inline void gmt_fence_recorded(void)
{
	if (__atomic_load_n(&gmt_fence_asym, __ATOMIC_RELAXED))
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* The finisher's half, after its FINISHED store (or the flush thread's
 * idle store). Pairs with gmt_fence_recorded. */
void gmt_fence_finished(void);

#endif
