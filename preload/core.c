/* The event path: a hook's call recorded into the calling thread's ring
 * (gmt_record), and the records other than events (phases, counters, NVML
 * samples, Python frames). No lock, no malloc, no syscall on the way,
 * except on a thread's first event (preload/setup.c), when the ring is
 * full, and after the final trailer. Start-up: setup.c; the flush thread:
 * flush.c; the process's end and fork: life.c.
 *
 * Where our work on a program's thread may open, write, sleep or join (a
 * full ring's wait, writing after the final trailer), it runs with
 * cancellation disabled (preload/nocancel.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/codec.h"
#include "preload/device.h"
#include "preload/flush.h"
#include "preload/life.h"
#include "preload/nocancel.h"
#include "preload/python.h"
#include "preload/ring.h"
#include "preload/setup.h"
#include "preload/stackcache.h"
#include "preload/state.h"
#include "preload/sync.h"
#include "preload/tracer.h"

/* After a commit and a gmt_fence_recorded (flush_if_finished has one): a ring
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
		gmt_flush_wake();
	}
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
	return getpid() != gmt_rt.pid;
}

/* flush_lock for a write on the program's thread after the final trailer
 * (a late destructor's event). Not while the trace's write is stuck (a
 * frozen file system) past GPUMEMTRACE_FULL_WAIT_MS (100 ms at least): the
 * holder may be the flush thread inside that write, for good. Then 0: the
 * event stays unwritten, and the trace ends at its last whole write, as
 * the exit's wait leaves it. */
static int lock_flush_late(void)
{
	uint64_t bound = (uint64_t)gmt_rt.set.full_wait_ms * 1000000u;
	if (bound < 100000000u)
		bound = 100000000u;
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 1000000; /* 1 ms slices */
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		if (pthread_mutex_timedlock(&gmt_rt.flush_lock, &until) == 0)
			return 1;
		if (gmt_writer_stuck_ns(&gmt_rt.w, gmt_now_ns()) >= bound)
			return 0;
	}
}

static void *wait_for_space_(struct gmt_ring *r, size_t len)
{
	if (not_our_process())
		return NULL;
	uint64_t full_wait_ns = (uint64_t)gmt_rt.set.full_wait_ms * 1000000u;
	uint64_t deadline = gmt_now_ns() + full_wait_ns;
	long nap = 20000;
	for (;;) {
		int st = load_state();
		if (st == ST_FINISHED) {
			/* No flush thread any more: drain the rings ourselves,
			 * with a trailer (an _exit may end us before ours). */
			if (!lock_flush_late())
				return NULL; /* the final write is stuck */
			if (load_state() == ST_FINISHED)
				gmt_flush_now_with_trailer(GMT_END_EXIT);
			pthread_mutex_unlock(&gmt_rt.flush_lock);
			return gmt_ring_reserve(r, len);
		}
		/* An exec under way, its trailer written: nothing drains until it
		 * fails, and if it succeeds the event goes with the image.
		 * Counted, not waited for. */
		if (st != ST_ACTIVE || (__atomic_load_n(&gmt_rt.writes_held, __ATOMIC_RELAXED) &&
					__atomic_load_n(&gmt_rt.exec_hold, __ATOMIC_RELAXED)))
			return NULL;
		/* The trace's write is stuck (a frozen file system): the
		 * program has waited for it long enough, in all threads
		 * together; counted lost until the write returns. An event
		 * whose own wait ends while a write is stuck is the stall's
		 * too (the NOTE's count then equals the trace's). */
		uint64_t now = gmt_now_ns();
		uint64_t stuck = gmt_writer_stuck_ns(&gmt_rt.w, now);
		if (gmt_lost_to_stall(stuck, full_wait_ns, now >= deadline)) {
			__atomic_add_fetch(&gmt_rt.stall_lost, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		if (now >= deadline)
			return NULL;
		gmt_flush_wake();
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
	if (lock_flush_late()) { /* else the final write is stuck: bounded */
		if (load_state() == ST_FINISHED)
			gmt_flush_now_with_trailer(GMT_END_EXIT);
		pthread_mutex_unlock(&gmt_rt.flush_lock);
	}
	gmt_nocancel_end(cancel);
}

/* The program closed the trace's descriptor: reopened here, on its own
 * thread between its own calls (gmt_writer_reclaim says why), if the flush
 * thread is not busy (never waited for: it may be stuck in a write). Only
 * the open: the pending chunk is the flush thread's to write. */
static __attribute__((noinline, cold)) void reopen_trace(void)
{
	if (not_our_process() || pthread_mutex_trylock(&gmt_rt.flush_lock) != 0)
		return;
	int cancel = gmt_nocancel_begin();
	if (gmt_rt.w.fd_lost && gmt_writer_reclaim(&gmt_rt.w) < 0)
		set_state(ST_OFF);
	gmt_nocancel_end(cancel);
	pthread_mutex_unlock(&gmt_rt.flush_lock);
}

/* Inline: on every event's path, where the answer is almost always no. */
static inline void flush_if_finished(void)
{
	/* Our commit (or lost count) must be visible before we read the state,
	 * and the finisher's state store before it drains: without a full
	 * barrier between the two on each side, each could miss the other's
	 * store and the event would sit in the ring forever. Pairs with
	 * gmt_fence_finished in gmt_finish and flusher_main. */
	gmt_fence_recorded();
	if (__builtin_expect(load_state() == ST_FINISHED, 0))
		flush_finished();
	/* set by the flush thread under flush_lock; read again under it */
	if (__builtin_expect(__atomic_load_n(&gmt_rt.w.fd_lost, __ATOMIC_RELAXED), 0))
		reopen_trace();
}

static unsigned capture_stack(uint64_t *ips, unsigned depth, uintptr_t hook_frame)
{
	/* Our own frames are trimmed: ips[0] is the program's call. */
	return gmt_stack_capture(ips, depth, gmt_rt.set.stack_cache, gmt_rt.self_lo, gmt_rt.self_hi,
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
	struct gmt_ring *r = gmt_tls_ring;
	if (load_state() == ST_OFF || untraced_child())
		goto out;
	if (!r && (!gmt_tracing() || !(r = gmt_ring_for_this_thread())))
		goto out;
	if (device == GMT_DEVICE_CURRENT)
		device = gmt_current_device();

	uint64_t ips[GMT_MAX_STACK_DEPTH + 16];
	unsigned nframes = gmt_rt.set.stack_depth
			       ? capture_stack(ips, (unsigned)gmt_rt.set.stack_depth, hook_frame)
			       : 0;
	if (gmt_rt.set.stack_depth && gmt_rt.set.python)
		nframes =
		    gmt_python_splice_if_present(ips, nframes, (unsigned)gmt_rt.set.stack_depth);
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
	struct gmt_ring *r = gmt_tls_ring; /* the failed event just made it */
	size_t len = gmt_ring_align(sizeof(struct gmt_ring_hdr) + sizeof(struct gmt_raw_meminfo));
	struct gmt_ring_hdr *h;
	/* In an untraced child its event was counted: nothing more. */
	if (!r || load_state() == ST_OFF || !*gmt_rt.armed ||
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
	gmt_fence_recorded();
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
	struct gmt_ring *r = gmt_tls_ring;
	if (load_state() == ST_OFF || untraced_child())
		return NULL;
	if (!r && (!gmt_tracing() || !(r = gmt_ring_for_this_thread())))
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
	size_t used = gmt_ring_commit(gmt_tls_ring, len);
	flush_if_finished();
	if (wake)
		ask_drain(gmt_tls_ring, used);
}

void *gmt_record_begin(int type, size_t body, size_t *len)
{
	gmt_enter();
	struct gmt_ring_hdr *h = reserve_other(type, body, len);
	if (!h) {
		gmt_leave();
		return NULL;
	}
	return h + 1;
}

void gmt_record_end(size_t len)
{
	commit_other(len, 1);
	gmt_leave();
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

enum { TEXT_MAX = GMT_VARINT_MAX + 128 };

/* What a COUNTERS and an FWOOM record's body begin with: the time, a kind,
 * two texts, the device's ordinal and up to max named values. */
static uint8_t *put_values(uint8_t *p, unsigned kind, const char *a, const char *b, int64_t ordinal,
			   size_t n, size_t max, const char *const *names, const uint64_t *values)
{
	if (n > max)
		n = max;
	p = gmt_put_varint(p, gmt_now_ns());
	p = gmt_put_varint(p, kind);
	p = put_text(p, a);
	p = put_text(p, b);
	p = gmt_put_varint(p, gmt_zigzag(ordinal));
	p = gmt_put_varint(p, names && values ? n : 0);
	for (size_t i = 0; names && values && i < n; i++) {
		p = put_text(p, names[i]);
		p = gmt_put_varint(p, values[i]);
	}
	return p;
}

/* An encoded body into the calling thread's ring: the flush thread only
 * copies it after the tag and tid. */
static void ring_body(int type, const uint8_t *body, size_t blen)
{
	size_t len;
	gmt_enter();
	struct gmt_ring_hdr *h = reserve_other(type, blen, &len);
	if (h) {
		h->nframes = (uint16_t)blen;
		memcpy(h + 1, body, blen);
		commit_other(len, 1);
	}
	gmt_leave();
}

/* The body is encoded here, on the caller's thread. */
void gmt_record_counters(unsigned reason, const char *source, const char *device, int64_t ordinal,
			 size_t n, const char *const *names, const uint64_t *values)
{
	uint8_t body[4 * GMT_VARINT_MAX + 2 * TEXT_MAX +
		     GMT_COUNTERS_MAX * (TEXT_MAX + GMT_VARINT_MAX)];
	int saved_errno = errno;
	uint8_t *p =
	    put_values(body, reason, source, device, ordinal, n, GMT_COUNTERS_MAX, names, values);
	ring_body(GMT_RING_COUNTERS, body, (size_t)(p - body));
	errno = saved_errno;
}

/* As gmt_record_counters, with the error's type and message. */
void gmt_record_fwoom(unsigned how, const char *source, const char *type, int64_t ordinal, size_t n,
		      const char *const *names, const uint64_t *values, const char *message)
{
	uint8_t body[5 * GMT_VARINT_MAX + 2 * TEXT_MAX +
		     GMT_FWOOM_VALUES_MAX * (TEXT_MAX + GMT_VARINT_MAX) + GMT_VARINT_MAX +
		     GMT_FWOOM_MESSAGE_MAX];
	int saved_errno = errno;
	uint8_t *p =
	    put_values(body, how, source, type, ordinal, n, GMT_FWOOM_VALUES_MAX, names, values);
	size_t m = message ? strnlen(message, GMT_FWOOM_MESSAGE_MAX) : 0;
	p = gmt_put_varint(p, m);
	if (m)
		memcpy(p, message, m);
	ring_body(GMT_RING_FWOOM, body, (size_t)(p + m - body));
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
