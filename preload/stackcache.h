/* Stack capture with a per-thread cache of verified return-address chains.
 *
 * libunwind costs ~7 ns a frame; a call site that allocates again from the
 * same place on the stack has the same chain. The cache remembers, per
 * (first return address outside us, its stack slot), every return address
 * of the chain and the stack slot libunwind found it in; a hit re-reads
 * those slots and accepts the chain only if each still holds its address.
 * Frames are located by the call-frame rules of their return addresses and
 * the slot of the first one, so equal slots mean an equal chain (functions
 * whose frame size varies at one return address, alloca, are the one way
 * to fool it, and they would also need a stale copy of every address in
 * the right slot). Works with or without frame pointers in the program;
 * our own frames must have them (the Makefile builds us so). */
#ifndef GMT_STACKCACHE_H
#define GMT_STACKCACHE_H

#include <stdint.h>

enum gmt_stack_cache_mode {
	GMT_STACK_CACHE_OFF = 0,
	GMT_STACK_CACHE_ON = 1,
	GMT_STACK_CACHE_VERIFY = 2, /* every hit is checked against libunwind */
};

/* Fills ips (innermost first, our own frames trimmed) with at most depth
 * return addresses; ips has room for depth + 16. self_lo..self_hi is our
 * own code. Never faults: slots outside this thread's stack are not read.
 * hook_frame: the frame of our outermost function on the stack (the
 * wrapper the program called), or 0: saves walking our frames to it. */
unsigned gmt_stack_capture(uint64_t *ips, unsigned depth, int mode, uintptr_t self_lo,
			   uintptr_t self_hi, uintptr_t hook_frame);

/* The calling thread is exiting: frees its cache. */
void gmt_stack_cache_release(void);

/* GMT_STACK_CACHE_VERIFY's counts, for the note written at the end. */
void gmt_stack_cache_stats(uint64_t *hits, uint64_t *misses, uint64_t *mismatches);

#endif
