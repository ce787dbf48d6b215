/* usage: threads N M [BYTES]: N threads each make M cudaMalloc/cudaFree
 * pairs of BYTES (default 4096), for exact-count tests: 2*N*M events.
 * THREADS_RUN_TIME=1 adds run_s, the calls' wall time, to the output. */
#include <pthread.h>
#include <time.h>

#include "progs.h"

static long iterations;
static size_t bytes = 4096;

static void *worker(void *arg)
{
	long failures = 0;
	for (long i = 0; i < iterations; i++) {
		void *p;
		if (cudaMalloc(&p, bytes) != cudaSuccess || cudaFree(p) != cudaSuccess)
			failures++;
	}
	return (void *)failures;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s THREADS ITERATIONS [BYTES]\n", argv[0]);
		return 2;
	}
	long n = strtol(argv[1], NULL, 0);
	iterations = strtol(argv[2], NULL, 0);
	if (argc > 3)
		bytes = strtoull(argv[3], NULL, 0);
	if (n < 1 || n > 1024 || iterations < 0)
		return 2;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	long failures = 0;
	/* The calls alone, without start-up and exit (the bench's sustained rate). */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	for (long i = 0; i < n; i++) {
		void *f;
		pthread_join(t[i], &f);
		failures += (long)f;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("threads=%ld iterations=%ld bytes=%zu pairs=%ld failures=%ld", n, iterations, bytes,
	       n * iterations, failures);
	/* Only when asked: tests compare this output between runs. */
	if (getenv("THREADS_RUN_TIME"))
		printf(" run_s=%.6f",
		       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
	printf("\n");
	free(t);
	return failures ? 1 : 0;
}
