/* The tracer's core: configuration, per-thread rings, the event path and
 * the flush thread (the end of the process and fork: preload/life.c).
 *
 * Locks, always taken in this order: flush_lock (owns the writer), then
 * setup_lock (the ring list, file creation), then notes_lock. The event path takes neither,
 * except on a thread's first event.
 *
 * Where our work on a program's thread may open, write, sleep or join (a
 * thread's first event, a full ring's wait, writing after the final
 * trailer, the finish), it runs with cancellation disabled
 * (preload/nocancel.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/codec.h"
#include "common/log.h"
#include "preload/device.h"
#include "preload/nocancel.h"
#include "preload/python.h"
#include "preload/ring.h"
#include "preload/runtime.h"
#include "preload/sampler.h"
#include "preload/settings.h"
#include "preload/stackcache.h"
#include "preload/tracer.h"
#include "preload/writer.h"

__thread int gmt_tls_depth __attribute__((tls_model("initial-exec")));
__thread uint64_t gmt_tls_call_start __attribute__((tls_model("initial-exec")));
__thread uintptr_t gmt_tls_hook_frame __attribute__((tls_model("initial-exec")));
__thread struct gmt_ring *tls_ring __attribute__((tls_model("initial-exec")));
/* This thread's execs that raised rt.exec_hold and have not come back. */
__thread unsigned tls_exec_holds __attribute__((tls_model("initial-exec")));

struct gmt_runtime rt = {
    .setup_lock = PTHREAD_MUTEX_INITIALIZER,
    .flush_lock = PTHREAD_MUTEX_INITIALIZER,
    .notes_lock = PTHREAD_MUTEX_INITIALIZER,
    .armed = &gmt_armed_always,
};

/* After a commit and a fence_recorded (flush_if_finished has one): a ring
 * half full, or any record while the flush thread sleeps idle (wake_at 0:
 * the flush thread stores it, fences, then looks at the rings; one of the
 * two sides sees the other's store), wakes the flush thread, once until its
 * next cycle. Inline: on every event's path. */
static inline void ask_drain(struct gmt_ring *r, size_t used)
{
	/* Hints only (relaxed): a wake-up lost to a race with a cycle costs
	 * at most one FLUSH_MS period, never an event. */
	if (used >= __atomic_load_n(&r->wake_at, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&r->wake_sent, __ATOMIC_RELAXED)) {
		__atomic_store_n(&r->wake_sent, 1, __ATOMIC_RELAXED);
		wake_flusher();
	}
}

/* The fence between an event's commit and the FINISHED check is asymmetric:
 * the event path's half is a compiler barrier, the finisher's (rare) half
 * is membarrier(2), a full barrier on every running thread of the process.
 * An mfence per event cost ~25 ns per alloc+free pair here. 0: membarrier
 * is missing (old kernel, valgrind) and both halves are real fences. */
static int asym_fence;

void asym_fence_setup(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	asym_fence = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
		     syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* The event path's half. Pairs with fence_finished. */
static inline void fence_recorded(void)
{
	if (__atomic_load_n(&asym_fence, __ATOMIC_RELAXED))
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* The finisher's half, after its FINISHED store. Pairs with fence_recorded. */
void fence_finished(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&asym_fence, __ATOMIC_RELAXED) ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return;
	/* A registered process never gets here. If it does, recorders may have
	 * skipped their fence: give their store buffers time to drain. */
	__atomic_store_n(&asym_fence, 0, __ATOMIC_RELAXED);
	struct timespec ms = {0, 1000000};
	nanosleep(&ms, NULL);
}

int gmt_flush_wait(unsigned max_ms)
{
	if (load_state() != ST_ACTIVE || __atomic_load_n(&rt.stop, __ATOMIC_ACQUIRE))
		return 1;
	uint64_t deadline = gmt_now_ns() + max_ms * 1000000ull;
	uint32_t start = __atomic_load_n(&rt.cycles, __ATOMIC_ACQUIRE), seen = start;
	/* The cycle under way may have drained our ring before our last
	 * record: the second cycle to end from now began after the call. */
	while (seen - start < 2) {
		uint64_t now = gmt_now_ns();
		if (now >= deadline || load_state() != ST_ACTIVE)
			return load_state() == ST_ACTIVE ? -1 : 1;
		wake_flusher(); /* each cycle: it may be sleeping out its period */
		unsigned ms = (unsigned)((deadline - now) / 1000000u);
		seen = gmt_futex_wait_while(&rt.cycles, seen, ms < 10 ? ms + 1 : 10);
	}
	return 0;
}

long gmt_trace_path(char *buf, size_t size)
{
	if (load_state() != ST_ACTIVE && load_state() != ST_FINISHED)
		return -1; /* no file yet (or none at all) */
	size_t n = strnlen(rt.w.path, sizeof(rt.w.path));
	if (buf && size) {
		size_t k = n < size - 1 ? n : size - 1;
		memcpy(buf, rt.w.path, k);
		buf[k] = '\0';
	}
	return (long)n;
}

void wake_flusher(void)
{
	/* Pairs with the load of rt.wake before FUTEX_WAIT in flusher_main. */
	__atomic_add_fetch(&rt.wake, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &rt.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- configuration ---------------------------------------------------- */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t me = (uintptr_t)&gmt_record;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (ph->p_type == PT_LOAD && me >= lo && me < hi) {
			rt.self_lo = lo;
			rt.self_hi = hi;
			return 1;
		}
	}
	return 0;
}

static void thread_gone(void *ring);
static void flush_with_trailer_at(unsigned reason, uint64_t end_ns);

static void configure_locked(void)
{
	if (rt.state != ST_UNCONFIGURED)
		return;
	if (getauxval(AT_SECURE)) {
		/* setuid and friends: do nothing at all, not even read settings. */
		set_state(ST_OFF);
		return;
	}
	gmt_settings_load(&rt.set);
	/* `gpumemtrace run --no-follow`: descendants inherit LD_PRELOAD but stay inert. */
	if (rt.set.disabled || (rt.set.pid_only && rt.set.pid_only != getpid())) {
		set_state(ST_OFF);
		return;
	}
	size_t cap = 4096;
	while (cap < rt.set.ring_bytes)
		cap <<= 1;
	rt.ring_cap = cap;
	rt.pid = getpid();
	gmt_clock_init(rt.set.clock);
	rt.start_mono = gmt_now_ns();
	rt.w.fd = -1;
	asym_fence_setup();
	gmt_children_setup();
	dl_iterate_phdr(find_self, NULL);
	if (pthread_key_create(&rt.key, thread_gone) != 0 ||
	    pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) {
		gmt_log("cannot set up thread tracking; tracing is off");
		set_state(ST_OFF);
		return;
	}
	set_state(ST_IDLE);
}

int gmt_tracing(void)
{
	int st = load_state();
	if (st == ST_UNCONFIGURED) {
		pthread_mutex_lock(&rt.setup_lock);
		configure_locked();
		pthread_mutex_unlock(&rt.setup_lock);
		st = load_state();
	}
	return st != ST_OFF;
}

__attribute__((constructor)) static void at_load(void)
{
	gmt_tracing();
}

/* ---- the flush thread -------------------------------------------------- */

void gmt_note(int level, const char *text)
{
	pthread_mutex_lock(&rt.notes_lock);
	if (rt.nnotes < GMT_MAX_NOTES) {
		rt.notes[rt.nnotes].level = level;
		gmt_format(rt.notes[rt.nnotes].text, sizeof rt.notes[0].text, "%s", text);
		rt.nnotes++;
	} else {
		rt.notes_dropped++;
	}
	pthread_mutex_unlock(&rt.notes_lock);
}

static void write_notes(struct gmt_writer *w)
{
	pthread_mutex_lock(&rt.notes_lock);
	for (; rt.notes_written < rt.nnotes; rt.notes_written++)
		gmt_writer_note(w, rt.notes[rt.notes_written].level,
				rt.notes[rt.notes_written].text);
	if (rt.notes_dropped) {
		char text[96];
		gmt_format(text, sizeof text, "%llu more notes were dropped",
			   (unsigned long long)rt.notes_dropped);
		gmt_writer_note(w, 1, text);
		rt.notes_dropped = 0;
	}
	pthread_mutex_unlock(&rt.notes_lock);
}

static void drain_record(void *w, struct gmt_ring *r, const struct gmt_ring_hdr *h)
{
	gmt_sampler_observe(h); /* the peak watch sees every event, off the hot path */
	gmt_writer_ring_record(w, r, h);
}

/* The devices' facts, asked on the program's thread inside the call whose
 * event made the file: the driver is surely up there, while at exit the
 * runtime may have torn it down (seen on an H100: a DEVICE record of
 * zeros). No lock is held across the driver calls, whose first lookups take
 * the loader's lock; the flush thread merges the result. */
struct gmt_early_facts rt_early = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Events of children made without our fork handler, counted in the page
 * they share with us (life.c): a LOST record per increase, tid 0. */
static void report_child_lost(struct gmt_writer *w)
{
	uint64_t n = rt.child_lost ? __atomic_load_n(rt.child_lost, __ATOMIC_RELAXED) : 0;
	if (n > rt.child_lost_reported) {
		gmt_writer_lost(w, 0, n - rt.child_lost_reported, gmt_now_ns());
		rt.child_lost_reported = n;
	}
}

/* Moves everything the rings hold into the writer's chunk, unwritten
 * (records past a chunk's target size go out as whole chunks). Caller
 * holds flush_lock. */
static void drain_rings(void)
{
	struct gmt_writer *w = &rt.w;
	gmt_writer_scan_modules(w);
	pthread_mutex_lock(&rt_early.lock);
	struct gmt_device_facts *f = rt_early.facts;
	rt_early.facts = NULL;
	pthread_mutex_unlock(&rt_early.lock);
	if (f) {
		gmt_device_facts_merge(&w->devices, f);
		gmt_early_facts_free(f);
	}
	gmt_writer_devices(w);
	write_notes(w);

	pthread_mutex_lock(&rt.setup_lock);
	struct gmt_ring *list = rt.rings; /* rings are only prepended: a safe snapshot */
	pthread_mutex_unlock(&rt.setup_lock);

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
		pthread_mutex_lock(&rt.setup_lock);
		for (struct gmt_ring **pp = &rt.rings; *pp;) {
			struct gmt_ring *r = *pp;
			if (__atomic_load_n(&r->exited, __ATOMIC_ACQUIRE) &&
			    __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == r->tail) {
				*pp = r->next;
				gmt_ring_free(r);
			} else {
				pp = &r->next;
			}
		}
		pthread_mutex_unlock(&rt.setup_lock);
	}
	gmt_sampler_cycle_done();
}

/* Moves everything the rings hold into the file. Caller holds flush_lock. */
static void flush_cycle(void)
{
	drain_rings();
	if (gmt_writer_flush(&rt.w) < 0)
		set_state(ST_OFF); /* writing failed: stop tracing, the program runs on */
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

struct hold_watch {
	uint64_t since;	 /* when the flush thread first saw this hold; 0: none */
	uint32_t raises; /* rt.exec_raises then */
};

/* Whether an exec under way holds the flush thread's writes. Bounded: an
 * exec's caller that never comes back (a handler longjmp'd out of it) must
 * not stop the trace for good. Flush thread only. */
static int exec_holds_writes(struct hold_watch *hw)
{
	enum { EXEC_HOLD_MAX_MS = 10000 };
	int held = 0;
	if (__atomic_load_n(&rt.exec_hold, __ATOMIC_RELAXED)) {
		uint64_t now = gmt_now_ns();
		uint32_t raises = __atomic_load_n(&rt.exec_raises, __ATOMIC_RELAXED);
		/* A stuck hold must not spend a later exec's bound. */
		if (!hw->since || raises != hw->raises) {
			hw->since = now;
			hw->raises = raises;
		}
		held = now - hw->since < EXEC_HOLD_MAX_MS * 1000000ull;
	} else {
		hw->since = 0;
	}
	__atomic_store_n(&rt.writes_held, held, __ATOMIC_RELAXED);
	return held;
}

enum { RINGS_EMPTY, RINGS_SAMPLES, RINGS_BUSY };

/* What the rings hold: nothing, only NVML samples (which never wake an
 * idle flush thread), or more (records, or a lost count to write). */
static int rings_hold(void)
{
	pthread_mutex_lock(&rt.setup_lock);
	int hold = RINGS_EMPTY;
	for (struct gmt_ring *r = rt.rings; r && hold != RINGS_BUSY; r = r->next) {
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
	pthread_mutex_unlock(&rt.setup_lock);
	return hold;
}

/* Idle: the first record committed into any ring asks for a drain (its
 * used bytes pass a wake_at of 0), once: wake_sent stays set until the
 * next cycle. Flush thread only. */
static void set_rings_idle(int idle)
{
	pthread_mutex_lock(&rt.setup_lock);
	rt.rings_idle = idle;
	for (struct gmt_ring *r = rt.rings; r; r = r->next)
		__atomic_store_n(&r->wake_at, idle ? 0 : r->cap / 2, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&rt.setup_lock);
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
	    __atomic_load_n(&rt.exec_hold, __ATOMIC_RELAXED))
		return 0;
	/* A look first, with no store and no fence: a busy program (records
	 * committed since the cycle) costs nothing more. */
	if (rings_hold() == RINGS_BUSY)
		return 0;
	set_rings_idle(1);
	fence_finished(); /* pairs with the fence_recorded before ask_drain */
	int hold = rings_hold();
	unsigned idle_ms = rt.set.sample_ms ? IDLE_SAMPLES_MS : IDLE_MAX_MS;
	if (hold == RINGS_EMPTY || (hold == RINGS_SAMPLES && rt.set.flush_ms < IDLE_SAMPLES_MS))
		return idle_ms;
	set_rings_idle(0);
	return 0;
}

/* libdw does not survive every failed allocation (seen: SIGSEGV in
 * dwarf_getsrclines under a tight RLIMIT_AS), and a crash on any thread
 * ends the program, its buffered output lost. Symbolize only with room
 * under the limits: the module files' size (libdw maps them) and 256 MiB.
 * Otherwise a NOTE says so and the CLI names the frames. */
static int symbolize_safe(void)
{
	enum { SYMBOLIZE_ROOM_MIB = 256 };
	struct rlimit as, data;
	if (getrlimit(RLIMIT_AS, &as) != 0 || getrlimit(RLIMIT_DATA, &data) != 0)
		return 0;
	if (as.rlim_cur == RLIM_INFINITY && data.rlim_cur == RLIM_INFINITY)
		return 1;
	/* read(2), not stdio: no allocation where memory is short. */
	unsigned long long size = 0, data_pages = 0, x;
	char text[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
	if (fd >= 0)
		close(fd);
	text[n > 0 ? n : 0] = 0;
	if (sscanf(text, "%llu %llu %llu %llu %llu %llu", &size, &x, &x, &x, &x, &data_pages) != 6)
		size = ~0ull >> 16; /* unknown: as if there were no room */
	unsigned long long page = (unsigned long long)sysconf(_SC_PAGESIZE);
	unsigned long long need = (unsigned long long)SYMBOLIZE_ROOM_MIB << 20;
	for (size_t i = 0; i < rt.w.modules.n; i++) {
		struct stat st;
		if (rt.w.modules.v[i].path && stat(rt.w.modules.v[i].path, &st) == 0)
			need += (unsigned long long)st.st_size;
	}
	int ok = (as.rlim_cur == RLIM_INFINITY || size * page + need <= as.rlim_cur) &&
		 (data.rlim_cur == RLIM_INFINITY || data_pages * page + need <= data.rlim_cur);
	if (!ok)
		gmt_writer_note(&rt.w, 1,
				"frames not named at exit: the address-space or data limit "
				"leaves too little room for the symbolizer; reports name them "
				"from the module files");
	return ok;
}

/* The process's end, on the flush thread (the exiting thread only waits,
 * bounded: it may be a signal handler that interrupted malloc, holding the
 * lock that symbolizing needs). Two writes: first every record and a
 * trailer, so the trace is complete whatever happens next; then the names
 * of its frames and a fresh trailer, unless the exiting thread stopped
 * waiting (GATE_CLOSED: the process may end in the middle of our write).
 * Frames left unnamed are named by the CLI from the MODULE records.
 * Caller holds flush_lock. */
static void final_flush(unsigned reason)
{
	if (reason != GMT_END_EXEC) {
		set_state(ST_FINISHED);
		fence_finished(); /* pairs with flush_if_finished */
	}
	uint64_t end_ns = gmt_now_ns(); /* both trailers: naming is not the program's time */
	int name = rt.set.symbolize && symbolize_safe(); /* its NOTE goes with the records */
	flush_with_trailer_at(reason, end_ns);
	if (!name || load_state() == ST_OFF || gmt_writer_symbols(&rt.w) == 0)
		return;
	gmt_writer_trailer(&rt.w, reason, end_ns);
	uint32_t open = GATE_OPEN;
	if (!__atomic_compare_exchange_n(&rt.symbols_gate, &open, GATE_WRITING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return; /* left in the chunk: a late writer may still write it */
	if (gmt_writer_flush(&rt.w) < 0)
		set_state(ST_OFF);
	gmt_futex_set(&rt.symbols_gate, GATE_OPEN);
}

static void *flusher_main(void *arg)
{
	struct hold_watch hold = {0, 0};
	uint64_t idle_end = 0;		  /* when the flush thread last left an idle sleep */
	gmt_enter();			  /* nothing this thread does is the program's */
	gmt_futex_set(&rt.flusher_up, 1); /* fork waits for this */
	prctl(PR_SET_NAME, "gmt-flush", 0, 0, 0);
	pthread_mutex_lock(&rt.flush_lock);
	gmt_writer_reserve(&rt.w);
	/* libzstd's dlopen as early as can be: while it waits for the
	 * loader's lock (a dlopen stuck in a constructor), an exit or exec
	 * asking for the final flush waits its whole bound. */
	gmt_writer_compress_init(&rt.w);
	pthread_mutex_unlock(&rt.flush_lock);
	/* Pairs with the release store of rt.stop in gmt_finish. */
	while (!__atomic_load_n(&rt.stop, __ATOMIC_ACQUIRE)) {
		uint32_t seen = __atomic_load_n(&rt.wake, __ATOMIC_ACQUIRE);
		unsigned ms = (unsigned)rt.set.flush_ms, clock_ms = gmt_clock_wait_ms();
		if (clock_ms && clock_ms < ms)
			ms = clock_ms;
		/* Nothing to write: sleep until a record comes. A whole period
		 * between idle sleeps (half-full wakes come meanwhile): records
		 * wake us at most once a period, however dense their stream. */
		uint64_t period_ns = (uint64_t)rt.set.flush_ms * 1000000u;
		unsigned idle_ms = gmt_now_ns() - idle_end >= period_ns ? go_idle() : 0;
		int idle = idle_ms != 0;
		if (idle)
			ms = idle_ms;
		struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
		syscall(SYS_futex, &rt.wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
		if (idle) {
			set_rings_idle(0);
			idle_end = gmt_now_ns();
		}
		/* Pairs with the release store in ask_final_flush (life.c). */
		uint32_t req = __atomic_exchange_n(&rt.final_req, 0, __ATOMIC_ACQUIRE);
		if (req)
			__atomic_store_n(&rt.symbols_gate, GATE_OPEN, __ATOMIC_RELAXED);
		pthread_mutex_lock(&rt.flush_lock);
		gmt_clock_tick(); /* under the lock: fork never copies half a line */
		if (load_state() == ST_ACTIVE) {
			/* dlopen: here, never on the hook path, nor for an exit or
			 * exec waiting on us: a dlopen under way elsewhere may hold
			 * the loader's lock for good (its chunks stay uncompressed). */
			if (!req)
				gmt_writer_compress_init(&rt.w);
			if (req)
				final_flush(req - 1);
			else if (!exec_holds_writes(&hold))
				flush_cycle();
		}
		pthread_mutex_unlock(&rt.flush_lock);
		if (!req) /* pairs with the acquire loads in gmt_flush_wait */
			gmt_futex_set(&rt.cycles, rt.cycles + 1);
		if (req) {
			/* Pairs with the acquire loads in ask_final_flush. */
			__atomic_add_fetch(&rt.final_done, 1, __ATOMIC_RELEASE);
			syscall(SYS_futex, &rt.final_done, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL,
				NULL, 0);
			if (req - 1 != GMT_END_EXEC)
				break; /* the process is ending; late records write themselves */
		}
	}
	return NULL;
}

static int start_flusher(void)
{
	sigset_t all, old;
	sigfillset(&all);
	/* The flush thread inherits a full mask: no signal of the program's is
	 * ever handled on it, and SIGXFSZ from a full disk cannot kill. */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rt.flusher_up = 0;
	int rc = pthread_create(&rt.flusher, NULL, flusher_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	rt.flusher_running = rc == 0;
	return rc;
}

/* ---- per-thread rings ----------------------------------------------------- */

static void push_thread_name(struct gmt_ring *r)
{
	char name[16] = "";
	prctl(PR_GET_NAME, name, 0, 0, 0);
	size_t n = strnlen(name, sizeof name);
	size_t len = gmt_ring_align(sizeof(struct gmt_ring_hdr) + n);
	struct gmt_ring_hdr *h = gmt_ring_reserve(r, len);
	if (!h)
		return;
	h->len = (uint32_t)len;
	h->type = GMT_RING_THREAD;
	h->nframes = (uint16_t)n;
	memcpy(h + 1, name, n);
	gmt_ring_commit(r, len);
}

/* mmap, not malloc: the flush thread frees them, and a free of another
 * thread's memory takes that thread's arena lock, which at exit the
 * interrupted thread may hold (t-life-sigterm-exit). */
void gmt_early_facts_free(struct gmt_device_facts *f)
{
	if (f)
		munmap(f, sizeof *f);
}

static void learn_devices_early(void)
{
	struct gmt_device_facts *f =
	    mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f == MAP_FAILED)
		return;
	gmt_device_facts_query(f, NULL);
	pthread_mutex_lock(&rt_early.lock);
	gmt_early_facts_free(rt_early.facts);
	rt_early.facts = f;
	pthread_mutex_unlock(&rt_early.lock);
}

/* Creates the trace file (its header, the module scan, /proc reads: some
 * 20 KB of stack) and lists it for `run`. Returns 0, or -1 with the
 * reason logged. Caller holds setup_lock. */
static int create_trace(void)
{
	int opened = gmt_writer_open(&rt.w, rt.set.output_template, rt.set.stack_depth,
				     rt.set.compress, rt.start_mono);
	int err = errno;
	/* Listed once the file exists, even if writing it failed: `run`
	 * reports exactly the traces its command made, no other. */
	if (rt.w.fd >= 0 && rt.set.trace_list && gmt_writer_list(&rt.w, rt.set.trace_list) != 0)
		gmt_log("cannot add %s to GPUMEMTRACE_TRACE_LIST=%s: %s; "
			"gpumemtrace run will not report it",
			rt.w.path, rt.set.trace_list, strerror(errno));
	if (opened != 0) {
		gmt_log("cannot create trace file from '%s': %s; tracing is off, the program "
			"runs on",
			rt.set.output_template, strerror(err));
		return -1;
	}
	/* libzstd's dlopen here, inside the first event (which asks the
	 * driver, through the loader, anyway), never later on the flush
	 * thread: there it could wait for a dlopen stuck in a constructor
	 * while an exit or exec waits for the final flush (t-life-stuck-loader). */
	gmt_writer_compress_init(&rt.w);
	return 0;
}

static void *create_trace_thread(void *result)
{
	gmt_enter(); /* nothing this thread does is the program's */
	*(int *)result = create_trace();
	return NULL;
}

/* create_trace on a short-lived thread of our own, its stack ours: the
 * calling thread's stack may be a small one of the program's (16-24 KiB
 * threads overflowed here). Where no thread can be made, on this one. */
static int create_trace_off_stack(void)
{
	enum { CREATE_STACK = 256 << 10 };
	int result = -1;
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	if (pthread_attr_init(&a) != 0)
		return create_trace();
	pthread_attr_setstacksize(&a, CREATE_STACK);
	sigfillset(&all); /* no signal of the program's is handled there */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&t, &a, create_trace_thread, &result);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (rc != 0)
		return create_trace();
	pthread_join(t, NULL);
	return result;
}

/* A thread's first event: the only one that locks and allocates. */
static struct gmt_ring *ring_for_this_thread(void)
{
	int made_file = 0, cancel = gmt_nocancel_begin();
	pthread_mutex_lock(&rt.setup_lock);
	if (rt.state == ST_IDLE) {
		/* The process's first event creates the file, off this
		 * thread's stack, which may be small (t-life-small-stack). */
		int opened = create_trace_off_stack();
		if (opened != 0) {
			gmt_writer_abandon(&rt.w);
			set_state(ST_OFF);
		} else if (start_flusher() != 0) {
			gmt_log("cannot start the flush thread; tracing is off");
			set_state(ST_OFF);
		} else {
			set_state(ST_ACTIVE);
			gmt_sampler_start(rt.set.sample_ms);
			made_file = 1;
		}
	}
	struct gmt_ring *r = NULL;
	if (rt.state == ST_ACTIVE || rt.state == ST_FINISHED) {
		r = gmt_ring_new(rt.ring_cap, (int)syscall(SYS_gettid));
		if (r) {
			if (rt.rings_idle)
				r->wake_at = 0;
			r->next = rt.rings;
			rt.rings = r;
		}
	}
	pthread_mutex_unlock(&rt.setup_lock);
	if (made_file)
		learn_devices_early();
	if (r) {
		tls_ring = r;
		pthread_setspecific(rt.key, r);
		push_thread_name(r);
	}
	gmt_nocancel_end(cancel);
	return r;
}

static void thread_gone(void *ring)
{
	struct gmt_ring *r = ring;
	tls_ring = NULL; /* a later event on this thread gets a fresh ring */
	gmt_stack_cache_release();
	/* Pairs with the acquire load in flush_cycle. */
	__atomic_store_n(&r->exited, 1, __ATOMIC_RELEASE);
	if (rt.flusher_running)
		wake_flusher();
}

/* With the flush thread gone (after the final trailer), whoever records
 * writes: the trace stays complete even for frees in late destructors.
 * Never names frames: only the flush thread symbolizes (final_flush); a
 * late record's new frames are named by the CLI.
 * The records and their trailer go out in one chunk, one write: a late
 * writer (a thread recording after the final trailer, the NVML sampler)
 * may be cut off at any moment by another thread's _exit, and a write of
 * the records alone would leave them after the last trailer, the trace
 * read as incomplete (t-life-exit-late-writer). */
void flush_now_with_trailer(unsigned reason)
{
	flush_with_trailer_at(reason, gmt_now_ns());
}

static void flush_with_trailer_at(unsigned reason, uint64_t end_ns)
{
	if (reason != GMT_END_EXEC) /* an exec may fail, and the trace go on */
		rt.w.devices_settle = 1;
	drain_rings();
	if (rt.child_lost_reported > rt.child_lost_noted) { /* says what the LOST count holds */
		char text[200];
		gmt_format(
		    text, sizeof text,
		    "%llu events of child processes made without fork handlers (_Fork, a raw "
		    "clone) are counted as lost: such children are not traced",
		    (unsigned long long)rt.child_lost_reported);
		gmt_writer_note(&rt.w, 1, text);
		rt.child_lost_noted = rt.child_lost_reported;
	}
	gmt_writer_trailer(&rt.w, reason, end_ns);
	if (gmt_writer_flush(&rt.w) < 0)
		set_state(ST_OFF);
}

/* A child made by _Fork() or a raw clone(SIGCHLD) ran no fork handler: it
 * has our state, the parent's rings and the parent's trace descriptor, but
 * no flush thread, so it must never wait for one, nor write the parent's
 * trace. Its events go nowhere, silently (its output must not change).
 * Asked only on slow paths (a full ring, a finished trace), never per
 * event: getpid() is a real syscall. The state is left as it is: a vfork
 * child (or a CLONE_VM one) shares it with its parent, which traces on. */
static __attribute__((noinline, cold)) int not_our_process(void)
{
	return getpid() != rt.pid;
}

static void *wait_for_space_(struct gmt_ring *r, size_t len)
{
	if (not_our_process())
		return NULL;
	uint64_t deadline = gmt_now_ns() + (uint64_t)rt.set.full_wait_ms * 1000000u;
	long nap = 20000;
	for (;;) {
		int st = load_state();
		if (st == ST_FINISHED) {
			/* No flush thread any more: drain the rings ourselves,
			 * with a trailer (an _exit may end us before ours). */
			pthread_mutex_lock(&rt.flush_lock);
			if (load_state() == ST_FINISHED)
				flush_now_with_trailer(GMT_END_EXIT);
			pthread_mutex_unlock(&rt.flush_lock);
			return gmt_ring_reserve(r, len);
		}
		/* An exec under way, its trailer written: nothing drains until it
		 * fails, and if it succeeds the event goes with the image.
		 * Counted, not waited for. */
		if (st != ST_ACTIVE || gmt_now_ns() >= deadline ||
		    (__atomic_load_n(&rt.writes_held, __ATOMIC_RELAXED) &&
		     __atomic_load_n(&rt.exec_hold, __ATOMIC_RELAXED)))
			return NULL;
		wake_flusher();
		struct timespec ts = {0, nap};
		nanosleep(&ts, NULL);
		nap = nap < 1000000 ? nap * 2 : nap;
		void *p = gmt_ring_reserve(r, len);
		if (p)
			return p;
	}
}

static void *wait_for_space(struct gmt_ring *r, size_t len)
{
	int cancel = gmt_nocancel_begin(); /* nanosleep, and write when FINISHED */
	void *p = wait_for_space_(r, len);
	gmt_nocancel_end(cancel);
	return p;
}

/* After the final trailer, whoever records writes (with a fresh trailer):
 * the events and LOST counts of late destructors still reach the file. */
static __attribute__((noinline, cold)) void flush_finished(void)
{
	if (not_our_process())
		return;
	int cancel = gmt_nocancel_begin();
	pthread_mutex_lock(&rt.flush_lock);
	if (load_state() == ST_FINISHED)
		flush_now_with_trailer(GMT_END_EXIT);
	pthread_mutex_unlock(&rt.flush_lock);
	gmt_nocancel_end(cancel);
}

/* Inline: on every event's path, where the answer is almost always no. */
static inline void flush_if_finished(void)
{
	/* Our commit (or lost count) must be visible before we read the state,
	 * and the finisher's state store before it drains: without a full
	 * barrier between the two on each side, each could miss the other's
	 * store and the event would sit in the ring forever. Pairs with
	 * fence_finished in gmt_finish and flusher_main. */
	fence_recorded();
	if (__builtin_expect(load_state() == ST_FINISHED, 0))
		flush_finished();
}

static unsigned capture_stack(uint64_t *ips, unsigned depth, uintptr_t hook_frame)
{
	/* Our own frames are trimmed: ips[0] is the program's call. */
	return gmt_stack_capture(ips, depth, rt.set.stack_cache, rt.self_lo, rt.self_hi,
				 hook_frame);
}

void gmt_record(enum gmt_api api, uint32_t result, int32_t device, uint64_t ptr, uint64_t size,
		uint64_t aux, uint64_t aux2, unsigned flags)
{
	int saved_errno = errno;
	uint64_t call_start = gmt_tls_call_start; /* a free's time: before its call */
	gmt_tls_call_start = 0;
	uintptr_t hook_frame = gmt_tls_hook_frame;
	gmt_tls_hook_frame = 0;
	gmt_enter();
	struct gmt_ring *r = tls_ring;
	if (load_state() == ST_OFF || untraced_child())
		goto out;
	if (!r && (!gmt_tracing() || !(r = ring_for_this_thread())))
		goto out;
	if (device == GMT_DEVICE_CURRENT)
		device = gmt_current_device();

	uint64_t ips[GMT_MAX_STACK_DEPTH + 16];
	unsigned nframes =
	    rt.set.stack_depth ? capture_stack(ips, (unsigned)rt.set.stack_depth, hook_frame) : 0;
	if (rt.set.stack_depth && rt.set.python)
		nframes = gmt_python_splice_if_present(ips, nframes, (unsigned)rt.set.stack_depth);
	size_t len = gmt_ring_align(sizeof(struct gmt_ring_hdr) + sizeof(struct gmt_raw_event) +
				    nframes * sizeof(uint64_t));
	struct gmt_ring_hdr *h = gmt_ring_reserve(r, len);
	if (!h)
		h = wait_for_space(r, len);
	if (!h) {
		/* Counted, and written as a LOST record by the flush thread. */
		__atomic_store_n(&r->lost, r->lost + 1, __ATOMIC_RELAXED);
		flush_if_finished();
		goto out;
	}
	h->len = (uint32_t)len;
	h->type = GMT_RING_EVENT;
	h->nframes = (uint16_t)nframes;
	struct gmt_raw_event *e = (void *)(h + 1);
	e->time_ns = call_start ? call_start : gmt_stamp_after();
	e->ptr = ptr;
	e->size = size;
	e->aux = aux;
	e->aux2 = aux2;
	e->result = result;
	e->device = device;
	e->api = (uint16_t)api;
	e->flags = (uint16_t)flags;
	if (nframes)
		memcpy(e + 1, ips, nframes * sizeof *ips);
	size_t used = gmt_ring_commit(r, len);

	flush_if_finished();
	ask_drain(r, used);
out:
	gmt_leave();
	errno = saved_errno;
}

void gmt_record_meminfo(enum gmt_api api, int32_t device, uint64_t free_bytes, uint64_t total_bytes)
{
	int saved_errno = errno;
	struct gmt_ring *r = tls_ring; /* the failed event just made it */
	size_t len = gmt_ring_align(sizeof(struct gmt_ring_hdr) + sizeof(struct gmt_raw_meminfo));
	struct gmt_ring_hdr *h;
	/* In an untraced child its event was counted: nothing more. */
	if (!r || load_state() == ST_OFF || !*rt.armed ||
	    !((h = gmt_ring_reserve(r, len)) || (h = wait_for_space(r, len))))
		goto out;
	h->len = (uint32_t)len;
	h->type = GMT_RING_MEMINFO;
	h->nframes = 0;
	struct gmt_raw_meminfo *m = (void *)(h + 1);
	m->time_ns = gmt_now_ns();
	m->free_bytes = free_bytes;
	m->total_bytes = total_bytes;
	m->device = device;
	m->api = (uint32_t)api;
	size_t used = gmt_ring_commit(r, len);
	fence_recorded();
	ask_drain(r, used);
out:
	errno = saved_errno;
}

/* ---- records other than events ------------------------------------------- */

/* Reserves a record of `body` bytes in the calling thread's ring (creating
 * the trace on the process's first record), or NULL: tracing off, or the
 * ring stayed full (then counted as lost). Caller has called gmt_enter. */
static struct gmt_ring_hdr *reserve_other(int type, size_t body, size_t *len_out)
{
	struct gmt_ring *r = tls_ring;
	if (load_state() == ST_OFF || untraced_child())
		return NULL;
	if (!r && (!gmt_tracing() || !(r = ring_for_this_thread())))
		return NULL;
	size_t len = gmt_ring_align(sizeof(struct gmt_ring_hdr) + body);
	struct gmt_ring_hdr *h = gmt_ring_reserve(r, len);
	if (!h)
		h = wait_for_space(r, len);
	if (!h) {
		__atomic_store_n(&r->lost, r->lost + 1, __ATOMIC_RELAXED);
		return NULL;
	}
	h->len = (uint32_t)len;
	h->type = (uint16_t)type;
	h->nframes = 0;
	*len_out = len;
	return h;
}

/* wake: 0 for an NVML sample, which waits for the idle flush thread's
 * next wake (at most a second: go_idle). */
static void commit_other(size_t len, int wake)
{
	size_t used = gmt_ring_commit(tls_ring, len);
	flush_if_finished();
	if (wake)
		ask_drain(tls_ring, used);
}

void gmt_record_range(enum gmt_range_op op, uint64_t id, enum gmt_range_source source,
		      const char *text)
{
	int saved_errno = errno;
	gmt_enter();
	size_t n = text ? strnlen(text, 1024) : 0, len;
	struct gmt_ring_hdr *h =
	    reserve_other(GMT_RING_RANGE, sizeof(struct gmt_raw_range) + n, &len);
	if (h) {
		h->nframes = (uint16_t)n;
		struct gmt_raw_range *rr = (void *)(h + 1);
		rr->time_ns = gmt_now_ns();
		rr->id = id;
		rr->op = (uint16_t)op;
		rr->source = (uint16_t)source;
		if (n) /* text may be NULL (POP, END) */
			memcpy(rr + 1, text, n);
		commit_other(len, 1);
	}
	gmt_leave();
	errno = saved_errno;
}

static uint8_t *put_text(uint8_t *p, const char *text)
{
	size_t n = text ? strnlen(text, 128) : 0;
	p = gmt_put_varint(p, n);
	if (n)
		memcpy(p, text, n);
	return p + n;
}

/* The body is encoded here, on the caller's thread: the flush thread only
 * copies it after the tag and tid. */
void gmt_record_counters(unsigned reason, const char *source, const char *device, int64_t ordinal,
			 size_t n, const char *const *names, const uint64_t *values)
{
	enum { TEXT_MAX = GMT_VARINT_MAX + 128 };
	uint8_t body[4 * GMT_VARINT_MAX + 2 * TEXT_MAX +
		     GMT_COUNTERS_MAX * (TEXT_MAX + GMT_VARINT_MAX)];
	int saved_errno = errno;
	if (n > GMT_COUNTERS_MAX)
		n = GMT_COUNTERS_MAX;
	uint8_t *p = gmt_put_varint(body, gmt_now_ns());
	p = gmt_put_varint(p, reason);
	p = put_text(p, source);
	p = put_text(p, device);
	p = gmt_put_varint(p, gmt_zigzag(ordinal));
	p = gmt_put_varint(p, names && values ? n : 0);
	for (size_t i = 0; names && values && i < n; i++) {
		p = put_text(p, names[i]);
		p = gmt_put_varint(p, values[i]);
	}
	size_t blen = (size_t)(p - body), len;
	gmt_enter();
	struct gmt_ring_hdr *h = reserve_other(GMT_RING_COUNTERS, blen, &len);
	if (h) {
		h->nframes = (uint16_t)blen;
		memcpy(h + 1, body, blen);
		commit_other(len, 1);
	}
	gmt_leave();
	errno = saved_errno;
}

void gmt_record_sample(const struct gmt_raw_sample *s)
{
	int saved_errno = errno;
	gmt_enter();
	size_t len;
	struct gmt_ring_hdr *h = reserve_other(GMT_RING_SAMPLE, sizeof *s, &len);
	if (h) {
		memcpy(h + 1, s, sizeof *s);
		commit_other(len, 0);
	}
	gmt_leave();
	errno = saved_errno;
}

void gmt_record_pyframe(uint64_t id, const char *function, const char *file, uint64_t line)
{
	int saved_errno = errno;
	gmt_enter();
	size_t fn = function ? strnlen(function, 1024) : 0, fl = file ? strnlen(file, 1024) : 0;
	size_t len;
	struct gmt_ring_hdr *h =
	    reserve_other(GMT_RING_PYFRAME, sizeof(struct gmt_raw_pyframe) + fn + fl, &len);
	if (h) {
		struct gmt_raw_pyframe *pf = (void *)(h + 1);
		pf->id = id;
		pf->line = line;
		pf->function_len = (uint32_t)fn;
		pf->file_len = (uint32_t)fl;
		if (fn)
			memcpy(pf + 1, function, fn);
		if (fl)
			memcpy((char *)(pf + 1) + fn, file, fl);
		commit_other(len, 1);
	}
	gmt_leave();
	errno = saved_errno;
}

int gmt_trace_started(void)
{
	int st = load_state();
	return st == ST_ACTIVE || st == ST_FINISHED;
}
