/* _exit while another thread records: its records after the final
 * trailer are written by it (a fresh trailer each time), and the process
 * may end at any moment of such a write. Usage: exitbusy */
#include <pthread.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

static volatile int rounds;

static void *busy(void *arg)
{
	(void)arg;
	for (;;) { /* ended by the _exit */
		void *p;
		if (cudaMalloc(&p, 4096) == cudaSuccess)
			cudaFree(p);
		rounds++;
	}
	return NULL;
}

int main(void)
{
	void *p;
	if (cudaMalloc(&p, 1 << 20) != cudaSuccess)
		return 2;
	pthread_t t;
	if (pthread_create(&t, NULL, busy, NULL) != 0)
		return 2;
	/* Bounded: the thread is recording (or a second has passed). */
	for (int i = 0; i < 1000 && rounds < 100; i++) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	_exit(0);
}
