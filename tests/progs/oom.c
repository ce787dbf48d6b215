/* Out of memory through the runtime: with SIMCUDA_CAPACITY=64M (set here
 * when the environment does not), 8 MiB cudaMallocs succeed 8 times and the
 * 9th fails with cudaErrorMemoryAllocation (2); everything is freed, and
 * one more 8 MiB allocation then succeeds and is freed.
 * Totals: cudaMalloc x10 (1 failed), cudaFree x9, peak 64 MiB. */
#include "progs.h"

#define BLOCK	   (8 * MiB)
#define MAX_BLOCKS 4096

int main(void)
{
	static void *blocks[MAX_BLOCKS];
	setenv("SIMCUDA_CAPACITY", "64M", 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	int n = 0;
	cudaError_t e = cudaSuccess;
	while (n < MAX_BLOCKS && (e = cudaMalloc(&blocks[n], BLOCK)) == cudaSuccess)
		n++;
	printf("allocated %d blocks of 8 MiB, then error %d (%s)\n", n, e, cudaGetErrorString(e));
	CHECK(cudaGetLastError(), cudaErrorMemoryAllocation);
	CHECK(cudaGetLastError(), cudaSuccess);
	for (int i = 0; i < n; i++)
		if (cudaFree(blocks[i]) != cudaSuccess)
			prog_failures++;
	void *again;
	CHECK(cudaMalloc(&again, BLOCK), cudaSuccess);
	CHECK(cudaFree(again), cudaSuccess);
	EXPECT(e == cudaErrorMemoryAllocation);
	return prog_exit("oom");
}
