/* Early calls: libearly.so's constructor allocates before main (see
 * early.c); main then allocates 2 MiB with cudaMalloc and frees it.
 * Totals: cudaMalloc x2 (3 MiB), cudaFree x2, cuMemAlloc_v2 x1 failed. */
#include "progs.h"

extern int early_status;

int main(void)
{
	void *p;
	printf("main: early constructor %s\n", early_status ? "FAILED" : "ok");
	if (early_status)
		prog_failures++;
	CHECK(cudaMalloc(&p, 2 * MiB), cudaSuccess);
	CHECK(cudaFree(p), cudaSuccess);
	return prog_exit("early-calls");
}
