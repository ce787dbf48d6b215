/* Ends of a process at odd moments (t-life-stuck-loader, t-life-cancel,
 * t-life-exit-threads). Usage: ends MODE [ARGS]
 *   exit N:             returns N at once (an exec's target).
 *   stuck-exit [cuda]:  a thread dlopens libstuckctor.so, whose constructor
 *                       holds the loader's lock for 20 s; once it is stuck,
 *                       main calls _exit(5). With "cuda", main allocates
 *                       and frees first, so a trace is under way.
 *   stuck-_Exit [cuda]: the same with _Exit(5).
 *   stuck-execv [cuda]: the same, then execv of this program's "exit 5".
 *   cancel-first:       a thread with a cancellation pending (deferred)
 *                       makes the process's first CUDA call; it is then
 *                       cancelled at its next cancellation point. main
 *                       joins it, allocates, prints what happened, exits 0.
 *   cancel-later:       the same, the thread's CUDA call not its first.
 *   exit-threads N:     main allocates N times (frees every other one),
 *                       then three threads allocate once each and call
 *                       exit(7) at once. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

static void *open_stuck(void *arg)
{
	dlopen("libstuckctor.so", RTLD_NOW);
	return NULL;
}

static int cuda_pair(void)
{
	void *p;
	return cudaMalloc(&p, 1 << 20) == cudaSuccess && cudaFree(p) == cudaSuccess;
}

/* Returns once another thread is inside libstuckctor.so's constructor. */
static int get_loader_stuck(void)
{
	int fds[2];
	char fd[16], byte;
	pthread_t t;
	if (pipe(fds) != 0)
		return 0;
	snprintf(fd, sizeof fd, "%d", fds[1]);
	setenv("STUCK_FD", fd, 1);
	return pthread_create(&t, NULL, open_stuck, NULL) == 0 && read(fds[0], &byte, 1) == 1;
}

static cudaError_t thread_rc = cudaErrorUnknown;

static void *cancel_self(void *arg)
{
	void *p;
	if (arg && !cuda_pair())
		return NULL;
	pthread_cancel(pthread_self()); /* deferred: pending until a cancellation point */
	thread_rc = cudaMalloc(&p, 1 << 20);
	for (;;)
		pthread_testcancel();
	return NULL;
}

static pthread_barrier_t at_once;

static void *exit_seven(void *arg)
{
	void *p;
	if (cudaMalloc(&p, 1 << 20) != cudaSuccess)
		abort();
	pthread_barrier_wait(&at_once);
	exit(7);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int cuda = argc > 2 && !strcmp(argv[2], "cuda");
	if (!strcmp(mode, "exit") && argc > 2)
		return atoi(argv[2]);
	if (!strncmp(mode, "stuck-", 6)) {
		if ((cuda && !cuda_pair()) || !get_loader_stuck())
			return 2;
		if (!strcmp(mode, "stuck-exit"))
			_exit(5);
		if (!strcmp(mode, "stuck-_Exit"))
			_Exit(5);
		if (!strcmp(mode, "stuck-execv")) {
			char *const args[] = {argv[0], "exit", "5", NULL};
			execv("/proc/self/exe", args);
			perror("execv");
			return 1;
		}
	}
	if (!strcmp(mode, "cancel-first") || !strcmp(mode, "cancel-later")) {
		pthread_t t;
		void *ret;
		void *p;
		if (pthread_create(&t, NULL, cancel_self, mode[7] == 'l' ? "later" : NULL) ||
		    pthread_join(t, &ret))
			return 2;
		cudaError_t rc = cudaMalloc(&p, 1 << 20);
		printf("thread: cudaMalloc %d, %s; main: cudaMalloc %d\n", (int)thread_rc,
		       ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled", (int)rc);
		return rc == cudaSuccess && ret == PTHREAD_CANCELED ? 0 : 1;
	}
	if (!strcmp(mode, "exit-threads") && argc > 2) {
		int n = atoi(argv[2]);
		for (int i = 0; i < n; i++) {
			void *p;
			if (cudaMalloc(&p, 1 << 20) != cudaSuccess)
				return 2;
			if (i % 2)
				cudaFree(p);
		}
		pthread_barrier_init(&at_once, NULL, 3);
		for (int i = 0; i < 3; i++) {
			pthread_t t;
			if (pthread_create(&t, NULL, exit_seven, NULL))
				return 2;
		}
		for (;;)
			pause();
	}
	fprintf(stderr, "usage: ends exit N | stuck-exit|stuck-_Exit|stuck-execv [cuda] | "
			"cancel-first | cancel-later | exit-threads N\n");
	return 2;
}
