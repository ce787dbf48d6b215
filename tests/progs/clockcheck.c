/* usage: clockcheck N GAP_US: N cuMemAlloc_v2/cuMemFree_v2 pairs GAP_US
 * apart, each call between two CLOCK_MONOTONIC reads. Prints
 * "alloc|free PTR BEFORE AFTER" (ns) per call, for t-clock.sh to place each
 * event's stamp, whichever clock the tracer used, between its two reads. */
#include <time.h>
#include <unistd.h>

#include "progs.h"
#include "sim-primary.h"

static unsigned long long mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long n = strtol(argv[1], NULL, 0);
	long gap_us = strtol(argv[2], NULL, 0);
	if (sim_use_primary_context() != 0)
		return 1;
	for (long i = 0; i < n; i++) {
		CUdeviceptr p;
		unsigned long long t0 = mono();
		if (cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS)
			return 1;
		unsigned long long t1 = mono();
		if (cuMemFree_v2(p) != CUDA_SUCCESS)
			return 1;
		unsigned long long t2 = mono();
		printf("alloc %#llx %llu %llu\nfree %#llx %llu %llu\n", (unsigned long long)p, t0,
		       t1, (unsigned long long)p, t1, t2);
		if (gap_us)
			usleep((useconds_t)gap_us);
	}
	return 0;
}
