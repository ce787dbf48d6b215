/* A trace file on a hung network mount, made certain (t-life-stall-open).
 * The tracer's open() reaches `open`, defined here (-rdynamic): creating a
 * file whose name ends in .gmt never returns (nothing releases it), as on
 * a hung NFS mount. Nothing is timed.
 *
 * Usage: stallopen MODE
 *   first: 10 cudaMalloc/cudaFree pairs, the first of which makes the
 *          tracer create its file.
 *   fork:  a thread makes the first pair (the file's creation sticks);
 *          once its open is stuck, the main thread forks a child that
 *          exits 0 (CUDA is not for a child: the thread may be inside the
 *          runtime's initialization), waits for it, then joins the thread
 *          and makes 10 pairs.
 * Prints "pairs=P" on stdout before it ends (exit 0). */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
int __open(const char *path, int flags, ...); /* glibc's, under the name we take */

static int stuck;
static long pairs;

static void nap(void)
{
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & O_CREAT) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	size_t n = strlen(path);
	if ((flags & O_CREAT) && n > 4 && !strcmp(path + n - 4, ".gmt")) {
		__atomic_store_n(&stuck, 1, __ATOMIC_SEQ_CST);
		for (;;)
			nap(); /* a hung mount: never back */
	}
	return __open(path, flags, mode);
}

static void churn(long n)
{
	for (long i = 0; i < n; i++) {
		void *p;
		if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess) {
			fprintf(stderr, "stallopen: cuda call failed\n");
			exit(2);
		}
		__atomic_add_fetch(&pairs, 1, __ATOMIC_SEQ_CST);
	}
}

static void *first_pair(void *arg)
{
	(void)arg;
	churn(1);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "first")) {
		churn(10);
	} else if (!strcmp(mode, "fork")) {
		pthread_t t;
		if (pthread_create(&t, NULL, first_pair, NULL) != 0)
			return 2;
		/* Traced, the thread's open sticks; untraced there is none. */
		while (!__atomic_load_n(&stuck, __ATOMIC_SEQ_CST) &&
		       !__atomic_load_n(&pairs, __ATOMIC_SEQ_CST))
			nap();
		pid_t c = fork();
		if (c == 0) /* no CUDA: the parent's thread may be inside its init */
			exit(0);
		int status = 0;
		if (c < 0 || waitpid(c, &status, 0) != c || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			fprintf(stderr, "stallopen: the child failed (status %d)\n", status);
			return 3;
		}
		pthread_join(t, NULL);
		churn(10);
	} else {
		fprintf(stderr, "usage: stallopen first|fork\n");
		return 2;
	}
	printf("pairs=%ld\n", pairs);
	fflush(stdout);
	return 0;
}
