/* Which threads make traced calls (tracer.h, gmt_callers): the one
 * thread's stamps need no fence while no other thread makes any. */
#include "tracer.h"

__thread uint64_t gmt_tls_caller __attribute__((tls_model("initial-exec")));
uint64_t gmt_callers = GMT_CALLERS_NONE;

void gmt_callers_join_slow(void)
{
	/* Tokens are never reused: a thread that exits leaves its token in
	 * gmt_callers, and the next thread to call makes it MANY. */
	static uint64_t last_token = GMT_CALLERS_NONE;
	if (!gmt_tls_caller)
		gmt_tls_caller = __atomic_add_fetch(&last_token, 1, __ATOMIC_RELAXED);
	uint64_t seen = GMT_CALLERS_NONE;
	/* Before this thread's call reaches the driver, and a full barrier:
	 * whoever sees the call's effects then sees this store. Pairs with the
	 * load in gmt_sole_caller. */
	if (__atomic_compare_exchange_n(&gmt_callers, &seen, gmt_tls_caller, 0, __ATOMIC_SEQ_CST,
					__ATOMIC_SEQ_CST) ||
	    seen == gmt_tls_caller || seen == GMT_CALLERS_MANY)
		return;
	/* A second thread: MANY for good (nothing stores a token after). */
	__atomic_store_n(&gmt_callers, GMT_CALLERS_MANY, __ATOMIC_SEQ_CST);
}
