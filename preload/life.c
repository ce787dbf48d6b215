/* The end of the process (exit, _exit, exec, the library's unloading) and
 * fork, for the core (preload/runtime.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "preload/nocancel.h"
#include "preload/runtime.h"
#include "preload/sampler.h"
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

/* Symbolizing a large program takes seconds. Past this, the exiting thread
 * goes on: the trace is complete (the first of the final writes), its
 * unnamed frames are named by the CLI. */
enum { FINAL_WAIT_MS = 10000, SYMBOLS_WRITE_WAIT_MS = 2000 };

/* Asks the flush thread for the final flush and waits, bounded. Only
 * syscalls here: the caller may be a signal handler that interrupted
 * malloc, and anything that locks (malloc, libdw, the loader) would wait
 * for itself. The flush thread may need that very lock too; then the
 * trace ends at its last write, readable, and the program still ends. */
static void ask_final_flush(enum gmt_end_reason reason)
{
	uint32_t done = __atomic_load_n(&rt.final_done, __ATOMIC_ACQUIRE);
	/* Pairs with the acquire exchange in flusher_main; also publishes an
	 * exec's hold to the flush thread before it writes the trailer. */
	__atomic_store_n(&rt.final_req, (uint32_t)reason + 1, __ATOMIC_RELEASE);
	wake_flusher();
	if (gmt_futex_wait_while(&rt.final_done, done, FINAL_WAIT_MS) != done)
		return;
	/* Not in time: forbid the names' write, or let one under way end (a
	 * chunk cut short by our exit would read as damaged). */
	uint32_t open = GATE_OPEN;
	if (!__atomic_compare_exchange_n(&rt.symbols_gate, &open, GATE_CLOSED, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) &&
	    open == GATE_WRITING)
		gmt_futex_wait_while(&rt.symbols_gate, GATE_WRITING, SYMBOLS_WRITE_WAIT_MS);
}

void gmt_finish(enum gmt_end_reason reason)
{
	int saved_errno = errno, cancel = gmt_nocancel_begin(); /* waits, writes */
	gmt_enter();
	/* A vfork child shares our memory but is not us: leave the trace be. */
	int st = load_state();
	if ((st != ST_ACTIVE && st != ST_FINISHED) || getpid() != rt.pid)
		goto out;
	/* Once. Another thread finishing waits for the trailer (bounded),
	 * which its exit must not cut short. */
	uint32_t idle = 0;
	if (!__atomic_compare_exchange_n(&rt.finishing, &idle, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		gmt_futex_wait_while(&rt.finishing, 1, FINAL_WAIT_MS + SYMBOLS_WRITE_WAIT_MS);
		goto out;
	}
	if (load_state() != ST_ACTIVE)
		goto done;
	gmt_sampler_stop(0); /* normally done by its atexit handler, with END */
	if (rt.set.stack_cache == GMT_STACK_CACHE_VERIFY)
		note_stack_cache_verify();
	/* The work (draining, symbolizing, writing) runs on the flush thread,
	 * never here: this thread may have been interrupted holding a lock
	 * (a SIGTERM handler calling exit() inside malloc). */
	if (rt.flusher_running && !pthread_equal(pthread_self(), rt.flusher)) {
		ask_final_flush(reason);
		goto done;
	}
	pthread_mutex_lock(&rt.flush_lock); /* no flush thread: records, trailer, no names */
	if (load_state() == ST_ACTIVE) {
		set_state(ST_FINISHED);
		fence_finished(); /* pairs with flush_if_finished */
		flush_now_with_trailer(reason);
	}
	pthread_mutex_unlock(&rt.flush_lock);
done:
	gmt_futex_set(&rt.finishing, 2); /* pairs with the wait above */
out:
	gmt_leave();
	gmt_nocancel_end(cancel);
	errno = saved_errno;
}

void gmt_exit_called(void)
{
	enum { FIRST_EXIT_WAIT_MS = 1000 };
	int st = load_state();
	if ((st != ST_ACTIVE && st != ST_FINISHED) || getpid() != rt.pid)
		return; /* no trace under way: nothing of ours to protect */
	int saved_errno = errno, cancel = gmt_nocancel_begin();
	uint32_t me = (uint32_t)syscall(SYS_gettid), first = 0;
	if (!__atomic_compare_exchange_n(&rt.exit_tid, &first, me, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) &&
	    first != me) {
		/* Another thread's exit is under way (undefined behaviour in C,
		 * yet seen): its handlers, then our destructor, finish the trace,
		 * and this thread's exit, finding no handler left, would end the
		 * process in the middle. Let the first exit end it; if it has
		 * not in time (its handlers are slow, or wait for this thread),
		 * finish the trace here, once, and go on exiting. */
		gmt_futex_wait_while(&rt.exit_tid, first, FIRST_EXIT_WAIT_MS);
		gmt_finish(GMT_END_EXIT);
	} else if (__atomic_load_n(&rt.finishing, __ATOMIC_ACQUIRE)) {
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
	if (load_state() != ST_ACTIVE || getpid() != rt.pid || !rt.flusher_running)
		goto out;
	if (reason == GMT_END_EXEC) { /* raised before the trailer is asked for */
		__atomic_add_fetch(&rt.exec_hold, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&rt.exec_raises, 1, __ATOMIC_RELAXED);
		tls_exec_holds++;
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
	if (!tls_exec_holds || getpid() != rt.pid)
		return;
	int saved_errno = errno;
	tls_exec_holds--;
	if (__atomic_sub_fetch(&rt.exec_hold, 1, __ATOMIC_RELAXED) == 0)
		wake_flusher(); /* what was recorded meanwhile, then a trailer at exit */
	errno = saved_errno;
}

__attribute__((destructor)) static void at_unload(void)
{
	gmt_finish(GMT_END_EXIT);
}

/* ---- fork -------------------------------------------------------------------- */

/* A child made by _Fork() or a raw clone(SIGCHLD) runs no fork handler: it
 * has no flush thread, and tracing it would need malloc and locks that a
 * thread of the parent may have held at the fork (it hung under ASan). So
 * it records nothing and counts each event in a page shared with the
 * process that set the page up, which writes the count as lost. The kernel
 * tells such a child: it zeroes the MADV_WIPEONFORK page in any child, and
 * fork_child sets it again. Only syscalls here, no malloc, no lock. */
const uint32_t gmt_armed_always = 1; /* rt.armed before setup, or without MADV_WIPEONFORK */
static uint32_t *armed_page;

static void map_child_lost(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	if (rt.child_lost)
		munmap(rt.child_lost, (size_t)pg); /* the parent's: ours counts our own children */
	void *c = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rt.child_lost = c == MAP_FAILED ? NULL : c;
	rt.child_lost_reported = 0;
}

void gmt_children_setup(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *a =
	    mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a != MAP_FAILED && madvise(a, (size_t)pg, MADV_WIPEONFORK) == 0) {
		armed_page = a;
		*armed_page = 1;
		rt.armed = armed_page;
	} else if (a != MAP_FAILED) { /* before Linux 4.14: the slow paths' getpid only */
		munmap(a, (size_t)pg);
	}
	map_child_lost();
}

/* The armed page reads 0: this process was made without our handler. */
int gmt_untraced_child_event(void)
{
	if (rt.child_lost)
		__atomic_add_fetch(rt.child_lost, 1, __ATOMIC_RELAXED);
	return 1;
}

void fork_prepare(void)
{
	/* None of our threads is in an allocator or in NVML at the fork: the
	 * child would inherit their locks held and hang in its first malloc
	 * (seen with ASan when a fork followed the first CUDA call at once). */
	if (rt.flusher_running && rt.pid == getpid())
		gmt_futex_wait_while(&rt.flusher_up, 0, GMT_THREAD_UP_WAIT_MS);
	gmt_sampler_fork_prepare(); /* before ours: a sample takes setup_lock */
	/* The child gets the writer and ring list at a consistent point. */
	pthread_mutex_lock(&rt.flush_lock);
	pthread_mutex_lock(&rt.setup_lock);
	pthread_mutex_lock(&rt.notes_lock);
}

void fork_parent(void)
{
	pthread_mutex_unlock(&rt.notes_lock);
	pthread_mutex_unlock(&rt.setup_lock);
	pthread_mutex_unlock(&rt.flush_lock);
	gmt_sampler_fork_parent();
}

void fork_child(void)
{
	/* The child traces itself into a file of its own, made at its first
	 * event; what the rings hold is the parent's, and the parent writes it. */
	if (armed_page)
		*armed_page = 1; /* the kernel wiped it: this child is traced */
	map_child_lost();
	for (struct gmt_ring *r = rt.rings, *next; r; r = next) {
		next = r->next;
		gmt_ring_free(r);
	}
	rt.rings = NULL;
	tls_ring = NULL;
	pthread_setspecific(rt.key, NULL);
	gmt_writer_abandon(&rt.w);
	gmt_early_facts_free(
	    rt_early.facts); /* the parent's; the child asks at its own first event */
	rt_early.facts = NULL;
	pthread_mutex_init(&rt_early.lock, NULL);
	rt.flusher_running = 0;
	rt.stop = 0;
	rt.exec_hold = 0;
	rt.writes_held = 0;
	rt.exit_tid = 0;
	rt.finishing = 0;
	tls_exec_holds = 0;
	rt.notes_written = 0; /* the child's trace repeats what its parent learnt */
	rt.pid = getpid();
	rt.start_mono = gmt_now_ns();
	asym_fence_setup(); /* one thread now: safe to change modes */
	gmt_sampler_fork_child();
	if (rt.set.pid_only && rt.set.pid_only != rt.pid)
		set_state(ST_OFF);
	else if (rt.state == ST_ACTIVE || rt.state == ST_FINISHED)
		set_state(ST_IDLE);
	pthread_mutex_unlock(&rt.notes_lock);
	pthread_mutex_unlock(&rt.setup_lock);
	pthread_mutex_unlock(&rt.flush_lock);
}
