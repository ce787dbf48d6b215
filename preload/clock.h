/* The trace's clock: CLOCK_MONOTONIC, or the TSC on a line fitted to it.
 *
 * Every time stamp of the trace comes from gmt_clock_read: gmt_now_ns
 * (ordered), gmt_now_ns_before (a free's, before its call) or tracer.h's
 * gmt_stamp_after. A vDSO clock_gettime costs ~26 ns on a KVM guest, two
 * per alloc+free pair; an ordered rdtsc ~18. Where the kernel vouches that
 * the TSC agrees across CPUs (clock.c, gmt_clock_tick), the flush thread
 * fits a line ns = base_ns + (tsc - base_tsc) * mult / 2^32 to
 * CLOCK_MONOTONIC and publishes it; until then, and wherever the TSC is not trusted, stamps
 * are clock_gettime's. The line is continuous where it is refitted and
 * slews toward CLOCK_MONOTONIC, so stamps do not jump unless the TSC does
 * (docs/design.md, "The clock"). */
#ifndef GMT_CLOCK_H
#define GMT_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#define GMT_HAVE_TSC 1
#else
#define GMT_HAVE_TSC 0
#endif

/* The line, as a latch (two copies and a count, Linux's seqcount_latch):
 * the flush thread, its one writer (gmt_clock_tick, under flush_lock, so
 * fork never copies a half-written count), bumps seq and rewrites copy 0,
 * then bumps it again and rewrites copy 1. A reader takes copy seq & 1,
 * the one not being written, so it never waits on a writer. seq < 2: no
 * line yet. */
struct gmt_clock_params {
	uint64_t base_tsc, base_ns;
	uint64_t mult; /* ns per tick, fixed point with 32 fraction bits */
};
struct gmt_clock_line {
	uint32_t seq;
	struct gmt_clock_params p[2];
};
extern struct gmt_clock_line gmt_clock_line __attribute__((visibility("hidden")));

static inline uint64_t gmt_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if GMT_HAVE_TSC
/* lfence first: the counter is read after every earlier instruction has
 * completed, so a stamp taken after a call is later than anything the call
 * saw (the kernel's rdtsc_ordered does the same). */
static inline uint64_t gmt_rdtsc_ordered(void)
{
	_mm_lfence();
	return __rdtsc();
}

static inline uint64_t gmt_clock_apply(uint64_t base_tsc, uint64_t base_ns, uint64_t mult,
				       uint64_t tsc)
{
	/* Signed: a counter read just before a refit lies behind its base. */
	__int128 d = (__int128)(int64_t)(tsc - base_tsc) * (__int128)mult;
	return base_ns + (uint64_t)(int64_t)(d >> 32);
}
#endif

/* A stamp on the line, or clock_gettime's while there is none. */
static inline uint64_t gmt_clock_read(int ordered)
{
#if GMT_HAVE_TSC
	/* A retry needs the writer to finish a half of its update during our
	 * few loads: it refits at most every 50 ms. */
	for (int tries = 0; tries < 4; tries++) {
		/* Pairs with the release stores of seq in publish_line (clock.c). */
		uint32_t seq = __atomic_load_n(&gmt_clock_line.seq, __ATOMIC_ACQUIRE);
		if (seq < 2)
			break;
		const struct gmt_clock_params *p = &gmt_clock_line.p[seq & 1];
		uint64_t base_tsc = __atomic_load_n(&p->base_tsc, __ATOMIC_RELAXED);
		uint64_t base_ns = __atomic_load_n(&p->base_ns, __ATOMIC_RELAXED);
		uint64_t mult = __atomic_load_n(&p->mult, __ATOMIC_RELAXED);
		uint64_t tsc = ordered ? gmt_rdtsc_ordered() : __rdtsc();
		/* The copy's loads before the second seq load: pairs with the
		 * writer's release fence after each seq store. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&gmt_clock_line.seq, __ATOMIC_RELAXED) == seq)
			return gmt_clock_apply(base_tsc, base_ns, mult, tsc);
	}
#else
	(void)ordered;
#endif
	return gmt_mono_ns();
}

/* The current time in ns on the trace's clock, read after everything
 * before it: an allocation's stamp, taken after its call, is later than
 * the free (another thread's) that made its address available. Events use
 * tracer.h's gmt_stamp_after, which leaves the fence out while one thread
 * makes every call. */
static inline uint64_t gmt_now_ns(void)
{
	return gmt_clock_read(1);
}

/* A stamp taken before an action, earlier than anything the action does.
 * That needs no fence: the counter is read before the rdtsc retires, and
 * retirement is in order, so none of the action's stores is visible yet.
 * The lfence of gmt_now_ns costs ~20 ns per pair here, with the driver's
 * call still in flight (docs/performance.md, "The clock"). Such a stamp
 * may read a few ns before an ordered one just above it in the same
 * thread; the writer keeps each thread's stamps from going back. It may
 * also read before a load just above it completes: a free of an address
 * another thread published moments before is not ordered after that
 * allocation (docs/design.md, "The clock"). */
static inline uint64_t gmt_now_ns_before(void)
{
	return gmt_clock_read(0);
}

/* GPUMEMTRACE_CLOCK: 0 CLOCK_MONOTONIC only; 1 the TSC where the kernel
 * vouches for it (default); 2 the TSC wherever it is invariant (tests). */
void gmt_clock_init(int setting);
/* From the flush thread, each cycle: calibrates, then refits the line. */
void gmt_clock_tick(void);
/* How soon the flush thread should tick for the first fit, in ms (0: no
 * hurry): the line then comes 20 ms after load, not a flush period. */
unsigned gmt_clock_wait_ms(void);
/* The tick's work on one (TSC, CLOCK_MONOTONIC) pair, and a start from a
 * given first pair with the TSC trusted: for tests/unit/test-clock.c. */
void gmt_clock_step(uint64_t tsc, uint64_t mono);
void gmt_clock_test_start(uint64_t tsc0, uint64_t mono0);

#endif
