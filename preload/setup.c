/* Start-up: the settings, read once (at load, or at the first hook call if
 * that comes first), and a thread's first event, which makes its ring and,
 * for the process's first event, the trace file and the flush thread
 * (preload/setup.h).
 *
 * Where our work on a program's thread may open, write, sleep or join, it
 * runs with cancellation disabled (preload/nocancel.h). */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "preload/clock.h"
#include "preload/device.h"
#include "preload/flush.h"
#include "preload/life.h"
#include "preload/nocancel.h"
#include "preload/ring.h"
#include "preload/sampler.h"
#include "preload/scanner.h"
#include "preload/settings.h"
#include "preload/setup.h"
#include "preload/stackcache.h"
#include "preload/state.h"
#include "preload/sync.h"
#include "preload/writer.h"

static void thread_gone(void *ring);

/* ---- configuration ---------------------------------------------------- */

/* Our own code (trimmed from stacks), and the loader's image (its locks
 * live there: sync.c tells a thread of ours that waits for one). */
static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t me = (uintptr_t)&find_self, loader = (uintptr_t)&_r_debug;
	uintptr_t lo_all = UINTPTR_MAX, hi_all = 0;
	int has_loader = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (ph->p_type != PT_LOAD)
			continue;
		if (me >= lo && me < hi) {
			gmt_rt.self_lo = lo;
			gmt_rt.self_hi = hi;
		}
		has_loader |= loader >= lo && loader < hi;
		lo_all = lo < lo_all ? lo : lo_all;
		hi_all = hi > hi_all ? hi : hi_all;
	}
	if (has_loader) {
		gmt_rt.loader_lo = lo_all;
		gmt_rt.loader_hi = hi_all;
	}
	return 0;
}

static void configure_locked(void)
{
	if (gmt_rt.state != ST_UNCONFIGURED)
		return;
	if (getauxval(AT_SECURE)) {
		/* setuid and friends: do nothing at all, not even read settings. */
		set_state(ST_OFF);
		return;
	}
	gmt_log_bind(); /* our lines go to this stderr, or nowhere */
	gmt_settings_load(&gmt_rt.set);
	/* `gpumemtrace run --no-follow`: descendants inherit LD_PRELOAD but stay inert. */
	if (gmt_rt.set.disabled || (gmt_rt.set.pid_only && gmt_rt.set.pid_only != getpid())) {
		set_state(ST_OFF);
		return;
	}
	size_t cap = 4096;
	while (cap < gmt_rt.set.ring_bytes)
		cap <<= 1;
	gmt_rt.ring_cap = cap;
	gmt_rt.pid = getpid();
	gmt_clock_init(gmt_rt.set.clock);
	gmt_rt.start_mono = gmt_now_ns();
	gmt_rt.w.fd = -1;
	gmt_fence_setup();
	gmt_children_setup();
	dl_iterate_phdr(find_self, NULL);
	gmt_fd_table_reserve(); /* while we are the only thread, usually */
	if (pthread_key_create(&gmt_rt.key, thread_gone) != 0 ||
	    pthread_atfork(gmt_fork_prepare, gmt_fork_parent, gmt_fork_child) != 0) {
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
		pthread_mutex_lock(&gmt_rt.setup_lock);
		configure_locked();
		pthread_mutex_unlock(&gmt_rt.setup_lock);
		st = load_state();
	}
	return st != ST_OFF;
}

__attribute__((constructor)) static void at_load(void)
{
	gmt_tracing();
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

static void learn_devices_early(void)
{
	struct gmt_device_facts *f = gmt_device_facts_new();
	if (!f)
		return;
	gmt_device_facts_query(f, NULL);
	pthread_mutex_lock(&gmt_rt_early.lock);
	gmt_device_facts_free(gmt_rt_early.facts);
	gmt_rt_early.facts = f;
	pthread_mutex_unlock(&gmt_rt_early.lock);
}

/* Creates the trace file (its header, the module scan, /proc reads: some
 * 20 KB of stack) and lists it for `run`. Returns 0, or -1 with the
 * reason logged. Caller holds setup_lock. */
static int create_trace(void)
{
	gmt_rt.w.omit_argv = !gmt_rt.set.record_argv;
	gmt_rt.w.io_gate = &gmt_rt.io_gate;
	int opened = gmt_writer_open(&gmt_rt.w, gmt_rt.set.output_template, gmt_rt.set.stack_depth,
				     gmt_rt.set.compress, gmt_rt.start_mono);
	int err = errno;
	/* Listed once the file exists, even if writing it failed: `run`
	 * reports exactly the traces its command made, no other. */
	if (gmt_rt.w.fd >= 0 && gmt_rt.set.trace_list &&
	    gmt_writer_list(&gmt_rt.w, gmt_rt.set.trace_list) != 0)
		gmt_log("cannot add %s to GPUMEMTRACE_TRACE_LIST=%s: %s; "
			"gpumemtrace run will not report it",
			gmt_rt.w.path, gmt_rt.set.trace_list, strerror(errno));
	if (opened != 0) {
		gmt_log("cannot create trace file from '%s': %s; tracing is off, the program "
			"runs on",
			gmt_rt.set.output_template, strerror(err));
		return -1;
	}
	/* libzstd's dlopen here, inside the first event (which asks the
	 * driver, through the loader, anyway), never later on the flush
	 * thread: there it could wait for a dlopen stuck in a constructor
	 * while an exit or exec waits for the final flush (t-life-stuck-loader). */
	gmt_writer_compress_init(&gmt_rt.w);
	gmt_writer_reserve(&gmt_rt.w); /* before the flush thread: it may never run before exit */
	return 0;
}

/* The creation's outcome. Static: a creation stuck in I/O is left behind
 * and may end after its caller went on. */
enum { CREATING, CREATED, CREATION_ABANDONED };
static struct {
	int result;
	uint32_t state; /* futex word */
} creation;

static void *create_trace_thread(void *arg)
{
	(void)arg;
	gmt_enter(); /* nothing this thread does is the program's */
	int result = create_trace();
	creation.result = result;
	uint32_t was = CREATING;
	if (__atomic_compare_exchange_n(&creation.state, &was, CREATED, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		gmt_futex_set(&creation.state, CREATED); /* wakes the caller */
		return NULL;
	}
	/* Given up on (tracing is off): a file made this late would read as
	 * a trace cut short, and nobody writes it. */
	if (result == 0) {
		unlink(gmt_rt.w.path);
		close(gmt_rt.w.fd);
	}
	return NULL;
}

/* Waits for the creation until it is done, or until its I/O (the open, the
 * header's write) has been stuck GPUMEMTRACE_FULL_WAIT_MS (100 ms at
 * least): a trace on a hung network mount. Then the program goes on
 * untraced; the thread is left in its open. Returns its result, or -2
 * when given up on (the writer is the thread's still: not to be touched). */
static int wait_creation(void)
{
	uint64_t bound = (uint64_t)gmt_rt.set.full_wait_ms * 1000000u;
	if (bound < 100000000u)
		bound = 100000000u;
	for (;;) {
		if (gmt_futex_wait_while(&creation.state, CREATING, 20) != CREATING)
			break;
		if (gmt_writer_stuck_ns(&gmt_rt.w, gmt_now_ns()) < bound)
			continue;
		uint32_t was = CREATING;
		if (__atomic_compare_exchange_n(&creation.state, &was, CREATION_ABANDONED, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			gmt_log("creating the trace file from '%s' took no step for %d ms (a hung "
				"file system?); tracing is off, the program runs on",
				gmt_rt.set.output_template, (int)(bound / 1000000u));
			return -2;
		}
		break; /* it ended just now */
	}
	/* Pairs with the thread's release (its compare-exchange). */
	(void)__atomic_load_n(&creation.state, __ATOMIC_ACQUIRE);
	return creation.result;
}

/* create_trace on a short-lived thread of our own, its stack ours: the
 * calling thread's stack may be a small one of the program's (16-24 KiB
 * threads overflowed here), and its I/O may never return. Where no
 * thread can be made, on this one. */
static int create_trace_off_stack(void)
{
	enum { CREATE_STACK = 256 << 10 };
	pthread_t t;
	creation.result = -1;
	__atomic_store_n(&creation.state, CREATING, __ATOMIC_RELEASE);
	if (gmt_thread_start(&t, CREATE_STACK, create_trace_thread, NULL) != 0)
		return create_trace();
	pthread_detach(t); /* never joined: it may stay in its open for good */
	return wait_creation();
}

struct gmt_ring *gmt_ring_for_this_thread(void)
{
	int made_file = 0, cancel = gmt_nocancel_begin();
	pthread_mutex_lock(&gmt_rt.setup_lock);
	if (gmt_rt.state == ST_IDLE) {
		/* The process's first event creates the file, off this
		 * thread's stack, which may be small (t-life-small-stack). */
		int opened = create_trace_off_stack();
		if (opened == -2) {
			set_state(ST_OFF); /* the writer stays the stuck thread's */
		} else if (opened != 0) {
			gmt_writer_abandon(&gmt_rt.w);
			set_state(ST_OFF);
		} else if (gmt_flush_start() != 0) {
			gmt_log("cannot start the flush thread; tracing is off");
			set_state(ST_OFF);
		} else {
			set_state(ST_ACTIVE);
			gmt_scanner_start(gmt_rt.set.symbolize);
			gmt_sampler_start(gmt_rt.set.sample_ms);
			gmt_exit_watch();
			made_file = 1;
		}
	}
	struct gmt_ring *r = NULL;
	if (gmt_rt.state == ST_ACTIVE || gmt_rt.state == ST_FINISHED) {
		r = gmt_ring_new(gmt_rt.ring_cap, (int)syscall(SYS_gettid));
		if (r) {
			if (gmt_rt.rings_idle)
				r->wake_at = 0;
			r->next = gmt_rt.rings;
			gmt_rt.rings = r;
		}
	}
	pthread_mutex_unlock(&gmt_rt.setup_lock);
	if (made_file)
		learn_devices_early();
	if (r) {
		gmt_tls_ring = r;
		pthread_setspecific(gmt_rt.key, r);
		push_thread_name(r);
	}
	gmt_nocancel_end(cancel);
	return r;
}

static void thread_gone(void *ring)
{
	struct gmt_ring *r = ring;
	gmt_tls_ring = NULL; /* a later event on this thread gets a fresh ring */
	gmt_stack_cache_release();
	/* Pairs with the acquire load in flush_cycle. */
	__atomic_store_n(&r->exited, 1, __ATOMIC_RELEASE);
	if (gmt_rt.flusher_running)
		gmt_flush_wake();
}
