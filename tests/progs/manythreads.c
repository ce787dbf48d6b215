/* Many threads alive at once, each making a few allocations: how much
 * memory the tracer adds per allocating thread (t-stress-thread-memory).
 * Usage: manythreads N M: N threads (256 KiB stacks), each M
 * cuMemAlloc/cuMemFree pairs of 4 KiB in device 0's primary context (made
 * by main, one retain event); once all are done and still
 * alive, prints "threads=N pairs=M rss_kb=R" (VmRSS), then lets them end.
 * Exits 3 when a thread cannot be made (the machine's limit). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim-primary.h"

static int pairs;
static pthread_barrier_t done, go;
static CUcontext ctx;

static void *run(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(ctx);
	for (int i = 0; i < pairs; i++) {
		CUdeviceptr p;
		if (cuMemAlloc_v2(&p, 4096) == CUDA_SUCCESS)
			cuMemFree_v2(p);
	}
	pthread_barrier_wait(&done);
	pthread_barrier_wait(&go);
	return NULL;
}

static long vm_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			v = atol(line + 6);
	if (f)
		fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int n = atoi(argv[1]);
	pairs = atoi(argv[2]);
	pthread_barrier_init(&done, NULL, (unsigned)n + 1);
	pthread_barrier_init(&go, NULL, (unsigned)n + 1);
	if (sim_use_primary_context() != 0 || cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
		return 2;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 << 10);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], &at, run, NULL) != 0) {
			fprintf(stderr, "manythreads: cannot make thread %d\n", i);
			_exit(3);
		}
	pthread_barrier_wait(&done);
	printf("threads=%d pairs=%d rss_kb=%ld\n", n, pairs, vm_rss_kb());
	fflush(stdout);
	pthread_barrier_wait(&go);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
