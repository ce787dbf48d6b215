/* Futex words, the asymmetric fence and the flush thread's wake-up
 * (preload/sync.h). Only syscalls: callable from a signal handler. */
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "preload/clock.h"
#include "preload/state.h"
#include "preload/sync.h"

int gmt_fence_asym;

void gmt_fence_setup(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	gmt_fence_asym =
	    cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void gmt_fence_finished(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&gmt_fence_asym, __ATOMIC_RELAXED) ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return;
	/* A registered process never gets here. If it does, recorders may have
	 * skipped their fence: give their store buffers time to drain. */
	__atomic_store_n(&gmt_fence_asym, 0, __ATOMIC_RELAXED);
	struct timespec ms = {0, 1000000};
	nanosleep(&ms, NULL);
}

void gmt_flush_wake(void)
{
	/* Pairs with the load of gmt_rt.wake before FUTEX_WAIT in flusher_main. */
	__atomic_add_fetch(&gmt_rt.wake, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &gmt_rt.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void gmt_futex_set(uint32_t *word, uint32_t value)
{
	/* Pairs with the acquire load in gmt_futex_wait_while. */
	__atomic_store_n(word, value, __ATOMIC_RELEASE);
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

uint32_t gmt_futex_wait_while(uint32_t *word, uint32_t value, unsigned max_ms)
{
	uint64_t deadline = gmt_now_ns() + max_ms * 1000000ull;
	uint32_t seen;
	/* Pairs with the release store in gmt_futex_set (or the flush thread's
	 * release add to final_done). */
	while ((seen = __atomic_load_n(word, __ATOMIC_ACQUIRE)) == value) {
		uint64_t now = gmt_now_ns();
		if (now >= deadline)
			break;
		uint64_t left = deadline - now;
		struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, &ts, NULL, 0);
	}
	return seen;
}
