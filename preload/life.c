/* The end of the process (exit, _exit, exec, the library's unloading) and
 * fork (preload/life.h; the hooks call the end through preload/tracer.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "preload/clock.h"
#include "preload/nocancel.h"
#include "preload/flush.h"
#include "preload/life.h"
#include "preload/notes.h"
#include "preload/state.h"
#include "preload/sync.h"
#include "preload/sampler.h"
#include "preload/scanner.h"
#include "preload/stackcache.h"

/* ---- the end ------------------------------------------------------------ */

static void note_stack_cache_verify(void)
{
	uint64_t hits, misses, bad;
	gmt_stack_cache_stats(&hits, &misses, &bad);
	char text[160];
	gmt_format(text, sizeof text,
		   "stack cache verify: %llu hits, %llu misses, %llu differ from unw_backtrace",
		   (unsigned long long)hits, (unsigned long long)misses, (unsigned long long)bad);
	gmt_note(bad ? 1 : 0, text);
}

/* The final flush is records and a trailer, one write: milliseconds. Past
 * this, the exiting thread goes on: the trace ends at the flush thread's
 * last write, readable. */
enum { FINAL_WAIT_MS = 10000 };

/* Waits for final_done to move from done: FINAL_WAIT_MS at most, and no
 * longer once the trace's write has been stuck GPUMEMTRACE_FULL_WAIT_MS (a
 * frozen file system: the trace ends at its last write), or 100 ms where
 * that is less (0: a final write under way is not a stuck one). Returns
 * its value. */
static uint32_t wait_final_done(uint32_t done)
{
	uint64_t stall_ns = (uint64_t)gmt_stall_ms(gmt_rt.set.full_wait_ms) * 1000000u;
	uint32_t now = done;
	for (unsigned slice = 0; slice < FINAL_WAIT_MS / 20 && now == done; slice++) {
		now = gmt_futex_wait_while(&gmt_rt.final_done, done, 20);
		uint64_t stuck = gmt_writer_stuck_ns(&gmt_rt.w, gmt_now_ns());
		if (now == done && stuck && stuck >= stall_ns)
			break;
	}
	return now;
}

/* Asks the flush thread for the final flush and waits, bounded. Only
 * syscalls here: the caller may be a signal handler that interrupted
 * malloc, and anything that locks (malloc, the loader) would wait
 * for itself. The flush thread may need that very lock too; then the
 * trace ends at its last write, readable, and the program still ends. */
static void ask_final_flush(enum gmt_end_reason reason)
{
	uint32_t done = __atomic_load_n(&gmt_rt.final_done, __ATOMIC_ACQUIRE);
	/* Pairs with the acquire exchange in flusher_main; also publishes an
	 * exec's hold to the flush thread before it writes the trailer. */
	__atomic_store_n(&gmt_rt.final_req, (uint32_t)reason + 1, __ATOMIC_RELEASE);
	gmt_flush_wake();
	wait_final_done(done);
}

/* Flushes everything and writes a trailer, through the flush thread (on
 * the calling thread when there is none). Runs once; a second caller
 * waits (bounded) until the first is done. */
static void gmt_finish(enum gmt_end_reason reason)
{
	int saved_errno = errno, cancel = gmt_nocancel_begin(); /* waits, writes */
	gmt_enter();
	/* A vfork child shares our memory but is not us: leave the trace be. */
	int st = load_state();
	if ((st != ST_ACTIVE && st != ST_FINISHED) || getpid() != gmt_rt.pid)
		goto out;
	/* Once. Another thread finishing waits for the trailer (bounded),
	 * which its exit must not cut short. */
	uint32_t idle = 0;
	if (!__atomic_compare_exchange_n(&gmt_rt.finishing, &idle, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		gmt_futex_wait_while(&gmt_rt.finishing, 1, FINAL_WAIT_MS);
		goto out;
	}
	if (load_state() != ST_ACTIVE)
		goto done;
	gmt_sampler_stop(0); /* normally done by its atexit handler, with END */
	if (gmt_rt.set.stack_cache == GMT_STACK_CACHE_VERIFY)
		note_stack_cache_verify();
	/* The work (draining, symbolizing, writing) runs on the flush thread,
	 * never here: this thread may have been interrupted holding a lock
	 * (a SIGTERM handler calling exit() inside malloc). */
	if (gmt_rt.flusher_running && !pthread_equal(pthread_self(), gmt_rt.flusher)) {
		ask_final_flush(reason);
		goto done;
	}
	pthread_mutex_lock(&gmt_rt.flush_lock); /* no flush thread: records, trailer, no names */
	if (load_state() == ST_ACTIVE) {
		set_state(ST_FINISHED);
		gmt_fence_finished(); /* pairs with flush_if_finished */
		gmt_flush_now_with_trailer(reason);
	}
	pthread_mutex_unlock(&gmt_rt.flush_lock);
done:
	gmt_futex_set(&gmt_rt.finishing, 2); /* pairs with the wait above */
out:
	gmt_leave();
	gmt_nocancel_end(cancel);
	errno = saved_errno;
}

void gmt_exit_called(void)
{
	enum { FIRST_EXIT_WAIT_MS = 1000 };
	int st = load_state();
	if ((st != ST_ACTIVE && st != ST_FINISHED) || getpid() != gmt_rt.pid)
		return; /* no trace under way: nothing of ours to protect */
	int saved_errno = errno, cancel = gmt_nocancel_begin();
	/* The end's module scan, begun now: it runs while the program's exit
	 * handlers do, and the final flush waits less for it. */
	uint32_t none = 0, ask = gmt_scanner_scan_ask();
	__atomic_compare_exchange_n(&gmt_rt.end_scan, &none, ask, 0, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
	uint32_t me = (uint32_t)syscall(SYS_gettid), first = 0;
	if (!__atomic_compare_exchange_n(&gmt_rt.exit_tid, &first, me, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) &&
	    first != me) {
		/* Another thread's exit is under way (undefined behaviour in C,
		 * yet seen): its handlers, then our destructor, finish the trace,
		 * and this thread's exit, finding no handler left, would end the
		 * process in the middle. Let the first exit end it; if it has
		 * not in time (its handlers are slow, or wait for this thread),
		 * finish the trace here, once, and go on exiting. */
		gmt_futex_wait_while(&gmt_rt.exit_tid, first, FIRST_EXIT_WAIT_MS);
		gmt_finish(GMT_END_EXIT);
	} else if (__atomic_load_n(&gmt_rt.finishing, __ATOMIC_ACQUIRE)) {
		/* The first exit through this hook, yet not the process's: main
		 * returned (libc's own exit) and is in our destructor. Wait for
		 * its trailer. */
		gmt_finish(GMT_END_EXIT);
	}
	gmt_nocancel_end(cancel);
	errno = saved_errno;
}

void gmt_finish_async(enum gmt_end_reason reason)
{
	int saved_errno = errno;
	gmt_enter();
	if (load_state() != ST_ACTIVE || getpid() != gmt_rt.pid || !gmt_rt.flusher_running)
		goto out;
	if (reason == GMT_END_EXEC) { /* raised before the trailer is asked for */
		__atomic_add_fetch(&gmt_rt.exec_hold, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&gmt_rt.exec_raises, 1, __ATOMIC_RELAXED);
		gmt_tls_exec_holds++;
	}
	ask_final_flush(reason);
out:
	gmt_leave();
	errno = saved_errno;
}

void gmt_exec_returned(void)
{
	/* Only execs that raised a hold lower one; a vfork child shares its
	 * parent thread's TLS, hence the pid too. */
	if (!gmt_tls_exec_holds || getpid() != gmt_rt.pid)
		return;
	int saved_errno = errno;
	gmt_tls_exec_holds--;
	if (__atomic_sub_fetch(&gmt_rt.exec_hold, 1, __ATOMIC_RELAXED) == 0)
		gmt_flush_wake(); /* what was recorded meanwhile, then a trailer at exit */
	errno = saved_errno;
}

__attribute__((destructor)) static void at_unload(void)
{
	gmt_finish(GMT_END_EXIT);
}

/* ---- the exit status ------------------------------------------------------- */

void gmt_exit_status(unsigned how, int status)
{
	int st = load_state();
	if ((st != ST_ACTIVE && st != ST_FINISHED) || getpid() != gmt_rt.pid)
		return; /* no trace of ours, or a vfork child sharing our memory */
	__atomic_store_n(&gmt_rt.exit_status, status, __ATOMIC_RELAXED);
	__atomic_store_n(&gmt_rt.exit_ns, gmt_now_ns(), __ATOMIC_RELAXED);
	/* Pairs with the acquire load in flush.c (the EXIT record). */
	__atomic_store_n(&gmt_rt.exit_how, how + 1, __ATOMIC_RELEASE);
}

/* main's return reaches libc's exit, not our hook: an on_exit handler
 * hears its status. */
static void status_at_exit(int status, void *arg)
{
	(void)arg;
	gmt_exit_status(GMT_EXIT_EXIT, status);
}

void gmt_exit_watch(void)
{
	static uint32_t registered;
	/* Registered once the trace exists, from main on: a handler
	 * registered before __libc_start_main registers the loader's
	 * destructors (ours, from our constructor) would run after them, past
	 * the final flush. Inherited by children: once per image. */
	if (!__atomic_exchange_n(&registered, 1, __ATOMIC_ACQ_REL))
		on_exit(status_at_exit, NULL);
}

/* ---- fork -------------------------------------------------------------------- */

/* A child made by _Fork() or a raw clone(SIGCHLD) runs no fork handler: it
 * has no flush thread, and tracing it would need malloc and locks that a
 * thread of the parent may have held at the fork (it hung under ASan). So
 * it records nothing and counts each event in a page shared with the
 * process that set the page up, which writes the count as lost. The kernel
 * tells such a child: it zeroes the MADV_WIPEONFORK page in any child, and
 * gmt_fork_child sets it again. Only syscalls here, no malloc, no lock. */
static uint32_t *armed_page;

static void map_child_lost(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	if (gmt_rt.child_lost)
		munmap(gmt_rt.child_lost,
		       (size_t)pg); /* the parent's: ours counts our own children */
	void *c = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	gmt_rt.child_lost = c == MAP_FAILED ? NULL : c;
	gmt_rt.child_lost_reported = 0;
}

void gmt_children_setup(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *a =
	    mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a != MAP_FAILED && madvise(a, (size_t)pg, MADV_WIPEONFORK) == 0) {
		armed_page = a;
		*armed_page = 1;
		gmt_rt.armed = armed_page;
	} else if (a != MAP_FAILED) { /* before Linux 4.14: the slow paths' getpid only */
		munmap(a, (size_t)pg);
	}
	map_child_lost();
}

/* The armed page reads 0: this process was made without our handler. */
int gmt_untraced_child_event(void)
{
	if (gmt_rt.child_lost)
		__atomic_add_fetch(gmt_rt.child_lost, 1, __ATOMIC_RELAXED);
	return 1;
}

/* flush_lock, setup_lock and io_gate for a fork. fork never waits on our
 * I/O: while a write of the trace is under way (a frozen file system can
 * hold it for minutes) the writer holds flush_lock, so the fork goes on
 * without it, io_gate held: the writer, back from its write, waits there
 * and touches nothing (writer.c); the child, which abandons the writer,
 * makes flush_lock anew. Returns whether flush_lock was taken. */
static int lock_flush_unless_stuck(void)
{
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 1000000; /* 1 ms slices: a cycle's work is short */
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		int held = pthread_mutex_timedlock(&gmt_rt.flush_lock, &until) == 0;
		pthread_mutex_lock(&gmt_rt.setup_lock);
		pthread_mutex_lock(&gmt_rt.io_gate);
		/* Without flush_lock only while the write is still under way:
		 * with io_gate held, its writer cannot get past it. */
		if (held || gmt_writer_stuck_ns(&gmt_rt.w, gmt_now_ns()))
			return held;
		pthread_mutex_unlock(&gmt_rt.io_gate);
		pthread_mutex_unlock(&gmt_rt.setup_lock);
	}
}

void gmt_fork_prepare(void)
{
	/* None of our threads is in an allocator or in NVML at the fork: the
	 * child would inherit their locks held and hang in its first malloc
	 * (seen with ASan when a fork followed the first CUDA call at once). */
	if (gmt_rt.flusher_running && gmt_rt.pid == getpid())
		gmt_futex_wait_while(&gmt_rt.flusher_up, 0, GMT_THREAD_UP_WAIT_MS);
	gmt_scanner_fork_prepare();
	gmt_sampler_fork_prepare(); /* before ours: a sample takes setup_lock */
	/* The child gets the writer and ring list at a consistent point. */
	gmt_rt.fork_flush_held = lock_flush_unless_stuck();
	gmt_notes_fork_prepare();
}

void gmt_fork_parent(void)
{
	gmt_notes_fork_parent();
	pthread_mutex_unlock(&gmt_rt.io_gate);
	pthread_mutex_unlock(&gmt_rt.setup_lock);
	if (gmt_rt.fork_flush_held)
		pthread_mutex_unlock(&gmt_rt.flush_lock);
	gmt_sampler_fork_parent();
}

void gmt_fork_child(void)
{
	/* The child traces itself into a file of its own, made at its first
	 * event; what the rings hold is the parent's, and the parent writes it. */
	if (armed_page)
		*armed_page = 1; /* the kernel wiped it: this child is traced */
	map_child_lost();
	for (struct gmt_ring *r = gmt_rt.rings, *next; r; r = next) {
		next = r->next;
		gmt_ring_free(r);
	}
	gmt_rt.rings = NULL;
	gmt_tls_ring = NULL;
	pthread_setspecific(gmt_rt.key, NULL);
	gmt_writer_abandon(&gmt_rt.w);
	/* the parent's; the child asks at its own first event */
	gmt_device_facts_free(gmt_rt_early.facts);
	gmt_rt_early.facts = NULL;
	pthread_mutex_init(&gmt_rt_early.lock, NULL);
	gmt_rt.flusher_running = 0;
	gmt_rt.exec_hold = 0;
	gmt_rt.writes_held = 0;
	gmt_rt.exit_tid = 0;
	gmt_rt.end_scan = 0;
	gmt_rt.finishing = 0;
	gmt_tls_exec_holds = 0;
	gmt_rt.pid = getpid();
	gmt_rt.start_mono = gmt_now_ns();
	gmt_fence_setup(); /* one thread now: safe to change modes */
	gmt_sampler_fork_child();
	gmt_scanner_fork_child();
	if (gmt_rt.set.pid_only && gmt_rt.set.pid_only != gmt_rt.pid)
		set_state(ST_OFF);
	else if (gmt_rt.state == ST_ACTIVE || gmt_rt.state == ST_FINISHED)
		set_state(ST_IDLE);
	gmt_notes_fork_child(); /* the child's trace repeats what its parent learnt */
	gmt_rt.stall_lost = gmt_rt.stall_noted = 0;
	gmt_rt.stall_said = 0;
	pthread_mutex_unlock(&gmt_rt.io_gate);
	pthread_mutex_unlock(&gmt_rt.setup_lock);
	if (gmt_rt.fork_flush_held)
		pthread_mutex_unlock(&gmt_rt.flush_lock);
	else /* held by the parent's writer, stuck in its write: not here */
		pthread_mutex_init(&gmt_rt.flush_lock, NULL);
}
