/* How the core's threads signal each other: futex words with bounded waits,
 * the event path's asymmetric fence, and the flush thread's wake-up.
 * Core-internal (preload/sync.c); nothing here locks or allocates. */
#ifndef GMT_PRELOAD_SYNC_H
#define GMT_PRELOAD_SYNC_H

#include <pthread.h>
#include <stddef.h>
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

/* Whether thread tid of ours waits for one of the dynamic loader's locks
 * (a futex on a word inside ld.so's image, from /proc/self/task/TID/syscall:
 * no allocation, no lock). */
int gmt_thread_waits_for_loader(int tid);
/* Waits while *word == value, as gmt_futex_wait_while, for a thread of
 * ours (tid) to do something: at most max_ms (it may be slow, or wait for
 * a CPU on a loaded machine), but only loader_ms while it waits for the
 * loader's lock, which the waiting thread itself may hold (a signal
 * handler's exit inside a dl_iterate_phdr callback). */
uint32_t gmt_futex_wait_thread(uint32_t *word, uint32_t value, int tid, unsigned loader_ms,
			       unsigned max_ms);

/* Starts one of our threads (flush, sampler, scanner, the file's
 * creation): every signal blocked (no handler of the program's runs on it,
 * and SIGXFSZ from a full disk cannot kill), and a stack of `stack` bytes
 * with a guard page, never the program's default (pthread_setattr_default_np
 * or ulimit -s reach every thread made without a size). Returns
 * pthread_create's result. */
int gmt_thread_start(pthread_t *t, size_t stack, void *(*fn)(void *), void *arg);

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
