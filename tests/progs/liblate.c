/* liblate.so: a library the program links (DT_NEEDED). The loader runs its
 * constructor before the preloaded tracer's, and its destructor after the
 * tracer's, so both ends of its life fall outside the tracer's.
 *   constructor: atexit(late_atexit_before), then cudaMalloc 1 MiB (kept)
 *                and 2 MiB (freed by late_atexit_before);
 *   late_atexit_before (registered before the tracer's own atexit handler,
 *                which the tracer registers at the first event): frees the
 *                2 MiB, allocates 3 MiB (freed by the destructor);
 *   destructor: frees the 1 MiB, the 3 MiB and what the program handed over
 *               with late_keep, then allocates and frees 6 MiB. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

#define MiB (1024ul * 1024)

static void *kept, *second, *third, *handed[4];
static int nhanded;
int late_errors;

void late_keep(void *p); /* called by the program (edges.c) */
void late_keep(void *p)
{
	if (nhanded < 4)
		handed[nhanded++] = p;
}

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "liblate: %s failed\n", what);
		late_errors++;
	}
}

static void late_atexit_before(void)
{
	check(cudaFree(second) == cudaSuccess, "atexit-before cudaFree");
	check(cudaMalloc(&third, 3 * MiB) == cudaSuccess, "atexit-before cudaMalloc");
	check(cudaFree(third) == cudaSuccess, "atexit-before cudaFree");
	if (late_errors)
		_exit(5);
}

__attribute__((constructor)) static void late_init(void)
{
	atexit(late_atexit_before);
	check(cudaMalloc(&kept, 1 * MiB) == cudaSuccess, "constructor cudaMalloc");
	check(cudaMalloc(&second, 2 * MiB) == cudaSuccess, "constructor cudaMalloc");
}

__attribute__((destructor)) static void late_fini(void)
{
	check(cudaFree(kept) == cudaSuccess, "destructor cudaFree");
	for (int i = 0; i < nhanded; i++)
		check(cudaFree(handed[i]) == cudaSuccess, "destructor cudaFree");
	void *p;
	check(cudaMalloc(&p, 6 * MiB) == cudaSuccess, "destructor cudaMalloc");
	check(cudaFree(p) == cudaSuccess, "destructor cudaFree");
}
