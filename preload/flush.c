/* The flush thread (gmt-flush): it drains every thread's ring into the
 * writer, idles while nothing comes, and writes the final records and
 * trailer when the process ends (preload/flush.h).
 *
 * Locks, always taken in this order: flush_lock (owns the writer), then
 * setup_lock (the ring list, file creation). */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "preload/device.h"
#include "preload/flush.h"
#include "preload/notes.h"
#include "preload/ring.h"
#include "preload/sampler.h"
#include "preload/scanner.h"
#include "preload/state.h"
#include "preload/sync.h"
#include "preload/writer.h"

static void note_one(void *w, int level, const char *text)
{
	gmt_writer_note(w, level, text);
}

static void drain_record(void *w, struct gmt_ring *r, const struct gmt_ring_hdr *h)
{
	gmt_sampler_observe(h); /* the peak watch sees every event, off the hot path */
	gmt_writer_ring_record(w, r, h);
}

/* Events of children made without our fork handler, counted in the page
 * they share with us (life.c): a LOST record per increase, tid 0. */
static void report_child_lost(struct gmt_writer *w)
{
	uint64_t n = gmt_rt.child_lost ? __atomic_load_n(gmt_rt.child_lost, __ATOMIC_RELAXED) : 0;
	if (n > gmt_rt.child_lost_reported) {
		gmt_writer_lost(w, 0, n - gmt_rt.child_lost_reported, gmt_now_ns());
		gmt_rt.child_lost_reported = n;
	}
}

/* Events the program did not wait for while the trace's write was stuck
 * (core.c): a NOTE each time more came, and one line on stderr, once the
 * write is back (never while it is stuck: stderr may be on that disk). */
static void say_stall(struct gmt_writer *w)
{
	uint64_t n = __atomic_load_n(&gmt_rt.stall_lost, __ATOMIC_RELAXED);
	if (n <= gmt_rt.stall_noted)
		return;
	char text[256];
	gmt_format(text, sizeof text,
		   "the trace's file took no write for over %d ms (a stalled file system?): %llu "
		   "events were counted as lost rather than wait longer (GPUMEMTRACE_FULL_WAIT_MS)",
		   gmt_stall_ms(gmt_rt.set.full_wait_ms), (unsigned long long)n);
	gmt_writer_note(w, 1, text);
	if (!gmt_rt.stall_said)
		gmt_log("%s", text);
	gmt_rt.stall_said = 1;
	gmt_rt.stall_noted = n;
}

/* Moves everything the rings hold into the writer's chunk, unwritten
 * (records past a chunk's target size go out as whole chunks). Caller
 * holds flush_lock. */
static void drain_rings(void)
{
	struct gmt_writer *w = &gmt_rt.w;
	say_stall(w);
	gmt_writer_modules(w); /* what the scanning thread published: no scan here */
	gmt_scanner_take_names(w);
	pthread_mutex_lock(&gmt_rt_early.lock);
	struct gmt_device_facts *f = gmt_rt_early.facts;
	gmt_rt_early.facts = NULL;
	pthread_mutex_unlock(&gmt_rt_early.lock);
	if (f) {
		gmt_device_facts_merge(&w->devices, f);
		gmt_device_facts_free(f);
	}
	gmt_writer_devices(w);
	gmt_notes_each_new(note_one, w);

	pthread_mutex_lock(&gmt_rt.setup_lock);
	struct gmt_ring *list = gmt_rt.rings; /* rings are only prepended: a safe snapshot */
	pthread_mutex_unlock(&gmt_rt.setup_lock);

	int any_exited = 0;
	for (struct gmt_ring *r = list; r; r = r->next) {
		/* Read `exited` before draining: pairs with its release store in
		 * thread_gone, so the owner's last records are visible to us. */
		int exited = __atomic_load_n(&r->exited, __ATOMIC_ACQUIRE);
		gmt_ring_drain(r, drain_record, w);
		/* A hint only (read relaxed in gmt_record): a lost wake-up costs
		 * at most one FLUSH_MS period, never an event. */
		__atomic_store_n(&r->wake_sent, 0, __ATOMIC_RELAXED);
		gmt_writer_end_batch(w);
		/* A counter only the owner writes; relaxed is enough, a late
		 * increment is reported by the next cycle. */
		uint64_t lost = __atomic_load_n(&r->lost, __ATOMIC_RELAXED);
		if (lost > r->lost_reported) {
			gmt_writer_lost(w, r->tid, lost - r->lost_reported, gmt_now_ns());
			r->lost_reported = lost;
		}
		any_exited |= exited;
	}
	report_child_lost(w);
	if (any_exited) {
		pthread_mutex_lock(&gmt_rt.setup_lock);
		for (struct gmt_ring **pp = &gmt_rt.rings; *pp;) {
			struct gmt_ring *r = *pp;
			if (__atomic_load_n(&r->exited, __ATOMIC_ACQUIRE) &&
			    __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == r->tail) {
				*pp = r->next;
				gmt_ring_retire(r); /* no free() here */
			} else {
				pp = &r->next;
			}
		}
		pthread_mutex_unlock(&gmt_rt.setup_lock);
	}
	gmt_sampler_cycle_done();
}

/* Moves everything the rings hold into the file. Caller holds flush_lock. */
static void flush_cycle(void)
{
	drain_rings();
	gmt_scanner_ask_names(&gmt_rt.w.stacks, &gmt_rt.w.names_asked);
	gmt_scanner_poke(); /* modules loaded since: found by the next cycle */
	if (gmt_writer_flush(&gmt_rt.w) < 0)
		set_state(ST_OFF); /* writing failed: stop tracing, the program runs on */
}

struct hold_watch {
	uint64_t since;	 /* when the flush thread first saw this hold; 0: none */
	uint32_t raises; /* gmt_rt.exec_raises then */
};

/* Whether an exec under way holds the flush thread's writes. Bounded: an
 * exec's caller that never comes back (a handler longjmp'd out of it) must
 * not stop the trace for good. Flush thread only. */
static int exec_holds_writes(struct hold_watch *hw)
{
	enum { EXEC_HOLD_MAX_MS = 10000 };
	int held = 0;
	if (__atomic_load_n(&gmt_rt.exec_hold, __ATOMIC_RELAXED)) {
		uint64_t now = gmt_now_ns();
		uint32_t raises = __atomic_load_n(&gmt_rt.exec_raises, __ATOMIC_RELAXED);
		/* A stuck hold must not spend a later exec's bound. */
		if (!hw->since || raises != hw->raises) {
			hw->since = now;
			hw->raises = raises;
		}
		held = now - hw->since < EXEC_HOLD_MAX_MS * 1000000ull;
	} else {
		hw->since = 0;
	}
	__atomic_store_n(&gmt_rt.writes_held, held, __ATOMIC_RELAXED);
	return held;
}

enum { RINGS_EMPTY, RINGS_SAMPLES, RINGS_BUSY };

/* What the rings hold: nothing, only NVML samples (which never wake an
 * idle flush thread), or more (records, or a lost count to write). */
static int rings_hold(void)
{
	pthread_mutex_lock(&gmt_rt.setup_lock);
	int hold = RINGS_EMPTY;
	for (struct gmt_ring *r = gmt_rt.rings; r && hold != RINGS_BUSY; r = r->next) {
		if (__atomic_load_n(&r->lost, __ATOMIC_RELAXED) != r->lost_reported)
			hold = RINGS_BUSY;
		/* Pairs with the release stores of head: the records up to
		 * it are published. We are the consumer: they stay put. */
		uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		for (uint64_t t = r->tail; t < head && hold != RINGS_BUSY;) {
			const struct gmt_ring_hdr *h = (const void *)(r->buf + (t & (r->cap - 1)));
			if (h->type == GMT_RING_SAMPLE)
				hold = RINGS_SAMPLES;
			else if (h->type != GMT_RING_PAD)
				hold = RINGS_BUSY;
			t += h->len;
		}
	}
	pthread_mutex_unlock(&gmt_rt.setup_lock);
	return hold;
}

/* Idle: the first record committed into any ring asks for a drain (its
 * used bytes pass a wake_at of 0), once: wake_sent stays set until the
 * next cycle. Flush thread only. */
static void set_rings_idle(int idle)
{
	pthread_mutex_lock(&gmt_rt.setup_lock);
	gmt_rt.rings_idle = idle;
	for (struct gmt_ring *r = gmt_rt.rings; r; r = r->next)
		__atomic_store_n(&r->wake_at, idle ? 0 : r->cap / 2, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&gmt_rt.setup_lock);
}

/* Called by the flush thread after a cycle that followed a whole period:
 * how long it may sleep idle (0: not idle, keep the period). Idle, every
 * ring's wake_at is 0: the first record committed (an NVML sample excepted)
 * wakes it.
 * The clock's first fit and an exec's hold keep the period. */
static unsigned go_idle(void)
{
	/* Idle, the flush thread still wakes this often: the clock's line is
	 * refitted at least once a minute (as GPUMEMTRACE_FLUSH_MS=60000
	 * did), and with NVML sampling on, samples (which never wake it)
	 * reach the file within a second. */
	enum { IDLE_MAX_MS = 60000, IDLE_SAMPLES_MS = 1000 };
	if (gmt_clock_wait_ms() || load_state() != ST_ACTIVE ||
	    __atomic_load_n(&gmt_rt.exec_hold, __ATOMIC_RELAXED))
		return 0;
	/* A look first, with no store and no fence: a busy program (records
	 * committed since the cycle) costs nothing more. */
	if (rings_hold() == RINGS_BUSY)
		return 0;
	set_rings_idle(1);
	gmt_fence_finished(); /* pairs with the gmt_fence_recorded before ask_drain */
	int hold = rings_hold();
	unsigned idle_ms = gmt_rt.set.sample_ms ? IDLE_SAMPLES_MS : IDLE_MAX_MS;
	if (hold == RINGS_EMPTY || (hold == RINGS_SAMPLES && gmt_rt.set.flush_ms < IDLE_SAMPLES_MS))
		return idle_ms;
	set_rings_idle(0);
	return 0;
}

/* What befell the trace's descriptor and the tracer's own lines, said
 * once in the trace (the lines themselves could not be). */
static void notes_of_the_file(void)
{
	static uint64_t unsaid_noted;
	char text[256];
	struct gmt_writer *w = &gmt_rt.w;
	if (w->reopened > w->reopened_noted) {
		gmt_format(text, sizeof text,
			   "the program closed or reused the trace's descriptor (%u times): the "
			   "trace was opened again by its path each time, nothing was lost",
			   (unsigned)w->reopened);
		gmt_writer_note(w, 0, text);
		w->reopened_noted = w->reopened;
	}
	uint64_t unsaid = gmt_log_unsaid();
	if (unsaid > unsaid_noted) {
		gmt_format(text, sizeof text,
			   "%llu line%s of the tracer not printed: descriptor 2 was no longer the "
			   "stderr the program started with",
			   (unsigned long long)unsaid, unsaid == 1 ? "" : "s");
		gmt_writer_note(w, 1, text);
		unsaid_noted = unsaid;
	}
}

static void flush_with_trailer_at(unsigned reason, uint64_t end_ns)
{
	if (reason != GMT_END_EXEC) /* an exec may fail, and the trace go on */
		gmt_rt.w.devices_settle = 1;
	drain_rings();
	if (gmt_rt.child_lost_reported >
	    gmt_rt.child_lost_noted) { /* says what the LOST count holds */
		char text[200];
		gmt_format(
		    text, sizeof text,
		    "%llu events of child processes made without fork handlers (_Fork, a raw "
		    "clone) are counted as lost: such children are not traced",
		    (unsigned long long)gmt_rt.child_lost_reported);
		gmt_writer_note(&gmt_rt.w, 1, text);
		gmt_rt.child_lost_noted = gmt_rt.child_lost_reported;
	}
	notes_of_the_file();
	/* Pairs with the release store in gmt_exit_status (life.c). */
	unsigned how = __atomic_load_n(&gmt_rt.exit_how, __ATOMIC_ACQUIRE);
	if (how && reason != GMT_END_EXEC)
		gmt_writer_exit(&gmt_rt.w, __atomic_load_n(&gmt_rt.exit_ns, __ATOMIC_RELAXED),
				how - 1, __atomic_load_n(&gmt_rt.exit_status, __ATOMIC_RELAXED));
	gmt_writer_trailer(&gmt_rt.w, reason, end_ns);
	/* the end: a descriptor the program closed is reopened now, whoever
	 * writes (gmt_writer_reopen) */
	if (gmt_writer_reopen(&gmt_rt.w) < 0)
		set_state(ST_OFF);
}

/* With the flush thread gone (after the final trailer), whoever records
 * writes: the trace stays complete even for frees in late destructors.
 * The records and their trailer go out in one chunk, one write: a late
 * writer (a thread recording after the final trailer, the NVML sampler)
 * may be cut off at any moment by another thread's _exit, and a write of
 * the records alone would leave them after the last trailer, the trace
 * read as incomplete (t-life-exit-late-writer). */
void gmt_flush_now_with_trailer(unsigned reason)
{
	flush_with_trailer_at(reason, gmt_now_ns());
}

/* The process's end, on the flush thread (the exiting thread only waits,
 * bounded: it may be a signal handler that interrupted malloc). Records and
 * the trailer, in one write, and nothing else: no module scan here (the
 * scanning thread's, waited for 10 ms at most while it waits for the loader), no naming (the
 * CLI names the frames from the MODULE records; with
 * GPUMEMTRACE_SYMBOLIZE=1, what the scanning thread named so far goes
 * in). Caller holds flush_lock. */
static void final_flush(unsigned reason)
{
	if (reason != GMT_END_EXEC) {
		set_state(ST_FINISHED);
		gmt_fence_finished(); /* pairs with flush_if_finished */
	}
	/* The libraries loaded since the last cycle's scan, if the scanning
	 * thread can say within the bound: the loader's lock may be held by
	 * the very thread that waits for us (a handler's exit inside
	 * dl_iterate_phdr), and then the trace goes without them. */
	enum { FINAL_SCAN_LOADER_MS = 10, FINAL_SCAN_MAX_MS = 2000 };
	uint32_t ask = __atomic_load_n(&gmt_rt.end_scan, __ATOMIC_ACQUIRE);
	if (!ask) /* asked as the end began (life.c), else now */
		ask = gmt_scanner_scan_ask();
	int scanned = gmt_scanner_scan_wait(ask, FINAL_SCAN_LOADER_MS, FINAL_SCAN_MAX_MS);
	__atomic_store_n(&gmt_rt.end_scan, 0, __ATOMIC_RELAXED); /* an exec may fail */
	if (scanned != 0 && reason != GMT_END_EXEC)
		gmt_writer_note(&gmt_rt.w, 1,
				"the module scan at the end did not finish in time (the loader's "
				"lock was held): libraries loaded since the one before are not "
				"in the trace, and frames in them are not named");
	uint64_t pending = gmt_scanner_names_pending();
	if (pending && reason != GMT_END_EXEC) {
		char text[160];
		gmt_format(text, sizeof text,
			   "%llu frames were not named in the process before it ended: reports "
			   "name them from the module files",
			   (unsigned long long)pending);
		gmt_writer_note(&gmt_rt.w, 0, text);
	}
	flush_with_trailer_at(reason, gmt_now_ns());
}

/* Sleeps on gmt_rt.wake, at most ms, unless a final flush was asked for.
 * `seen` is gmt_rt.wake as read before this cycle's checks. The request is
 * read here, after `seen`, and not only after the sleep: an exit's request
 * that came while the last cycle ran (its read of final_req already made)
 * has its wake-up counted in `seen`, so the FUTEX_WAIT would sleep the whole
 * period with the request pending (1 s idle, 60 s with SAMPLE_MS=0; the
 * exit gave up after 10 s without a trailer). ask_final_flush stores the
 * request before it bumps gmt_rt.wake (release, both): a bump in `seen`
 * has its request visible here (acquire), and a later bump makes the
 * FUTEX_WAIT return at once. t-life-exit-wakeup forces that order. */
static void sleep_unless_asked(uint32_t seen, unsigned ms)
{
	if (__atomic_load_n(&gmt_rt.final_req, __ATOMIC_ACQUIRE))
		return;
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	syscall(SYS_futex, &gmt_rt.wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

static void *flusher_main(void *arg)
{
	struct hold_watch hold = {0, 0};
	uint64_t idle_end = 0;		      /* when the flush thread last left an idle sleep */
	gmt_enter();			      /* nothing this thread does is the program's */
	gmt_futex_set(&gmt_rt.flusher_up, 1); /* fork waits for this */
	prctl(PR_SET_NAME, "gmt-flush", 0, 0, 0);
	pthread_mutex_lock(&gmt_rt.flush_lock);
	gmt_writer_reserve(&gmt_rt.w);
	/* libzstd's dlopen as early as can be: while it waits for the
	 * loader's lock (a dlopen stuck in a constructor), an exit or exec
	 * asking for the final flush waits its whole bound. */
	gmt_writer_compress_init(&gmt_rt.w);
	pthread_mutex_unlock(&gmt_rt.flush_lock);
	for (;;) {
		uint32_t seen = __atomic_load_n(&gmt_rt.wake, __ATOMIC_ACQUIRE);
		unsigned ms = (unsigned)gmt_rt.set.flush_ms, clock_ms = gmt_clock_wait_ms();
		if (clock_ms && clock_ms < ms)
			ms = clock_ms;
		/* Nothing to write: sleep until a record comes. A whole period
		 * between idle sleeps (half-full wakes come meanwhile): records
		 * wake us at most once a period, however dense their stream. */
		uint64_t period_ns = (uint64_t)gmt_rt.set.flush_ms * 1000000u;
		unsigned idle_ms = gmt_now_ns() - idle_end >= period_ns ? go_idle() : 0;
		int idle = idle_ms != 0;
		if (idle)
			ms = idle_ms;
		sleep_unless_asked(seen, ms);
		if (idle) {
			set_rings_idle(0);
			idle_end = gmt_now_ns();
		}
		/* Pairs with the release store in ask_final_flush (life.c). */
		uint32_t req = __atomic_exchange_n(&gmt_rt.final_req, 0, __ATOMIC_ACQUIRE);
		if (!req) {
			/* The cycle begins before it reads any ring's head: the
			 * fence pairs with gmt_flush_wait's (a waiter that read
			 * the number before this store had published its records
			 * before this cycle's reads of head). */
			__atomic_store_n(&gmt_rt.cycles_begun, gmt_rt.cycles + 1, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		}
		pthread_mutex_lock(&gmt_rt.flush_lock);
		gmt_clock_tick(); /* under the lock: fork never copies half a line */
		if (load_state() == ST_ACTIVE) {
			/* dlopen: here, never on the hook path, nor for an exit or
			 * exec waiting on us: a dlopen under way elsewhere may hold
			 * the loader's lock for good (its chunks stay uncompressed). */
			if (!req)
				gmt_writer_compress_init(&gmt_rt.w);
			if (req)
				final_flush(req - 1);
			else if (!exec_holds_writes(&hold))
				flush_cycle();
		}
		pthread_mutex_unlock(&gmt_rt.flush_lock);
		if (!req) /* pairs with the acquire loads in gmt_flush_wait */
			gmt_futex_set(&gmt_rt.cycles, gmt_rt.cycles + 1);
		if (req) {
			/* Pairs with the acquire loads in ask_final_flush. */
			__atomic_add_fetch(&gmt_rt.final_done, 1, __ATOMIC_RELEASE);
			syscall(SYS_futex, &gmt_rt.final_done, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL,
				NULL, 0);
			if (req - 1 != GMT_END_EXEC)
				break; /* the process is ending; late records write themselves */
		}
	}
	return NULL;
}

int gmt_flush_wait(unsigned max_ms)
{
	if (load_state() != ST_ACTIVE)
		return 1;
	uint64_t deadline = gmt_now_ns() + max_ms * 1000000ull;
	/* Our records' head stores come before the read of the cycle under
	 * way (pairs with the fence in flusher_main): the next cycle to begin
	 * reads them, so its end is the one to wait for. (The one under way
	 * may have drained our ring before our last record.) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint32_t want = __atomic_load_n(&gmt_rt.cycles_begun, __ATOMIC_RELAXED) + 1;
	uint32_t seen = __atomic_load_n(&gmt_rt.cycles, __ATOMIC_ACQUIRE);
	while ((int32_t)(seen - want) < 0) {
		uint64_t now = gmt_now_ns();
		if (load_state() != ST_ACTIVE)
			return 1;
		if (now >= deadline)
			return -1;
		gmt_flush_wake(); /* each cycle: it may be sleeping out its period */
		unsigned ms = (unsigned)((deadline - now) / 1000000u);
		seen = gmt_futex_wait_while(&gmt_rt.cycles, seen, ms < 10 ? ms + 1 : 10);
	}
	return 0;
}

long gmt_trace_path(char *buf, size_t size)
{
	int st = load_state();
	if (st != ST_ACTIVE && st != ST_FINISHED)
		return -1; /* no file yet (or none at all) */
	size_t n = strnlen(gmt_rt.w.path, sizeof(gmt_rt.w.path));
	if (buf && size) {
		size_t k = n < size - 1 ? n : size - 1;
		memcpy(buf, gmt_rt.w.path, k);
		buf[k] = '\0';
	}
	return (long)n;
}

int gmt_flush_start(void)
{
	/* Encoding, zstd (its state is on the heap) and write(): some 20 KB. */
	enum { FLUSH_STACK = 512 << 10 };
	gmt_rt.flusher_up = 0;
	int rc = gmt_thread_start(&gmt_rt.flusher, FLUSH_STACK, flusher_main, NULL);
	gmt_rt.flusher_running = rc == 0;
	return rc;
}
