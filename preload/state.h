/* The core's one shared state (defined in preload/state.c), read by its
 * jobs: start-up (setup.c), the event path (core.c), the flush thread
 * (flush.c) and the process's end and fork (life.c). Core-internal: the
 * hooks see preload/tracer.h. */
#ifndef GMT_PRELOAD_STATE_H
#define GMT_PRELOAD_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "preload/device.h"
#include "preload/ring.h"
#include "preload/settings.h"
#include "preload/tracer.h"
#include "preload/writer.h"

enum state {
	ST_UNCONFIGURED = 0,
	ST_IDLE,     /* configured; the file is created at the first event */
	ST_ACTIVE,   /* file open, flush thread running */
	ST_FINISHED, /* final trailer written; late events are written at once */
	ST_OFF,	     /* disabled, AT_SECURE, or the trace could not be written */
};

struct gmt_runtime {
	int state;
	struct gmt_settings set;
	pthread_mutex_t setup_lock;
	pthread_mutex_t flush_lock;
	/* Taken by a writer as its write returns, and by fork_prepare: a fork
	 * while the write is stuck goes on without flush_lock, and the writer
	 * waits here until it is done (life.c). After setup_lock. */
	pthread_mutex_t io_gate;
	int fork_flush_held; /* gmt_fork_prepare took flush_lock */
	/* Events the program did not wait for because the trace's write was
	 * stuck past GPUMEMTRACE_FULL_WAIT_MS (counted lost too), and what the
	 * flush thread has said of them (flush.c). */
	uint64_t stall_lost, stall_noted;
	int stall_said;
	struct gmt_ring *rings;
	struct gmt_writer w;
	pthread_t flusher;
	int flusher_running;
	uint32_t flusher_up; /* futex word: the flush thread runs our code */
	uint32_t wake;	     /* futex word: bumped to get the flush thread going */
	/* futex word: flush cycles finished (gmt_flush_wait waits for one that
	 * began after its call) */
	uint32_t cycles;
	/* The number of the cycle under way (or last begun): cycles + 1 from
	 * its start until it ends. Written by the flush thread only. */
	uint32_t cycles_begun;
	/* The flush thread sleeps idle: every ring's wake_at is 0. Under
	 * setup_lock (a ring made meanwhile starts so). */
	int rings_idle;
	/* _exit and exec may run in a signal handler, where nothing that
	 * mallocs or locks may run: they ask the flush thread for the final
	 * flush (final_req = reason + 1) and wait for final_done to move. */
	uint32_t final_req, final_done;
	/* The module scan asked for as the end began (exit(), _exit, exec:
	 * life.c), so that it runs while the end's handlers do; 0: none. */
	uint32_t end_scan;
	/* Execs under way: raised by each exec's caller before it asks for
	 * the trailer, lowered when its exec returns (it failed). While
	 * raised the flush thread writes nothing: a cycle before the new
	 * image replaces us would leave records after the trailer, and the
	 * trace would read as incomplete. */
	uint32_t exec_hold;
	uint32_t exec_raises; /* every raise, ever: a new exec restarts the bound */
	/* Set by the flush thread while it honours a hold (not past its
	 * bound): producers then count a full ring's event lost at once. */
	uint32_t writes_held;
	/* The thread of the first exit() under way (0: none), and whether
	 * gmt_finish is under way (1) or done (2): several threads may call
	 * exit at once, and one's _exit would end the others' finish. */
	uint32_t exit_tid;
	uint32_t finishing;
	/* The status exit(), _exit() or main's return passed (life.c), for the
	 * EXIT record before the final trailer: exit_how is GMT_EXIT_* + 1 (0:
	 * not known), stored last (release; flush.c loads it acquire). */
	uint32_t exit_how;
	int exit_status;
	uint64_t exit_ns;
	pid_t pid;
	/* 1 in a process our fork handler set up; 0 in a child made without
	 * one (_Fork, a raw clone): the page is MADV_WIPEONFORK (life.c). */
	const volatile uint32_t *armed;
	/* Events of such children, shared with them (MAP_SHARED), reported by
	 * this process as lost; NULL if the page could not be mapped. */
	uint64_t *child_lost;
	uint64_t child_lost_reported, child_lost_noted;
	pthread_key_t key;
	uintptr_t self_lo, self_hi;	/* our own code, trimmed from stacks */
	uintptr_t loader_lo, loader_hi; /* ld.so's image: its locks are in there */
	size_t ring_cap;
	/* The trace's time zero: when the library loaded (or the child forked).
	 * A call's time is taken before the call, and the file is created inside
	 * the first call (the runtime's lazy init retains the context there),
	 * so the open itself is too late: that first call would read as
	 * happening before the trace began. */
	uint64_t start_mono;
};

/* The tracer's one state, set up by configure_locked (setup.c). */
extern struct gmt_runtime gmt_rt;

/* Device facts learnt on a program's thread before the file existed,
 * handed to the flush thread. */
struct gmt_early_facts {
	pthread_mutex_t lock;
	struct gmt_device_facts *facts;
};
extern struct gmt_early_facts gmt_rt_early;

extern __thread struct gmt_ring *gmt_tls_ring __attribute__((tls_model("initial-exec")));
/* This thread's execs that raised gmt_rt.exec_hold and have not come back. */
extern __thread unsigned gmt_tls_exec_holds __attribute__((tls_model("initial-exec")));

/* The state is read lock-free on every event: the release store publishes
 * what the transition set up (settings, writer, flush thread) to the acquire
 * loads of load_state. */
static inline int load_state(void)
{
	return __atomic_load_n(&gmt_rt.state, __ATOMIC_ACQUIRE);
}

static inline void set_state(int st)
{
	__atomic_store_n(&gmt_rt.state, st, __ATOMIC_RELEASE);
}

/* gmt_rt.armed before setup, or without MADV_WIPEONFORK (state.c). */
extern const uint32_t gmt_armed_always;

#endif
