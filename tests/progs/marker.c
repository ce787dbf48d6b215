/* The marker API (include/gpumemtrace/gpumemtrace.h), traced or not:
 *   push "epoch 1"; cudaMalloc 1 MiB; mark "checkpoint"; push "inner";
 *   pop; pop; push NULL; pop; and from a second thread push "worker",
 *   cudaMalloc 1 MiB, pop; then counters "allocated" 1 MiB and "num" 2
 *   from "demo" on "cuda:0". The output is the same either way. */
#include <pthread.h>

#include "gpumemtrace/gpumemtrace.h"
#include "progs.h"

static void *worker(void *arg)
{
	void *p;
	gpumemtrace_range_push("worker");
	CHECK(cudaMalloc(&p, MiB), cudaSuccess);
	gpumemtrace_range_pop();
	CHECK(cudaFree(p), cudaSuccess);
	return NULL;
}

int main(void)
{
	void *p;
	gpumemtrace_range_push("epoch 1");
	CHECK(cudaMalloc(&p, MiB), cudaSuccess);
	gpumemtrace_mark("checkpoint");
	gpumemtrace_range_push("inner");
	gpumemtrace_range_pop();
	gpumemtrace_range_pop();
	gpumemtrace_range_push(NULL);
	gpumemtrace_range_pop();
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	CHECK(cudaFree(p), cudaSuccess);
	static const char *const names[] = {"allocated", "num"};
	static const uint64_t values[] = {MiB, 2};
	gpumemtrace_counters(0, "demo", "cuda:0", 0, 2, names, values);
	return prog_failures != 0;
}
