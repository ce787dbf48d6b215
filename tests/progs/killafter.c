/* A process killed with no exit path run (issue 18, case 9: a Pool's
 * workers SIGTERMed by terminate()). Usage: killafter N GAP_MS SIG
 * One allocation, a 300 ms nap (the clock's first fit and a flush are
 * long done: the flush thread sleeps), then N allocations (every other one
 * freed), a nap of GAP_MS, and raise(SIG) with the default disposition.
 * SIG 0: return from main instead. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

static void nap_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

static void alloc_one(int i)
{
	void *p;
	if (cudaMalloc(&p, 1 << 20) != cudaSuccess) {
		fprintf(stderr, "cudaMalloc failed\n");
		exit(2);
	}
	if (i % 2)
		cudaFree(p);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: killafter N GAP_MS SIG\n");
		return 2;
	}
	int n = atoi(argv[1]), gap = atoi(argv[2]), sig = atoi(argv[3]);
	alloc_one(0);
	nap_ms(300);
	for (int i = 0; i < n; i++)
		alloc_one(i);
	nap_ms(gap);
	if (sig) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	return 0;
}
