/* A signal handler calls exit() while its thread is inside malloc
 * (t-life-exit-malloc). malloc, calloc, realloc, free and the aligned
 * allocators are this program's (-rdynamic, so the tracer's and libzstd's
 * calls reach them too). Once armed, the allocator is held by the main
 * thread, as glibc's arena lock is by a thread a signal interrupted inside
 * malloc: any other thread's allocator call then waits for good. The main
 * thread's own calls pass (its exit runs on).
 *
 * Usage: exitmalloc N: N cudaMalloc/cudaFree pairs on the main thread and
 * 10 on a thread that then ends; prints "pairs=P"; then malloc(64), inside
 * which SIGTERM's handler calls exit(3). Never a sanitizer build. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

static long owner;  /* the thread that holds the allocator (0: none) */
static int trigger; /* the main thread's next malloc takes it */

/* Waits for good when another thread holds the allocator. */
static void gate(void)
{
	long o = __atomic_load_n(&owner, __ATOMIC_SEQ_CST);
	if (!o || o == syscall(SYS_gettid))
		return;
	for (;;) {
		struct timespec ts = {1, 0};
		nanosleep(&ts, NULL);
	}
}

void *malloc(size_t n)
{
	if (__atomic_exchange_n(&trigger, 0, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&owner, syscall(SYS_gettid), __ATOMIC_SEQ_CST);
		raise(SIGTERM); /* its handler exits, the allocator held */
	}
	gate();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	gate();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	gate();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	gate();
	__libc_free(p);
}

void *memalign(size_t align, size_t n)
{
	gate();
	return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	gate();
	return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	gate();
	void *p = __libc_memalign(align, n);
	if (!p)
		return 12; /* ENOMEM */
	*out = p;
	return 0;
}

static void churn(long n)
{
	for (long i = 0; i < n; i++) {
		void *p;
		if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess) {
			fprintf(stderr, "exitmalloc: cuda call failed\n");
			exit(2);
		}
	}
}

static void *worker(void *arg)
{
	(void)arg;
	churn(10);
	return NULL;
}

static void on_term(int sig)
{
	(void)sig;
	exit(3);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	signal(SIGTERM, on_term);
	churn(n);
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0) {
		fprintf(stderr, "exitmalloc: no thread\n");
		return 2;
	}
	printf("pairs=%ld\n", n + 10);
	fflush(stdout);
	__atomic_store_n(&trigger, 1, __ATOMIC_SEQ_CST);
	void *volatile p = malloc(64);
	free(p);
	return 0; /* not reached */
}
