/* A training-like program for `gpumemtrace watch` (t-cli-watch): it holds
 * 64 MiB of weights (load_weights), then runs STEPS steps, each a range
 * "step K" (the marker API) in which it allocates 8 MiB of activations
 * (forward, freed before the step ends), keeps 1 MiB (leak_cache: the
 * leak) and, on a worker thread named "gmt-worker", holds 2 MiB for the
 * step (prefetch, freed at the next step's start). After step K it waits for
 * the file GATE/go.K (none: it goes on at once); after the last, for
 * GATE/end, then frees the weights and exits 0.
 *
 * So while it waits after step K: 64 + K MiB (+ 2 MiB of the worker's)
 * live, and the trace is quiet: what `watch` shows then is what `summary`
 * says of the trace at that moment. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpumemtrace/gpumemtrace.h"
#include "progs.h"

static const char *gate;

static void wait_for(const char *name)
{
	if (!gate)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", gate, name);
	struct stat st;
	while (stat(path, &st) != 0) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static __attribute__((noinline)) void *load_weights(void)
{
	void *p = NULL;
	cudaMalloc(&p, 64 * MiB);
	return p;
}

static __attribute__((noinline)) void forward(void)
{
	void *p = NULL;
	cudaMalloc(&p, 8 * MiB);
	cudaFree(p);
}

static __attribute__((noinline)) void leak_cache(void)
{
	void *p = NULL;
	cudaMalloc(&p, MiB); /* never freed */
}

static void *prefetch(void *arg)
{
	void **slot = arg;
	pthread_setname_np(pthread_self(),
			   "gmt-worker"); /* before its first call: its THREAD record */
	cudaMalloc(slot, 2 * MiB);
	return NULL;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 10;
	gate = argc > 2 ? argv[2] : NULL;
	void *weights = load_weights();
	void *held = NULL;
	for (int k = 1; k <= steps; k++) {
		char name[32];
		snprintf(name, sizeof(name), "step %d", k);
		gpumemtrace_range_push(name);
		if (held)
			cudaFree(held);
		held = NULL;
		pthread_t t;
		pthread_create(&t, NULL, prefetch, &held);
		pthread_join(t, NULL);
		forward();
		leak_cache();
		gpumemtrace_range_pop();
		snprintf(name, sizeof(name), "go.%d", k);
		if (k < steps)
			wait_for(name);
	}
	printf("done\n");
	fflush(stdout);
	wait_for("end");
	cudaFree(held);
	cudaFree(weights);
	return 0;
}
