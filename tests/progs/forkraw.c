/* A child made without fork's handlers: `_Fork()` (glibc 2.34+) or a raw
 * clone(SIGCHLD). The child makes PAIRS cudaMalloc/cudaFree pairs and
 * leaves by _exit; the parent makes 2 allocations before and after.
 * fork+clone: a child made by fork() (traced) does the same with clone.
 * Usage: forkraw _Fork|clone|fork+clone PAIRS. Exit 77: _Fork is not
 * available. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

static void pair(void)
{
	void *p;
	if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess)
		_exit(2);
}

static int run(const char *how, int pairs)
{
	pid_t pid;
	pair();
	if (!strcmp(how, "_Fork")) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
		pid = _Fork();
#else
		puts("no _Fork");
		return 77;
#endif
	} else if (!strcmp(how, "clone")) {
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	} else if (!strcmp(how, "fork+clone")) {
		pid = fork();
		if (pid == 0) {
			fflush(stdout);
			int rc = run("clone", pairs);
			fflush(stdout);
			_exit(rc);
		}
		pairs = 0;
	} else {
		return 2;
	}
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		for (int i = 0; i < pairs; i++)
			pair();
		_exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return 2;
	pair();
	printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	return run(argv[1], atoi(argv[2]));
}
