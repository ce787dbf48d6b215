/* A realistic allocation workload, for the trace-size and reader benches.
 *
 * usage: workload cuda|malloc EVENTS [RATE]
 * 256 distinct call stacks (64 sites, each reached from 4 callers), sizes
 * spread over 16 B .. 16 MiB (cuda) or 16 B .. 64 KiB (malloc), and mixed
 * lifetimes: a pool of 4096 slots where each step frees or allocates a
 * random slot, so some blocks live for one step and some for the whole run.
 * Makes about EVENTS allocation and free calls. With RATE, at RATE calls a
 * second (a wait every 1000 calls) and a mark "step N" every RATE calls:
 * a trace growing as a training run's does (bench/watch.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpumemtrace/gpumemtrace.h"
#include "sim-primary.h"

#define SLOTS 4096

static int use_cuda;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uintptr_t slot[SLOTS];

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t pick_size(void)
{
	unsigned shift = 4 + (unsigned)(next_random() % (use_cuda ? 21 : 13));
	return ((size_t)1 << shift) + (size_t)(next_random() % 64) * 16;
}

static __attribute__((noinline)) void step(int site)
{
	unsigned i = (unsigned)(next_random() % SLOTS);
	if (slot[i]) {
		if (use_cuda)
			cuMemFree_v2((CUdeviceptr)slot[i]);
		else
			free((void *)slot[i]);
		slot[i] = 0;
		return;
	}
	if (use_cuda) {
		CUdeviceptr p = 0;
		if (cuMemAlloc_v2(&p, pick_size()) == CUDA_SUCCESS)
			slot[i] = (uintptr_t)p;
	} else {
		slot[i] = (uintptr_t)malloc(pick_size());
	}
	(void)site;
}

/* 64 call sites: each is its own function, so each has its own address.
 * Four callers per site: 256 distinct stacks. */
// clang-format off
#define SITE(n) \
	static __attribute__((noinline)) void site_##n(void) \
	{ \
		step(n); \
		__asm__ volatile("" ::: "memory"); \
	}
#define SITES8(a) SITE(a##0) SITE(a##1) SITE(a##2) SITE(a##3) SITE(a##4) SITE(a##5) SITE(a##6) SITE(a##7)
SITES8(1) SITES8(2) SITES8(3) SITES8(4) SITES8(5) SITES8(6) SITES8(7) SITES8(8)

#define REF(n) site_##n,
#define REFS8(a) REF(a##0) REF(a##1) REF(a##2) REF(a##3) REF(a##4) REF(a##5) REF(a##6) REF(a##7)
static void (*const sites[64])(void) = {
	REFS8(1) REFS8(2) REFS8(3) REFS8(4) REFS8(5) REFS8(6) REFS8(7) REFS8(8)
};

#define CALLER(n) \
	static __attribute__((noinline)) void caller_##n(unsigned s) \
	{ \
		sites[s % 64](); \
		__asm__ volatile("" ::: "memory"); \
	}
CALLER(0) CALLER(1) CALLER(2) CALLER(3)
    // clang-format on

    int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s cuda|malloc EVENTS [RATE]\n", argv[0]);
		return 2;
	}
	use_cuda = !strcmp(argv[1], "cuda");
	long events = atol(argv[2]);
	long rate = argc == 4 ? atol(argv[3]) : 0;
	if (use_cuda && sim_use_primary_context() != 0)
		return 1;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < events; i++) {
		if (rate > 0 && i % 1000 == 0) { /* on schedule: call i is due at i / rate s */
			long long due = (long long)t0.tv_sec * 1000000000ll + t0.tv_nsec +
					(long long)((double)i / (double)rate * 1e9);
			struct timespec ts = {(time_t)(due / 1000000000ll),
					      (long)(due % 1000000000ll)};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
		if (rate > 0 && i % rate == 0) {
			char text[32];
			snprintf(text, sizeof(text), "step %ld", i / rate + 1);
			gpumemtrace_mark(text);
		}
		unsigned r = (unsigned)next_random();
		switch (r % 4) {
		case 0:
			caller_0(r >> 8);
			break;
		case 1:
			caller_1(r >> 8);
			break;
		case 2:
			caller_2(r >> 8);
			break;
		default:
			caller_3(r >> 8);
			break;
		}
	}
	for (unsigned i = 0; i < SLOTS; i++)
		if (slot[i] && !use_cuda)
			free((void *)slot[i]);
	printf("events=%ld\n", events);
	return 0;
}
