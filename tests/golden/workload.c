/* Workloads for the golden traces under tests/golden: small programs on the
 * simulated CUDA whose traces are checked in with every report's expected
 * output. Usage: workload MODE [N]
 *   train  a training loop: warm-up growth, then steady re-use
 *   leak   the same, leaking 1 MiB per iteration after warm-up
 *   holes  interleaved frees that leave holes, then a large request
 *   oom    allocates until the device is full */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

#define MiB  ((size_t)1 << 20)
#define STEP __attribute__((noinline))

static void nap_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

static void *xmalloc_dev(size_t size)
{
	void *p = NULL;
	if (cudaMalloc(&p, size) != cudaSuccess)
		return NULL;
	return p;
}

/* Each step counts its own calls, so no two have the same body: identical
 * functions would be folded into one by the compiler (-fipa-icf). */
static unsigned long calls_weights, calls_activations, calls_history;

STEP static void *load_weights(size_t size)
{
	calls_weights++;
	return xmalloc_dev(size);
}

STEP static void *activations(size_t size)
{
	calls_activations += 2;
	return xmalloc_dev(size);
}

STEP static void *leaked_history(size_t size)
{
	calls_history += 3;
	return xmalloc_dev(size);
}

static void train(int steps, int leak)
{
	void *weights[4];
	for (int i = 0; i < 4; i++)
		weights[i] = load_weights((size_t)(8 << i) * MiB); /* 8, 16, 32, 64 MiB */
	for (int step = 0; step < steps; step++) {
		size_t act = (size_t)(step < 4 ? 4 << step : 32) * MiB; /* warm-up: 4..32 MiB */
		void *a = activations(act), *b = activations(act / 2);
		cudaFree(b);
		cudaFree(a);
		if (leak && step >= 4)
			leaked_history(MiB);
		nap_us(2000);
	}
	for (int i = 0; i < 4; i++)
		cudaFree(weights[i]);
}

STEP static void holes(void)
{
	void *blocks[32];
	for (int i = 0; i < 32; i++)
		blocks[i] = xmalloc_dev(2 * MiB);
	for (int i = 0; i < 32; i += 2)
		cudaFree(blocks[i]);
	void *big = xmalloc_dev(16 * MiB);
	cudaFree(big);
	for (int i = 1; i < 32; i += 2)
		cudaFree(blocks[i]);
}

STEP static void fill_device(void)
{
	void *blocks[64];
	int n = 0;
	while (n < 64 && (blocks[n] = xmalloc_dev(8 * MiB)))
		n++;
	void *last = xmalloc_dev(8 * MiB); /* fails again */
	(void)last;
	printf("filled %d blocks\n", n);
	while (n)
		cudaFree(blocks[--n]);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "train";
	int n = argc > 2 ? atoi(argv[2]) : 20;
	if (!strcmp(mode, "train"))
		train(n, 0);
	else if (!strcmp(mode, "leak"))
		train(n, 1);
	else if (!strcmp(mode, "holes"))
		holes();
	else if (!strcmp(mode, "oom"))
		fill_device();
	else
		return 2;
	return (calls_weights + calls_activations + calls_history) == 0 && n < 0;
}
