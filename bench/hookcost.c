/* Per-pair cost at a controlled call depth, for bench/run.sh.
 *
 * usage: hookcost MODE DEPTH PAIRS
 *   cuda    cuMemAlloc_v2 + cuMemFree_v2 on the (simulated) driver
 *   cuda-mt the same, after another thread has made one pair: what each
 *           pair costs in a process with more than one CUDA thread, where
 *           the tracer's stamps take a fence (preload/tracer.h, gmt_callers)
 *   malloc  malloc + free, the same shape, for heaptrack
 *   unw     two unw_backtrace calls (one per event) of up to DEPTH + 8
 *           frames: the floor of a libunwind-based capture
 * The calls are made DEPTH - 5 noinline frames below main (loop, main and libc's
 * start add 5), so the stack at the call is DEPTH frames deep.
 * Prints "ns_per_pair=N cpu_ns_per_pair=M" (wall, and the calling thread's
 * CPU time) for the timed loop alone (startup and WARMUP
 * pairs excluded). */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim-primary.h"

enum mode { M_CUDA, M_MALLOC, M_UNW };

static enum mode mode;
static long pairs;
static int depth;
static volatile uintptr_t sink;

/* Untimed pairs first, at least WARMUP of them for at least WARMUP_S: the
 * tracers' one-time setup (trace file, thread ring, heaptrack's module
 * scan, our clock's fit 20 ms after load) is not a per-pair cost. */
enum { WARMUP = 2000 };
#define WARMUP_S 0.1

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The calling thread's CPU time: unlike the wall clock, it does not count
 * time spent waiting for a CPU that other jobs on a shared machine hold. */
static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double t_start, cpu_start;

static __attribute__((noinline)) long loop(void)
{
	long failures = 0;
	void *frames[256 + 8];
	double warm_until = now_s() + WARMUP_S;
	for (long i = -WARMUP; i < pairs; i++) {
		if (i == -1 && now_s() < warm_until)
			i = -2; /* warming up still */
		if (i == 0) {
			t_start = now_s();
			cpu_start = thread_cpu_s();
		}
		switch (mode) {
		case M_CUDA: {
			CUdeviceptr p;
			if (cuMemAlloc_v2(&p, 4096 + (size_t)(i & 7) * 256) != CUDA_SUCCESS ||
			    cuMemFree_v2(p) != CUDA_SUCCESS)
				failures++;
			break;
		}
		case M_MALLOC: {
			void *p = malloc(64 + (size_t)(i & 7) * 16);
			sink = (uintptr_t)p; /* keeps the pair from being optimized out */
			free(p);
			break;
		}
		case M_UNW:
			sink += (uintptr_t)unw_backtrace(frames, depth + 8);
			sink += (uintptr_t)unw_backtrace(frames, depth + 8);
			break;
		}
	}
	return failures;
}

static void *other_caller(void *arg)
{
	(void)arg;
	CUdeviceptr p;
	if (sim_use_primary_context() != 0 || cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS ||
	    cuMemFree_v2(p) != CUDA_SUCCESS)
		return (void *)1;
	return NULL;
}

static __attribute__((noinline)) long descend(int levels)
{
	long r = levels > 0 ? descend(levels - 1) : loop();
	__asm__ volatile("" ::: "memory"); /* no tail call: each level keeps a frame */
	return r;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s cuda|cuda-mt|malloc|unw DEPTH PAIRS\n", argv[0]);
		return 2;
	}
	int other_thread = !strcmp(argv[1], "cuda-mt");
	if (!strcmp(argv[1], "cuda") || other_thread)
		mode = M_CUDA;
	else if (!strcmp(argv[1], "malloc"))
		mode = M_MALLOC;
	else if (!strcmp(argv[1], "unw"))
		mode = M_UNW;
	else
		return 2;
	depth = atoi(argv[2]);
	pairs = atol(argv[3]);
	if (depth < 5 || depth > 256 || pairs < 1)
		return 2;
	if (mode == M_CUDA && sim_use_primary_context() != 0)
		return 1;
	if (other_thread) {
		pthread_t t;
		void *failed = NULL;
		if (pthread_create(&t, NULL, other_caller, NULL) != 0 ||
		    pthread_join(t, &failed) != 0 || failed)
			return 1;
	}
	long failures = descend(depth - 6);
	double t_end = now_s(), cpu_end = thread_cpu_s();
	printf("ns_per_pair=%.1f cpu_ns_per_pair=%.1f failures=%ld\n",
	       (t_end - t_start) * 1e9 / (double)pairs, (cpu_end - cpu_start) * 1e9 / (double)pairs,
	       failures);
	return failures != 0;
}
