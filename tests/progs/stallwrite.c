/* A stalled disk, made certain (t-life-stall). The tracer's writes reach
 * `write`, defined here (the program comes first in the lookup scope;
 * -rdynamic exports it). Once armed, the flush thread's next write of this
 * process does not return until the program releases it: a frozen file
 * system or a hung NFS mount, as the flush thread sees one. The program
 * waits for that write to be under way before it goes on, so every step
 * below happens while the tracer's write is stuck; nothing is timed.
 *
 * Usage: stallwrite MODE
 *   fork:  forks while the write is stuck (the child makes 5 pairs of its
 *          own and exits 0), waits for it, then releases the write.
 *   full N: makes N more cudaMalloc/cudaFree pairs while the write is
 *          stuck (far more than a ring holds), then releases it.
 *   exit:  exits (status 0) while the write is stuck, never releasing it.
 *   late:  (stallwrite-late, linked with liblate.so, whose destructor runs
 *          after the tracer's and makes CUDA calls) 10 pairs, then exits:
 *          a destructor of the program, after every atexit handler, arms
 *          the stall, so the final flush's write sticks and liblate's
 *          events come after the final trailer.
 * Prints "pairs=P" (this process's pairs) on stdout before it ends. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
ssize_t __write(int fd, const void *buf, size_t n); /* glibc's, under the name we take */

static pid_t armed;	   /* this process's flush thread's writes stall */
static int stuck, release; /* a write is stuck; let it go */
static long pairs;

static void nap(void)
{
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
}

static int on_flush_thread(void)
{
	char name[16] = "";
	prctl(PR_GET_NAME, name, 0, 0, 0);
	return strcmp(name, "gmt-flush") == 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	if (__atomic_load_n(&armed, __ATOMIC_SEQ_CST) == getpid() && on_flush_thread()) {
		__atomic_store_n(&stuck, 1, __ATOMIC_SEQ_CST);
		while (!__atomic_load_n(&release, __ATOMIC_SEQ_CST))
			nap();
		__atomic_store_n(&stuck, 0, __ATOMIC_SEQ_CST);
	}
	return __write(fd, buf, n);
}

#ifdef STALL_LATE
static int late_mode;

/* The program's destructors run after every atexit handler and before
 * the tracer's. What the atexit handlers recorded is written first
 * (gpumemtrace_flush_v1), so the flush thread's next write is the final
 * flush's. */
__attribute__((destructor)) static void arm_final(void)
{
	if (!late_mode)
		return;
	int (*flush)(unsigned) = (int (*)(unsigned))dlsym(RTLD_DEFAULT, "gpumemtrace_flush_v1");
	if (flush)
		flush(5000);
	__atomic_store_n(&armed, getpid(), __ATOMIC_SEQ_CST);
}
#endif

static void churn(long n)
{
	for (long i = 0; i < n; i++) {
		void *p;
		if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess) {
			fprintf(stderr, "stallwrite: cuda call failed\n");
			exit(2);
		}
		pairs++;
	}
}

/* Arms the stall and makes events until the flush thread's write is in it. */
static void stall(void)
{
	__atomic_store_n(&armed, getpid(), __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&stuck, __ATOMIC_SEQ_CST)) {
		churn(1);
		nap();
	}
}

static void let_go(void)
{
	__atomic_store_n(&release, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&stuck, __ATOMIC_SEQ_CST))
		nap();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	churn(10);
	if (!strcmp(mode, "fork")) {
		stall();
		pid_t c = fork();
		if (c == 0) {
			pairs = 0;
			churn(5);
			printf("child pairs=%ld\n", pairs);
			exit(0);
		}
		int status = 0;
		if (c < 0 || waitpid(c, &status, 0) != c || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			fprintf(stderr, "stallwrite: the child failed (status %d)\n", status);
			return 3;
		}
		let_go();
		churn(10);
	} else if (!strcmp(mode, "full") && argc > 2) {
		stall();
		churn(atol(argv[2]));
		let_go();
		churn(10);
	} else if (!strcmp(mode, "exit")) {
		stall();
#ifdef STALL_LATE
	} else if (!strcmp(mode, "late")) {
		late_mode = 1;
		churn(10);
#endif
	} else {
		fprintf(stderr, "usage: stallwrite fork|full N|exit|late\n");
		return 2;
	}
	printf("pairs=%ld\n", pairs);
	fflush(stdout);
	return 0;
}
