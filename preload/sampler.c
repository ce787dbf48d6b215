/* The sampling thread (gmt-sample). See sampler.h and docs/design.md. The
 * requests it answers, and the peak watch: preload/peakwatch.c. */
#include "preload/sampler.h"
#include "preload/nocancel.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "preload/nvml.h"
#include "preload/tracer.h"
#include "preload/sync.h"

enum {
	STOP_WAIT_MS = 2000, /* exit never waits longer for an NVML call */
	NVML_POLL_MS = 10,   /* while another thread loads NVML */
};

static struct {
	int sample_ms;
	int started; /* a thread was started in this process image */
	pthread_t thread;
	pid_t pid;
	int stop;
	uint32_t done; /* futex word: the thread is leaving */
	int read_failed_noted;
	uint32_t up; /* futex word: the thread runs our code (fork waits) */
	/* Held while the thread is in NVML or recording: fork takes it. */
	pthread_mutex_t work_lock;
	int fork_held;	     /* fork_prepare took work_lock */
	uint32_t fork_wants; /* futex word: a fork waits for work_lock */
	int tid;	     /* the thread's */
} smp = {.work_lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- sampling ---------------------------------------------------------- */

/* A waiting fork goes first. glibc's mutex is not fair: with samples back
 * to back (a slow NVML, a short period) and the forking thread slow to be
 * scheduled, the sampler took the lock back at every handoff until fork's
 * bound ran out, and the child inherited NVML's own lock held: its
 * sampler hung (t-life-fork-sampling, 4 in 12 runs beside two busy loops). */
static void take_work_lock(void)
{
	gmt_futex_wait_while(&smp.fork_wants, 1, STOP_WAIT_MS);
	pthread_mutex_lock(&smp.work_lock);
}

static void sample_all(enum gmt_sample_why why)
{
	take_work_lock();
	unsigned n = gmt_nvml_device_count();
	for (unsigned i = 0; i < n; i++) {
		struct gmt_nvml_reading rd;
		if (gmt_nvml_read(i, &rd) != 0) {
			if (!__atomic_exchange_n(&smp.read_failed_noted, 1, __ATOMIC_RELAXED)) {
				char text[120];
				gmt_format(text, sizeof text,
					   "NVML could not read device %u: samples of it are "
					   "missing",
					   i);
				gmt_note(1, text);
			}
			continue;
		}
		struct gmt_raw_sample sm = {
		    .time_ns = gmt_now_ns(),
		    .used_bytes = rd.used_bytes,
		    .total_bytes = rd.total_bytes,
		    .process_used_bytes = rd.process_used_bytes,
		    .nvml_index = i,
		    .flags = rd.process_known ? GMT_SAMPLE_PROCESS_KNOWN : 0,
		    .reason = (uint16_t)why,
		};
		memcpy(sm.uuid, rd.uuid, sizeof sm.uuid);
		gmt_record_sample(&sm);
	}
	pthread_mutex_unlock(&smp.work_lock);
}

static int nvml_ready(void)
{
	take_work_lock(); /* the first call loads NVML */
	int ready = gmt_nvml_ready();
	pthread_mutex_unlock(&smp.work_lock);
	return ready;
}

static void futex_wait_ms(uint32_t *word, uint32_t seen, uint64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, ms ? &ts : NULL, NULL, 0);
}

static int stopping(void)
{
	/* Pairs with the release store in gmt_sampler_stop. */
	return __atomic_load_n(&smp.stop, __ATOMIC_ACQUIRE);
}

static void *sampler_main(void *arg)
{
	gmt_enter(); /* nothing this thread does is the program's */
	smp.tid = (int)syscall(SYS_gettid);
	gmt_futex_set(&smp.up, 1);
	prctl(PR_SET_NAME, "gmt-sample", 0, 0, 0);
	/* The program's thread may be loading NVML (a context hook): wait. */
	while (!stopping() && !nvml_ready() && !gmt_nvml_settled())
		futex_wait_ms(&gmt_sample_asks.wake,
			      __atomic_load_n(&gmt_sample_asks.wake, __ATOMIC_ACQUIRE),
			      NVML_POLL_MS);
	if (!nvml_ready())
		__atomic_store_n(&gmt_sample_asks.idle, 1, __ATOMIC_RELAXED); /* a hint for pokes */
	if (!stopping() && nvml_ready()) {
		sample_all(GMT_SAMPLE_WHY_START);
		uint64_t period = (uint64_t)smp.sample_ms * 1000000u;
		uint64_t next = gmt_now_ns() + period;
		while (!stopping()) {
			/* Read before the requests: a poke after this wakes the wait. */
			uint32_t seen = __atomic_load_n(&gmt_sample_asks.wake, __ATOMIC_ACQUIRE);
			/* Pairs with the release OR in gmt_sampler_poke. */
			uint32_t want =
			    __atomic_exchange_n(&gmt_sample_asks.pending, 0, __ATOMIC_ACQUIRE);
			if (want & (1u << GMT_SAMPLE_WHY_OOM))
				sample_all(GMT_SAMPLE_WHY_OOM);
			if (want & (1u << GMT_SAMPLE_WHY_PEAK))
				sample_all(GMT_SAMPLE_WHY_PEAK);
			uint64_t wait_ms = 0; /* 0: until poked */
			if (period) {
				uint64_t now = gmt_now_ns();
				if (now >= next) {
					sample_all(GMT_SAMPLE_WHY_PERIODIC);
					next += period;
					if (next <= now) /* a stall: no burst to catch up */
						next = now + period;
					continue;
				}
				wait_ms = (next - now + 999999) / 1000000;
			}
			if (!want)
				futex_wait_ms(&gmt_sample_asks.wake, seen, wait_ms);
		}
	}
	gmt_futex_set(&smp.done, 1); /* gmt_sampler_stop waits for this */
	return NULL;
}

static void at_exit_sample(void)
{
	/* On the program's thread: a join and NVML's reads are no place for
	 * its pending cancellation to act. */
	int cancel = gmt_nocancel_begin();
	gmt_sampler_stop(1);
	gmt_nocancel_end(cancel);
}

void gmt_sampler_start(int sample_ms)
{
	if (smp.started && smp.pid == getpid())
		return;
	smp.started = 1;
	smp.pid = getpid();
	smp.sample_ms = sample_ms;
	static int at_exit_registered; /* atexit entries survive fork */
	/* atexit handlers registered from main on run before any library's
	 * destructor (one registered in a constructor runs after them all, and
	 * then our destructor has stopped us without an END sample), so the END
	 * sample is taken while libnvidia-ml is still whole. */
	if (!at_exit_registered)
		at_exit_registered = atexit(at_exit_sample) == 0;
	/* NVML's calls: its own stack needs are not documented; 1 MiB is
	 * eight times what glibc's smallest default would give. */
	enum { SAMPLER_STACK = 1 << 20 };
	smp.up = 0;
	int rc = gmt_thread_start(&smp.thread, SAMPLER_STACK, sampler_main, NULL);
	if (rc != 0) {
		gmt_note(1, "cannot start the NVML sampling thread: device memory not sampled");
		return;
	}
	/* Relaxed: read by gmt_sampler_poke as a hint; a lost poke costs one
	 * sample, and the thread exists before anyone can see running set. */
	__atomic_store_n(&gmt_sample_asks.running, 1, __ATOMIC_RELAXED);
}

void gmt_sampler_stop(int take_end)
{
	if (!__atomic_load_n(&gmt_sample_asks.running, __ATOMIC_RELAXED) || smp.pid != getpid() ||
	    pthread_equal(pthread_self(), smp.thread))
		return;
	/* Once: racing exits may stop us from two threads, and the thread is
	 * joined once. */
	if (!__atomic_exchange_n(&gmt_sample_asks.running, 0, __ATOMIC_RELAXED))
		return;
	/* Pairs with the acquire load in stopping(). */
	__atomic_store_n(&smp.stop, 1, __ATOMIC_RELEASE);
	gmt_sampler_wake();
	/* Not for long while it waits for the loader: inside NVML it may wait for the
	 * loader's lock (the simulated NVML's dlclose does), which the
	 * thread that exits may hold (a handler inside dl_iterate_phdr). */
	enum { STOP_LOADER_MS = 10 };
	gmt_futex_wait_while(&smp.up, 0, GMT_THREAD_UP_WAIT_MS); /* its tid is known */
	if (!gmt_futex_wait_thread(&smp.done, 0, smp.tid, STOP_LOADER_MS, STOP_WAIT_MS)) {
		/* Stuck in NVML: leave it; the process ends it. No END sample,
		 * which would ask the same NVML. */
		gmt_note(1, "the NVML sampling thread did not stop in time: no END sample");
		return;
	}
	/* Out of our code: its end (glibc frees the thread's own buffers) is
	 * not waited for, as a join would: at exit, a thread a signal
	 * interrupted inside malloc holds that lock for good, and the join
	 * waited for ever (t-life-exit-malloc). */
	pthread_detach(smp.thread);
	if (take_end && gmt_trace_started())
		sample_all(GMT_SAMPLE_WHY_END);
}

void gmt_sampler_fork_prepare(void)
{
	if (!__atomic_load_n(&gmt_sample_asks.running, __ATOMIC_RELAXED) || smp.pid != getpid() ||
	    pthread_equal(pthread_self(), smp.thread))
		return;
	gmt_futex_wait_while(&smp.up, 0, GMT_THREAD_UP_WAIT_MS);
	gmt_futex_set(&smp.fork_wants, 1); /* read by take_work_lock */
	/* Bounded: an NVML call that hangs must not hang the program's fork. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STOP_WAIT_MS / 1000;
	smp.fork_held = pthread_mutex_timedlock(&smp.work_lock, &until) == 0;
}

void gmt_sampler_fork_parent(void)
{
	if (smp.fork_held) {
		smp.fork_held = 0;
		pthread_mutex_unlock(&smp.work_lock);
	}
	if (__atomic_load_n(&smp.fork_wants, __ATOMIC_RELAXED))
		gmt_futex_set(&smp.fork_wants, 0);
}

void gmt_sampler_fork_child(void)
{
	gmt_sampler_fork_parent(); /* the forking thread took it: ours to drop */
	/* The parent's thread is not ours, nor its allocations. */
	gmt_peakwatch_fork_child();
	smp.started = 0;
	gmt_sample_asks.running = 0;
	smp.stop = 0;
	smp.done = 0;
	gmt_sample_asks.pending = 0;
	gmt_sample_asks.idle = 0;
}
