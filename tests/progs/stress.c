/* Load for the tracer, with exact expected counts (tests/integration/t-stress-*.sh).
 * usage: stress MODE ARGS
 *   threads N M   N threads, M events each (M/2 cudaMalloc, M/2 cudaFree):
 *                 random sizes, up to 64 live per thread, freed in random order
 *   churn N       N short-lived threads (8 at a time), each allocates 2, frees 1
 *                 and exits; main frees the leftovers: 4*N events
 *   forks N       N children (4 at a time), each makes 10 events and ends by
 *                 exit() or _exit() in turn; the parent makes 2 per child
 *   exec D        2 events, then exec itself with D-1, down to 0: D+1 images
 *   handoff M     main alone makes 1 + M cudaMalloc+cudaFree pairs (the
 *                 first 50 ms before the rest), then M more
 *                 cudaMallocs whose blocks a second thread frees as they come
 *                 (through a queue): main's allocations reuse what the other
 *                 thread freed, after the tracer stops being sole-caller
 *   sabotage WHAT [R]  R rounds (3) of 100 events, then WHAT (delete,
 *                 truncate or none) to ./gpumemtrace.PID.gmt if it exists,
 *                 R more rounds
 * The last line is "stress MODE ... failures=K"; the exit code is K != 0. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

enum { MAX_LIVE = 64 };

static long per_thread;

static uint64_t next_rand(uint64_t *s)
{
	/* xorshift64: deterministic per thread, no shared state */
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *random_worker(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
	void *live[MAX_LIVE];
	int nlive = 0;
	long allocs_left = per_thread / 2, frees_left = per_thread / 2, failures = 0;
	while (allocs_left || frees_left) {
		uint64_t r = next_rand(&seed);
		/* nlive + allocs_left == frees_left throughout: every block is freed */
		int can_alloc = allocs_left > 0 && nlive < MAX_LIVE;
		if (nlive == 0 || (can_alloc && (r & 1))) {
			/* 1 B .. 1 MiB, skewed small like real workloads */
			size_t size = 1 + (size_t)(r >> 8) % ((r & 2) ? 1024 : (1u << 20));
			if (cudaMalloc(&live[nlive], size) != cudaSuccess) {
				failures++;
				frees_left--;
			} else {
				nlive++;
			}
			allocs_left--;
		} else {
			int i = (int)((r >> 16) % (uint64_t)nlive);
			if (cudaFree(live[i]) != cudaSuccess)
				failures++;
			live[i] = live[--nlive];
			frees_left--;
		}
	}
	return (void *)failures;
}

static void *short_worker(void *arg)
{
	void **keep = arg, *p;
	long failures = 0;
	failures += cudaMalloc(&p, 4096) != cudaSuccess;
	failures += cudaMalloc(keep, 8192) != cudaSuccess;
	failures += cudaFree(p) != cudaSuccess;
	return (void *)failures;
}

static long run_threads(long n, void *(*fn)(void *), void **args, long batch)
{
	pthread_t *t = calloc((size_t)batch, sizeof *t);
	long failures = 0;
	for (long done = 0; done < n; done += batch) {
		long k = n - done < batch ? n - done : batch;
		for (long i = 0; i < k; i++)
			if (pthread_create(&t[i], NULL, fn,
					   args ? &args[done + i] : (void *)(done + i)))
				return -1;
		for (long i = 0; i < k; i++) {
			void *f;
			pthread_join(t[i], &f);
			failures += (long)f;
		}
	}
	free(t);
	return failures;
}

static long rounds(int n)
{
	long failures = 0;
	for (int r = 0; r < n; r++) {
		for (int i = 0; i < 50; i++) {
			void *p;
			failures += cudaMalloc(&p, (size_t)(i + 1) << 10) != cudaSuccess;
			failures += cudaFree(p) != cudaSuccess;
		}
		struct timespec ts = {0, 150 * 1000000}; /* past a default 100 ms flush */
		nanosleep(&ts, NULL);
	}
	return failures;
}

/* handoff: main allocates, the freer frees, through a queue under a mutex. */
enum { QUEUE = 64 };
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void *p[QUEUE];
	long head, tail, total;
} q = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void *freer(void *arg)
{
	long failures = 0;
	(void)arg;
	for (long done = 0; done < q.total; done++) {
		pthread_mutex_lock(&q.lock);
		while (q.tail == q.head)
			pthread_cond_wait(&q.cond, &q.lock);
		void *p = q.p[q.tail++ % QUEUE];
		pthread_cond_broadcast(&q.cond);
		pthread_mutex_unlock(&q.lock);
		failures += cudaFree(p) != cudaSuccess;
	}
	return (void *)failures;
}

static long handoff(long m)
{
	long failures = 0;
	void *p = NULL;
	/* The trace starts; the TSC line is fitted 20 ms later (preload/clock.c). */
	failures += cudaMalloc(&p, 4096) != cudaSuccess;
	failures += cudaFree(p) != cudaSuccess;
	struct timespec ts = {0, 50 * 1000000};
	nanosleep(&ts, NULL);
	for (long i = 0; i < m; i++) {
		p = NULL;
		failures += cudaMalloc(&p, 4096) != cudaSuccess;
		failures += cudaFree(p) != cudaSuccess;
	}
	q.total = m;
	pthread_t t;
	if (pthread_create(&t, NULL, freer, NULL))
		return -1;
	for (long i = 0; i < m; i++) {
		p = NULL;
		if (cudaMalloc(&p, 4096) != cudaSuccess)
			failures++; /* the freer's cudaFree(NULL) still counts */
		pthread_mutex_lock(&q.lock);
		while (q.head - q.tail == QUEUE)
			pthread_cond_wait(&q.cond, &q.lock);
		q.p[q.head++ % QUEUE] = p;
		pthread_cond_broadcast(&q.cond);
		pthread_mutex_unlock(&q.lock);
	}
	void *f;
	pthread_join(t, &f);
	return failures + (long)f;
}

static int child(long i)
{
	void *p[5];
	int failures = 0;
	for (int k = 0; k < 5; k++)
		failures += cudaMalloc(&p[k], (size_t)(k + 1) << 12) != cudaSuccess;
	for (int k = 4; k >= 0; k--)
		failures += cudaFree(p[k]) != cudaSuccess;
	if (i % 2)
		_exit(failures ? 1 : 0);
	exit(failures ? 1 : 0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? strtol(argv[2], NULL, 0) : 0;
	long failures = 0;
	if (!strcmp(mode, "threads") && argc > 3) {
		per_thread = strtol(argv[3], NULL, 0) & ~1L;
		failures = run_threads(n, random_worker, NULL, n);
		printf("stress threads %ld events=%ld failures=%ld\n", n, n * per_thread, failures);
	} else if (!strcmp(mode, "handoff") && n > 0) {
		failures = handoff(n);
		printf("stress handoff %ld events=%ld failures=%ld\n", n, 4 * n + 2, failures);
	} else if (!strcmp(mode, "churn")) {
		void **keep = calloc((size_t)n, sizeof *keep);
		failures = run_threads(n, short_worker, keep, 8);
		for (long i = 0; i < n; i++)
			failures += cudaFree(keep[i]) != cudaSuccess;
		free(keep);
		printf("stress churn %ld events=%ld failures=%ld\n", n, 4 * n, failures);
	} else if (!strcmp(mode, "forks")) {
		for (long done = 0; done < n; done += 4) {
			pid_t pids[4];
			int k = 0;
			for (; k < 4 && done + k < n; k++) {
				void *p;
				failures += cudaMalloc(&p, 1 << 20) != cudaSuccess;
				pids[k] = fork();
				if (pids[k] == 0)
					child(done + k);
				failures += pids[k] < 0;
				failures += cudaFree(p) != cudaSuccess;
			}
			for (int j = 0; j < k; j++) {
				int st;
				if (waitpid(pids[j], &st, 0) < 0 || !WIFEXITED(st) ||
				    WEXITSTATUS(st))
					failures++;
			}
		}
		printf("stress forks %ld failures=%ld\n", n, failures);
	} else if (!strcmp(mode, "exec")) {
		void *p;
		failures += cudaMalloc(&p, 1 << 20) != cudaSuccess;
		failures += cudaFree(p) != cudaSuccess;
		printf("stress exec %ld failures=%ld\n", n, failures);
		fflush(stdout);
		if (n > 0 && !failures) {
			char next[24];
			snprintf(next, sizeof next, "%ld", n - 1);
			execl("/proc/self/exe", argv[0], "exec", next, (char *)NULL);
			perror("execl");
			return 1;
		}
	} else if (!strcmp(mode, "sabotage") && argc > 2) {
		int r = argc > 3 ? atoi(argv[3]) : 3;
		failures += rounds(r);
		char path[64];
		snprintf(path, sizeof path, "gpumemtrace.%d.gmt", (int)getpid());
		if (!strcmp(argv[2], "delete"))
			unlink(path);
		else if (!strcmp(argv[2], "truncate"))
			truncate(path, 100);
		failures += rounds(r);
		printf("stress sabotage %s failures=%ld\n", argv[2], failures);
	} else {
		fprintf(stderr,
			"usage: stress threads N M | handoff M | churn N | forks N | exec D |\n"
			"       sabotage WHAT [R]\n");
		return 2;
	}
	return failures != 0;
}
