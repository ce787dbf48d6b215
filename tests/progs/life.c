/* Process-life scenarios for the integration tests: fork, exec, _exit,
 * kill -9, late frees, a moving working directory. Usage: life MODE [N] [DIR LIB] */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

static void allocs(int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		void *p;
		if (cudaMalloc(&p, size) != cudaSuccess) {
			fprintf(stderr, "cudaMalloc failed\n");
			exit(2);
		}
		if (i % 2)
			cudaFree(p);
	}
}

static void nap_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static void *late_ptr;

static void exit_from_handler(int sig)
{
	_exit(0); /* async-signal-safe: handlers do this on SIGTERM */
}

static void late_free(void)
{
	cudaFree(late_ptr); /* after our destructor? must still be counted */
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	int n = argc > 2 ? atoi(argv[2]) : 10;
	if (!strcmp(mode, "exit")) {
		allocs(n, 1 << 20);
		return 0;
	}
	if (!strcmp(mode, "chdir") && argc > 4) {
		/* Loaded by relative paths, then the working directory moves
		 * before the first call; a library loads by a relative path;
		 * the directory moves again before the tracer looks at it. */
		if (chdir(argv[3]) != 0)
			return 2;
		allocs(n, 1 << 20);
		if (!dlopen(argv[4], RTLD_NOW) || chdir("/") != 0)
			return 2;
		allocs(n, 1 << 20);
		return 0;
	}
	if (!strcmp(mode, "_exit")) {
		allocs(n, 1 << 20);
		_exit(3);
	}
	if (!strcmp(mode, "kill")) {
		allocs(n, 1 << 20);
		nap_ms(500); /* well past a GPUMEMTRACE_FLUSH_MS=20 flush */
		raise(SIGKILL);
	}
	if (!strcmp(mode, "fork") || !strcmp(mode, "fork-late")) {
		allocs(n, 1 << 20);
		if (mode[4]) /* late: our threads are up and sampling at the fork */
			nap_ms(50);
		pid_t pid = fork();
		if (pid == 0) {
			allocs(2 * n, 2 << 20);
			exit(0);
		}
		int status;
		waitpid(pid, &status, 0);
		allocs(n, 1 << 20);
		printf("child exited %d\n", WEXITSTATUS(status));
		return 0;
	}
	if (!strcmp(mode, "fork-nocuda")) {
		/* A child that makes no CUDA call leaves no trace behind. */
		allocs(n, 1 << 20);
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		waitpid(pid, NULL, 0);
		return 0;
	}
	if (!strcmp(mode, "exec")) {
		allocs(n, 1 << 20);
		char count[16];
		snprintf(count, sizeof count, "%d", 3 * n);
		execl("/proc/self/exe", argv[0], "exit", count, (char *)NULL);
		perror("execl");
		return 1;
	}
	if (!strcmp(mode, "exec-long")) { /* execl's list past what it keeps on the stack */
#define X10 "x", "x", "x", "x", "x", "x", "x", "x", "x", "x"
		allocs(n, 1 << 20);
		char count[16];
		snprintf(count, sizeof count, "%d", 3 * n);
		errno = 0;
		execl("/nonexistent/program", "x", X10, X10, X10, X10, X10, X10, X10, (char *)NULL);
		if (errno != ENOENT) {
			fprintf(stderr, "long exec failed with errno %d, not ENOENT\n", errno);
			return 1;
		}
		execl("/proc/self/exe", argv[0], "exit", count, X10, X10, X10, X10, X10, X10, X10,
		      (char *)NULL);
		perror("execl");
		return 1;
#undef X10
	}
	if (!strcmp(mode, "exec-fail") || !strcmp(mode, "exec-fail-kill")) {
		allocs(n, 1 << 20);
		errno = 0;
		execl("/nonexistent/program", "x", (char *)NULL);
		if (errno != ENOENT) {
			fprintf(stderr, "exec failed with errno %d, not ENOENT\n", errno);
			return 1;
		}
		allocs(n, 1 << 20); /* tracing goes on after a failed exec */
		if (mode[9]) {	    /* kill: only the flush thread can have written those */
			nap_ms(500);
			raise(SIGKILL);
		}
		return 0;
	}
	if (!strcmp(mode, "late")) {
		allocs(n, 1 << 20);
		cudaMalloc(&late_ptr, 4 << 20);
		atexit(late_free);
		return 0;
	}
	if (!strcmp(mode, "sigexit")) {
		/* _exit from a signal handler that interrupts malloc: the tracer's
		 * _exit hook must not malloc or lock in the handler. */
		allocs(n, 1 << 20);
		signal(SIGALRM, exit_from_handler);
		struct itimerval it = {{0, 0}, {0, 2000}};
		setitimer(ITIMER_REAL, &it, NULL);
		for (unsigned i = 0;; i++)
			free(malloc(64 + i % 4096));
	}
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}
