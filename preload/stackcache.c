#include "preload/stackcache.h"
#include "preload/nocancel.h"
#include "preload/tracer.h"
#include "preload/writer.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

enum {
	/* Per thread, WAYS entries per set: one call site at one depth is
	 * often reached along several chains (an allocator's one cudaMalloc). */
	SETS = 32,
	WAYS = 8,
	SEEN = 512,
	OWN_FRAMES = 16, /* more frames of ours than this: give up on the cache */
	SLACK = 16,	 /* backtrace_trimmed's room for our own frames */
	/* A thread's first misses are walked with unw_step, never
	 * unw_backtrace: libunwind's fast trace keeps a cache per thread
	 * that costs 256 KiB the first time (2^14 frames of 16 bytes, every
	 * one written), 2,000 threads 559 MB. A thread that misses more
	 * than this is hot enough to pay for it. */
	COLD_MISSES = 32,
};

struct entry {
	uint64_t ip0, slot0; /* the key: first return address outside us, its slot */
	uint32_t n;	     /* 0: empty */
	/* Way 0 only: the set's next victim, and its misses while full. */
	uint16_t clock, misses;
	/* then n (slot, return address) pairs, in struct cache's stride */
};

struct cache {
	uintptr_t stack_lo, stack_hi; /* this thread's stack; 0: none known */
	size_t stride;		      /* bytes per entry */
	size_t map_bytes;
	unsigned depth;	 /* what the entries were sized for */
	int disabled;	 /* setting up failed: libunwind only */
	unsigned misses; /* walked with unw_step, up to COLD_MISSES */
	/* fingerprints of chains missed once (SEEN of them), after the
	 * entries: touched only once a thread is past COLD_MISSES, so a
	 * thread that allocates from a few places touches two pages */
	uint64_t *seen;
	uint8_t *entries; /* after the scratch */
	/* Room for the walks that check a chain (two of depth) and verify
	 * mode's reference (depth + SLACK), so that no stack array sized by
	 * the depth lands on the program's thread: on the header's page,
	 * which every thread touches anyway. */
	uint64_t scratch[];
};

static __thread struct cache *tls_cache __attribute__((tls_model("initial-exec")));
static __thread int tls_cache_failed __attribute__((tls_model("initial-exec")));

/* ---- libunwind's descriptors ----------------------------------------------
 * libunwind (1.6, and later ones alike) checks an address it doubts (a frame
 * without unwind info, the end of a stack) by writing a byte from it to a
 * pipe it keeps at the numbers pipe2() gave it: the lowest free, 3 and 4.
 * When that read or write fails (a daemon closed them), it closes both
 * numbers and makes a new pipe; if the program had opened its own files
 * there meanwhile, libunwind reads from, writes into and closes the
 * program's files (t-life-fds: a daemon's log closed, 4 runs in 6). So
 * its pipe2 comes to us (preload/hooks/fds.c) and the pipe goes high, as
 * the trace's descriptor does, where a program that closes every
 * descriptor and opens its own does not reach. And libunwind asks
 * mincore (or msync) about the address before it uses the pipe: that call
 * comes to us too, and when the program has taken one of the pipe's
 * numbers (a process with ~768 files open after closing ours) it fails, so
 * libunwind takes the address as bad and ends the stack there, never
 * touching the program's file. One check per address libunwind doubts
 * (a few per run: it remembers good pages), none per event. */
static __thread int tls_unwinding __attribute__((tls_model("initial-exec")));
static int unw_pipe[2] = {-1, -1}; /* under unw_lock */
static uint64_t unw_pipe_ino[2];
static int unw_unsafe; /* the program has one of its numbers: no more libunwind */
static pthread_mutex_t unw_lock = PTHREAD_MUTEX_INITIALIZER;

void gmt_unwinder_pipe(int fds[2])
{
	if (!tls_unwinding)
		return; /* the program's own pipe */
	int err = errno;
	pthread_mutex_lock(&unw_lock);
	for (int i = 0; i < 2; i++) {
		int hi = gmt_fd_high(fds[i]);
		struct stat st;
		if (hi >= 0)
			fds[i] = hi;
		unw_pipe[i] = fds[i];
		unw_pipe_ino[i] = fstat(fds[i], &st) == 0 ? (uint64_t)st.st_ino : 0;
	}
	pthread_mutex_unlock(&unw_lock);
	errno = err;
}

/* Whether libunwind may use its pipe: it is still where it was made, or
 * closed (then libunwind makes a new one, through us). */
static int unwinder_safe(void)
{
	if (__atomic_load_n(&unw_unsafe, __ATOMIC_RELAXED))
		return 0;
	int taken = 0;
	pthread_mutex_lock(&unw_lock);
	for (int i = 0; i < 2 && unw_pipe[i] >= 0; i++) {
		struct stat st;
		if (fstat(unw_pipe[i], &st) == 0 &&
		    (!S_ISFIFO(st.st_mode) || (uint64_t)st.st_ino != unw_pipe_ino[i]))
			taken = 1;
	}
	pthread_mutex_unlock(&unw_lock);
	if (taken && !__atomic_exchange_n(&unw_unsafe, 1, __ATOMIC_RELAXED))
		gmt_note(1, "stacks may end early from here on: the program opened files on the "
			    "numbers of libunwind's pipe, which libunwind would have read, written "
			    "and closed to check an address; such addresses are taken as bad");
	return !taken;
}

int gmt_unwinder_may_check(void)
{
	return !tls_unwinding || unwinder_safe();
}

/* Verify mode only (a test setting): shared counters, never touched on the
 * default path. */
static uint64_t stat_hits, stat_misses, stat_mismatches;

static size_t scratch_bytes(unsigned depth)
{
	return (3 * (size_t)depth + SLACK) * sizeof(uint64_t);
}

static uint64_t *scratch(struct cache *c, unsigned i)
{
	return c->scratch + (size_t)i * c->depth;
}

static struct cache *cache_for_thread(unsigned depth)
{
	struct cache *c = tls_cache;
	if (c && (c->disabled || c->depth >= depth))
		return c;
	if (tls_cache_failed)
		return NULL; /* no mmap per event once one has failed */
	if (c)		     /* the depth grew: start over */
		gmt_stack_cache_release();
	size_t stride = sizeof(struct entry) + 2 * sizeof(uint64_t) * depth;
	size_t bytes = sizeof(struct cache) + scratch_bytes(depth) + SETS * WAYS * stride +
		       SEEN * sizeof(uint64_t);
	/* Once per thread, like its ring (pthread_getattr_np may malloc).
	 * mmap: pages are touched only as entries fill. */
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		tls_cache_failed = 1;
		return NULL;
	}
	c = m;
	c->entries = (uint8_t *)m + sizeof(struct cache) + scratch_bytes(depth);
	c->seen = (uint64_t *)(c->entries + SETS * WAYS * stride);
	c->stride = stride;
	c->map_bytes = bytes;
	c->depth = depth;
	pthread_attr_t attr;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
			c->stack_lo = (uintptr_t)addr;
			c->stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
	c->disabled = !c->stack_hi;
	tls_cache = c;
	return c;
}

void gmt_stack_cache_release(void)
{
	struct cache *c = tls_cache;
	tls_cache = NULL;
	if (c)
		munmap(c, c->map_bytes);
}

static struct entry *way(struct cache *c, uint64_t ip0, uint64_t slot0, unsigned w)
{
	/* Call sites and slots a few bytes apart must land apart: mix. */
	uint64_t h = ip0 ^ (slot0 << 17);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (struct entry *)(c->entries + ((h % SETS) * WAYS + w) * c->stride);
}

static uint64_t *entry_pairs(struct entry *e)
{
	return (uint64_t *)(e + 1);
}

/* fp is an aligned frame inside this thread's stack, with room above it
 * for the saved frame pointer and the return address. One compare: an fp
 * below the stack wraps high. */
static inline int frame_in_stack(const struct cache *c, uintptr_t fp)
{
	return fp - c->stack_lo <= c->stack_hi - c->stack_lo - 16 && !(fp & 7);
}

static inline int outside_us(uint64_t ra, uintptr_t self_lo, uintptr_t self_hi)
{
	return ra < self_lo || ra >= self_hi;
}

/* Our own frames have frame pointers: follow them to the first return
 * address outside us. Returns its slot, or 0. */
static __attribute__((noinline)) uint64_t first_foreign_slot(const struct cache *c,
							     uintptr_t self_lo, uintptr_t self_hi)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	for (int i = 0; i < OWN_FRAMES; i++) {
		if (!frame_in_stack(c, fp))
			return 0;
		if (outside_us(((const uint64_t *)fp)[1], self_lo, self_hi))
			return fp + 8;
		uintptr_t next = ((const uintptr_t *)fp)[0];
		if (next <= fp)
			return 0;
		fp = next;
	}
	return 0;
}

/* The slot above the wrapper's frame, if it holds a return address outside
 * us (the walk's answer, without the walk); else 0. */
static uint64_t hook_frame_slot(const struct cache *c, uintptr_t fp, uintptr_t self_lo,
				uintptr_t self_hi)
{
	/* 0: the event did not come through a wrapper that set it. */
	return fp && frame_in_stack(c, fp) &&
		       outside_us(((const uint64_t *)fp)[1], self_lo, self_hi)
		   ? fp + 8
		   : 0;
}

/* A hit: every cached slot of one way still holds its return address. */
static unsigned try_hit(struct cache *c, uint64_t slot0, uint64_t *ips, unsigned depth)
{
	if (!slot0)
		return 0;
	uint64_t ip0 = *(const uint64_t *)slot0;
	for (unsigned w = 0; w < WAYS; w++) {
		struct entry *e = way(c, ip0, slot0, w);
		if (e->n == 0 || e->ip0 != ip0 || e->slot0 != slot0 || e->n > depth)
			continue;
		const uint64_t *pair = entry_pairs(e);
		unsigned i = 0, n = e->n; /* a local: the stores to ips may alias e->n */
		for (; i < n; i++, pair += 2) {
			/* Inside [slot0, stack_hi) by construction: checked on insert. */
			uint64_t v = *(const uint64_t *)pair[0];
			if (v != pair[1])
				break;
			ips[i] = v;
		}
		if (i == n)
			return n;
	}
	return 0;
}

/* libunwind, frame by frame, keeping where each return address sits. */
static unsigned unwind(uint64_t *ips, uint64_t *slots, unsigned depth, uintptr_t self_lo,
		       uintptr_t self_hi)
{
	unw_context_t ctx;
	unw_cursor_t cur;
	if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
		return 0;
	unsigned n = 0, own = 0;
	while (n < depth && unw_step(&cur) > 0) {
		unw_word_t ip, sp;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 ||
		    unw_get_reg(&cur, UNW_REG_SP, &sp) != 0)
			break;
		if (n == 0 && ip >= self_lo && ip < self_hi) {
			if (++own > OWN_FRAMES)
				return 0;
			continue;
		}
		ips[n] = ip;
		/* A call pushed the return address just below the caller's
		 * stack pointer as libunwind restores it. */
		slots[n] = sp - 8;
		n++;
	}
	return n;
}

/* unwind, where libunwind may run, not cancellable (as backtrace_trimmed),
 * its pipe2 known as its own. */
static unsigned unwind_guarded(uint64_t *ips, uint64_t *slots, unsigned depth, uintptr_t self_lo,
			       uintptr_t self_hi)
{
	int cancel = gmt_nocancel_begin();
	tls_unwinding = 1;
	unsigned n = unwind(ips, slots, depth, self_lo, self_hi);
	tls_unwinding = 0;
	gmt_nocancel_end(cancel);
	return n;
}

static void insert(struct cache *c, uint64_t slot0, const uint64_t *ips, const uint64_t *slots,
		   unsigned n)
{
	/* Only chains whose every slot is where we found it, in this stack,
	 * and that start where our frame pointers said: signal frames and
	 * anything unusual stay uncached. */
	if (!n || slots[0] != slot0)
		return;
	for (unsigned i = 0; i < n; i++)
		if (slots[i] < slot0 || slots[i] + 8 > c->stack_hi || (slots[i] & 7) ||
		    *(const uint64_t *)slots[i] != ips[i])
			return;
	/* An empty way, else the set's ways in turn (its clock is way 0's). */
	struct entry *first = way(c, ips[0], slot0, 0), *e = NULL;
	for (unsigned w = 0; w < WAYS && !e; w++)
		if (way(c, ips[0], slot0, w)->n == 0)
			e = way(c, ips[0], slot0, w);
	if (!e)
		e = way(c, ips[0], slot0, first->clock++ % WAYS);
	e->n = 0;
	e->ip0 = ips[0];
	e->slot0 = slot0;
	uint64_t *pair = entry_pairs(e);
	for (unsigned i = 0; i < n; i++) {
		pair[2 * i] = slots[i];
		pair[2 * i + 1] = ips[i];
	}
	e->n = n;
}

/* The plain way: unw_backtrace, then our own frames trimmed. */
static unsigned backtrace_trimmed(uint64_t *ips, unsigned depth, uintptr_t self_lo,
				  uintptr_t self_hi)
{
	/* libunwind reads a pipe to check an address it doubts (the end of a
	 * thread's stack): a cancellation point, on the program's thread. */
	int cancel = gmt_nocancel_begin();
	tls_unwinding = 1;
	int n = unw_backtrace((void **)ips, (int)(depth + SLACK));
	tls_unwinding = 0;
	gmt_nocancel_end(cancel);
	if (n <= 0)
		return 0;
	unsigned skip = 0;
	while (skip < (unsigned)n && ips[skip] >= self_lo && ips[skip] < self_hi)
		skip++;
	unsigned keep = (unsigned)n - skip;
	if (keep > depth)
		keep = depth;
	memmove(ips, ips + skip, keep * sizeof *ips);
	return keep;
}

/* Learning a chain takes a unw_step walk, which costs microseconds a
 * frame (unw_backtrace: nanoseconds, from its own cache). So a chain is
 * learnt only when it comes back: the first miss takes unw_backtrace and
 * leaves a fingerprint. And a set that keeps missing while full (one call
 * site at one depth reached along more chains than it has ways) learns
 * only one miss in LEARN_EVERY. */
enum { LEARN_EVERY = 256 };

static int worth_learning(struct cache *c, uint64_t slot0, const uint64_t *ips, unsigned n)
{
	uint64_t h = slot0 ^ n;
	for (unsigned i = 0; i < n; i++)
		h = (h ^ ips[i]) * 0xff51afd7ed558ccdull;
	h ^= h >> 29;
	uint64_t *seen = &c->seen[h % SEEN];
	if (*seen != h) {
		*seen = h;
		return 0;
	}
	for (unsigned w = 0; w < WAYS; w++)
		if (way(c, ips[0], slot0, w)->n == 0)
			return 1;
	struct entry *first = way(c, ips[0], slot0, 0);
	return ++first->misses % LEARN_EVERY == 0;
}

static inline __attribute__((always_inline)) unsigned
capture_cached(struct cache *c, uint64_t *ips, unsigned depth, uintptr_t self_lo, uintptr_t self_hi,
	       uintptr_t hook_frame, int count)
{
	uint64_t slot0 = hook_frame_slot(c, hook_frame, self_lo, self_hi);
	if (!slot0)
		slot0 = first_foreign_slot(c, self_lo, self_hi);
	unsigned n = try_hit(c, slot0, ips, depth);
	if (count)
		__atomic_add_fetch(n ? &stat_hits : &stat_misses, 1, __ATOMIC_RELAXED);
	if (n)
		return n;
	if (c->misses < COLD_MISSES) { /* one walk: the chain and its slots */
		c->misses++;
		uint64_t *slots = scratch(c, 0);
		n = unwind_guarded(ips, slots, depth, self_lo, self_hi);
		if (n && slot0)
			insert(c, slot0, ips, slots, n);
		if (n)
			return n;
	}
	n = backtrace_trimmed(ips, depth, self_lo, self_hi);
	if (!slot0 || !n || !worth_learning(c, slot0, ips, n))
		return n;
	uint64_t *slots = scratch(c, 0), *again = scratch(c, 1);
	unsigned m = unwind_guarded(again, slots, depth, self_lo, self_hi);
	/* Both walks must agree before the chain is trusted. */
	if (m == n && memcmp(again, ips, n * sizeof *ips) == 0)
		insert(c, slot0, ips, slots, n);
	return n;
}

unsigned gmt_stack_capture(uint64_t *ips, unsigned depth, int mode, uintptr_t self_lo,
			   uintptr_t self_hi, uintptr_t hook_frame)
{
	struct cache *c = mode == GMT_STACK_CACHE_OFF ? NULL : cache_for_thread(depth);
	if (!c || c->disabled)
		return backtrace_trimmed(ips, depth, self_lo, self_hi);
	if (mode != GMT_STACK_CACHE_VERIFY)
		return capture_cached(c, ips, depth, self_lo, self_hi, hook_frame, 0);

	/* Verify: the cached answer must be unw_backtrace's, hit or miss. */
	unsigned n = capture_cached(c, ips, depth, self_lo, self_hi, hook_frame, 1);
	uint64_t *ref = scratch(c, 2); /* depth + SLACK: the rest of the scratch */
	unsigned m = backtrace_trimmed(ref, depth, self_lo, self_hi);
	if (n != m || memcmp(ips, ref, n * sizeof *ips) != 0)
		__atomic_add_fetch(&stat_mismatches, 1, __ATOMIC_RELAXED);
	return n;
}

void gmt_stack_cache_stats(uint64_t *hits, uint64_t *misses, uint64_t *mismatches)
{
	*hits = __atomic_load_n(&stat_hits, __ATOMIC_RELAXED);
	*misses = __atomic_load_n(&stat_misses, __ATOMIC_RELAXED);
	*mismatches = __atomic_load_n(&stat_mismatches, __ATOMIC_RELAXED);
}
