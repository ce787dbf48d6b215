/* Which threads make traced calls (tracer.h, gmt_callers): the one
 * thread's stamps need no fence while no other thread makes any. */
#include "preload/tracer.h"

__thread uint64_t gmt_tls_caller __attribute__((tls_model("initial-exec")));
/* A line of its own: every traced call reads it twice. */
uint64_t gmt_callers __attribute__((aligned(64))) = GMT_CALLERS_NONE;

void gmt_callers_join_slow(void)
{
	/* Tokens are never reused: a thread that exits leaves its token in
	 * gmt_callers, and the next thread to call makes it MANY. */
	static uint64_t last_token = GMT_CALLERS_NONE;
	if (!gmt_tls_caller)
		gmt_tls_caller = __atomic_add_fetch(&last_token, 1, __ATOMIC_RELAXED);
	uint64_t seen = __atomic_load_n(&gmt_callers, __ATOMIC_RELAXED);
	while (seen != gmt_tls_caller && seen != GMT_CALLERS_MANY) {
		uint64_t next = seen == GMT_CALLERS_NONE ? gmt_tls_caller : GMT_CALLERS_MANY;
		/* Before this thread's call reaches the driver, and a full
		 * barrier: whoever sees the call's effects then sees this store.
		 * Pairs with the load in gmt_sole_caller. */
		if (__atomic_compare_exchange_n(&gmt_callers, &seen, next, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED)) {
			if (next == GMT_CALLERS_MANY)
				gmt_note(0,
					 "clock: a second thread made a traced call: allocations' "
					 "stamps are ordered from here on");
			return;
		}
	}
}
