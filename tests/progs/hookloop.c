/* usage: hookloop PAIRS DEPTH: PAIRS cuMemAlloc_v2/cuMemFree_v2 pairs made
 * DEPTH frames below main, for the instruction-count guard
 * (t-perf-guard.sh) and nothing else: it prints nothing per call. */
#include "progs.h"
#include "sim-primary.h"

static long pairs;

static __attribute__((noinline)) long loop(void)
{
	long failures = 0;
	for (long i = 0; i < pairs; i++) {
		CUdeviceptr p;
		if (cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS || cuMemFree_v2(p) != CUDA_SUCCESS)
			failures++;
	}
	return failures;
}

static __attribute__((noinline)) long descend(int levels)
{
	long r = levels > 0 ? descend(levels - 1) : loop();
	__asm__ volatile("" ::: "memory"); /* no tail call: each level keeps a frame */
	return r;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	pairs = strtol(argv[1], NULL, 0);
	int depth = atoi(argv[2]);
	if (sim_use_primary_context() != 0)
		return 1;
	return descend(depth) != 0;
}
