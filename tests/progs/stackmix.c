/* Allocations from stacks that vary in every way the stack cache keys on:
 * one call site at several depths, several sites at one depth, frames with
 * and without frame pointers, alloca'd frames, a signal handler on the
 * main stack and on an alternate stack, and a second thread. Each pattern
 * runs ROUNDS times so repeated stacks hit the cache.
 *
 * usage: stackmix   (cudaMalloc + cudaFree pairs; prints the pair count) */
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "progs.h"

enum { ROUNDS = 3 };

static long pairs;
static volatile int sink;

static __attribute__((noinline)) void pair(void)
{
	void *p;
	if (cudaMalloc(&p, 4096) == cudaSuccess && cudaFree(p) == cudaSuccess)
		pairs++;
	sink++;
}

static __attribute__((noinline)) void descend(int levels)
{
	if (levels > 0)
		descend(levels - 1);
	else
		pair();
	sink++; /* no tail call */
}

/* No frame pointer here: the cache must not depend on them. */
static __attribute__((noinline, optimize("omit-frame-pointer"))) void descend_nofp(int levels)
{
	if (levels > 0)
		descend_nofp(levels - 1);
	else
		pair();
	sink++;
}

/* Frames whose size depends on an argument, at the same call sites. */
static __attribute__((noinline)) void varframe(int words, int levels)
{
	volatile char *buf = alloca((size_t)words * 16 + 16);
	buf[0] = 1;
	if (levels > 0)
		varframe(words, levels - 1);
	else
		pair();
	sink += buf[0];
}

static __attribute__((noinline)) void site_a(void)
{
	descend(3);
	sink++;
}

static __attribute__((noinline)) void site_b(void)
{
	descend(3);
	sink++;
}

static void on_signal(int sig)
{
	(void)sig;
	descend(2);
}

static void patterns(void)
{
	for (int r = 0; r < ROUNDS; r++) {
		for (int d = 0; d < 40; d += 7) {
			descend(d);
			descend_nofp(d);
		}
		site_a();
		site_b();
		for (int w = 0; w < 4; w++)
			varframe(w, 2);
		varframe(3 - r, 1);
		raise(SIGUSR1);
	}
}

static void *thread_main(void *arg)
{
	(void)arg;
	patterns();
	return NULL;
}

int main(void)
{
	signal(SIGUSR1, on_signal);
	patterns();
	pthread_t t;
	if (pthread_create(&t, NULL, thread_main, NULL) == 0)
		pthread_join(t, NULL);

	/* The handler again, on an alternate stack outside the thread's. */
	static char altstack[1 << 16];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_ONSTACK};
	sigaltstack(&ss, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	for (int r = 0; r < ROUNDS; r++)
		raise(SIGUSR1);
	printf("pairs=%ld\n", pairs);
	return 0;
}
