/* usage: burst THREADS RATE SECONDS: THREADS threads make cuMemAlloc/
 * cuMemFree pairs (4 KiB, simulated driver) paced to RATE events a second
 * in all, for SECONDS: each thread makes 32 pairs, then sleeps until its
 * schedule says the next 32 are due (never catching up by more than a
 * batch: a thread that falls behind does not burst). Prints the events
 * made and the rate they were made at (the flush's lossless rate is the
 * highest RATE whose trace lost none: bench/flushrate.sh, issue 30.6). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sim-primary.h"

enum { BATCH = 32 };

static double rate_per_thread, seconds;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *worker(void *arg)
{
	long *made = arg;
	if (sim_use_primary_context() != 0)
		return (void *)1;
	uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), due = start;
	uint64_t step = (uint64_t)(2.0 * BATCH / rate_per_thread * 1e9);
	while (due < end) {
		for (int i = 0; i < BATCH; i++) {
			CUdeviceptr p = 0;
			if (cuMemAlloc_v2(&p, 4096) == CUDA_SUCCESS &&
			    cuMemFree_v2(p) == CUDA_SUCCESS)
				*made += 2;
		}
		due += step;
		uint64_t t = now_ns();
		if (due > t) {
			struct timespec ts = {(time_t)(due / 1000000000u),
					      (long)(due % 1000000000u)};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		} else if (t - due > step) {
			due = t - step; /* behind by more than a batch: no catching up */
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s THREADS RATE SECONDS\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	double rate = atof(argv[2]);
	seconds = atof(argv[3]);
	if (n < 1 || n > 256 || rate <= 0 || seconds <= 0)
		return 2;
	rate_per_thread = rate / n;
	pthread_t t[256];
	long made[256] = {0};
	uint64_t start = now_ns();
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, &made[i]) != 0)
			return 1;
	long all = 0;
	for (int i = 0; i < n; i++) {
		void *rc;
		pthread_join(t[i], &rc);
		if (rc)
			return 1;
		all += made[i];
	}
	double s = (double)(now_ns() - start) / 1e9;
	printf("events=%ld seconds=%.3f rate=%.0f\n", all, s, all / s);
	return 0;
}
