/* Calls at the edges of the process's life, with liblate.so (see liblate.c)
 * linked in. Usage: edges MODE [ARGS]
 *   atexit:    main allocates 4 MiB (freed by an atexit handler registered
 *              after the tracer's) and 5 MiB (handed to liblate's
 *              destructor), then returns.
 *   exit-race THREADS MS COUNTS_FILE: threads allocate and free in a tight
 *              loop; main calls exit() after MS ms. An atexit handler (it
 *              runs before the tracer's final flush) writes to COUNTS_FILE
 *              how many calls each thread had completed; the threads go on
 *              calling through the rest of exit. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
void late_keep(void *p);

#define MiB	    (1024ul * 1024)
#define MAX_THREADS 64

static void *fourth;

static void atexit_after(void)
{
	if (cudaFree(fourth) != cudaSuccess)
		fprintf(stderr, "atexit-after cudaFree failed\n");
}

static unsigned long completed[MAX_THREADS];
static const char *counts_file;
static int nthreads;

static void *spin(void *arg)
{
	unsigned long *done = arg;
	for (;;) {
		void *p;
		if (cudaMalloc(&p, 4096) != cudaSuccess)
			abort();
		/* Pairs with the acquire load in write_counts: the count covers
		 * only calls that returned, so their events were recorded. */
		__atomic_fetch_add(done, 1, __ATOMIC_RELEASE);
		if (cudaFree(p) != cudaSuccess)
			abort();
		__atomic_fetch_add(done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void write_counts(void)
{
	unsigned long total = 0;
	for (int i = 0; i < nthreads; i++)
		total += __atomic_load_n(&completed[i], __ATOMIC_ACQUIRE);
	FILE *f = fopen(counts_file, "w");
	if (f) {
		fprintf(f, "%lu\n", total);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "atexit";
	if (!strcmp(mode, "atexit")) {
		void *fifth;
		if (cudaMalloc(&fourth, 4 * MiB) || cudaMalloc(&fifth, 5 * MiB))
			return 2;
		late_keep(fifth);
		atexit(atexit_after);
		printf("main returns\n");
		return 0;
	}
	if (!strcmp(mode, "exit-race") && argc == 5) {
		nthreads = atoi(argv[2]);
		int ms = atoi(argv[3]);
		counts_file = argv[4];
		if (nthreads < 1 || nthreads > MAX_THREADS)
			return 2;
		for (int i = 0; i < nthreads; i++) {
			pthread_t t;
			if (pthread_create(&t, NULL, spin, &completed[i]))
				return 2;
		}
		atexit(write_counts);
		struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
		printf("main exits\n");
		fflush(stdout);
		exit(0);
	}
	fprintf(stderr, "usage: edges atexit | exit-race THREADS MS COUNTS_FILE\n");
	return 2;
}
