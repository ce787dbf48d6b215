/* Harsh corners of a traced process (t-life-sigterm-exit, t-life-rlimit-as,
 * t-life-small-stack, t-api-dlerror). Usage: harsh MODE [ARGS]
 *   sigterm:          one cudaMalloc, prints "ready", then malloc/free on
 *                     main forever; a
 *                     SIGTERM handler calls exit(3) (the signal may land
 *                     inside malloc, holding its lock).
 *   rlimit-as MB:     allocates and frees through the runtime (deep stacks
 *                     to symbolize), prints a line to buffered stdout, sets
 *                     RLIMIT_AS to VmSize + MB, and returns 0.
 *   stack KIB DEPTH [late]: a thread with a KIB KiB stack, DEPTH frames
 *                     deep, makes a cudaMalloc/cudaFree pair; with "late",
 *                     main made the trace first. Prints "ok".
 *   paint KIB [late]: the same thread's stack painted, DEPTH 0: prints
 *                     the bytes its CUDA pair used (high-water mark).
 *   dlerror:          dlsym(RTLD_DEFAULT, "cuNoSuchCall"), prints dlerror().
 *   phdr-term exit|_exit: one cudaMalloc/cudaFree pair, then inside a
 *                     dl_iterate_phdr callback (the loader's lock held, as
 *                     an unwinder or profiler holds it) prints "inside" and
 *                     sleeps; a SIGTERM handler calls exit(3) or _exit(3).
 *   default-stack KIB: sets the default thread stack to KIB KiB
 *                     (pthread_setattr_default_np) before any CUDA call, then
 *                     allocates through deep stacks on main, prints a line
 *                     to buffered stdout, waits for a line on stdin, and
 *                     returns 0 (KIB 0: leaves the default, for ulimit -s).
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

static int cuda_pair(void)
{
	void *p;
	return cudaMalloc(&p, 1 << 20) == cudaSuccess && cudaFree(p) == cudaSuccess;
}

static void on_term(int sig)
{
	(void)sig;
	exit(3);
}

static int sigterm(void)
{
	signal(SIGTERM, on_term);
	void *p;
	if (cudaMalloc(&p, 1 << 20) != cudaSuccess)
		return 2;
	puts("ready"); /* the signal is sent once this is seen */
	fflush(stdout);
	for (volatile unsigned i = 0;; i++) {
		void *m = malloc(4096 + (i & 16383)); /* past tcache: the arena lock */
		free(m);
	}
}

/* Distinct call sites, so the trace has frames to name. */
static __attribute__((noinline)) int deep(int n)
{
	if (n == 0)
		return cuda_pair();
	int ok = deep(n - 1);
	__asm__ volatile("" ::: "memory"); /* no tail call */
	return ok;
}

static long vm_size_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmSize:", 7))
			kb = atol(line + 7);
	if (f)
		fclose(f);
	return kb;
}

static int rlimit_as(long mb)
{
	for (int i = 0; i < 20; i++)
		if (!deep(i))
			return 2;
	printf("buffered output survives\n"); /* stdout is a file: flushed by exit */
	long kb = vm_size_kb();
	struct rlimit rl = {(rlim_t)(kb * 1024 + mb * 1048576), (rlim_t)(kb * 1024 + mb * 1048576)};
	if (kb < 0 || setrlimit(RLIMIT_AS, &rl) != 0)
		return 2;
	return 0;
}

struct stack_job {
	int depth, ok;
	size_t size, used;
	char *lo;
};

static __attribute__((noinline)) int nest(int n)
{
	volatile char pad[64]; /* a modest frame, as real code has */
	pad[0] = (char)n;
	int ok = n ? nest(n - 1) : cuda_pair();
	return ok + pad[0] - (char)n;
}

static void *stack_thread(void *arg)
{
	struct stack_job *j = arg;
	j->ok = nest(j->depth);
	return NULL;
}

/* Bytes of the painted region below the thread's frames touched. */
static void *paint_thread(void *arg)
{
	struct stack_job *j = arg;
	/* below this frame and its callee's prologue */
	char *top = (char *)((uintptr_t)__builtin_frame_address(0) - 512);
	memset(j->lo, 0xa5, (size_t)(top - j->lo));
	j->ok = cuda_pair();
	char *p = j->lo;
	while (p < top && (unsigned char)*p == 0xa5)
		p++;
	j->used = (size_t)(top - p);
	return NULL;
}

static int stack_run(long kib, int depth, int late, int paint)
{
	if (late && !cuda_pair())
		return 2;
	struct stack_job j = {.depth = depth, .size = (size_t)kib * 1024};
	pthread_attr_t a;
	pthread_attr_init(&a);
	/* Our own memory: we know where its bottom is, for painting. */
	j.lo = aligned_alloc(4096, j.size);
	if (!j.lo || pthread_attr_setstack(&a, j.lo, j.size) != 0)
		return 2;
	pthread_t t;
	if (pthread_create(&t, &a, paint ? paint_thread : stack_thread, &j) != 0)
		return 2;
	pthread_join(t, NULL);
	if (!j.ok)
		return 1;
	if (paint)
		printf("%zu\n", j.used);
	else
		puts("ok");
	return 0;
}

static int term_with_exit;

static void on_term_any(int sig)
{
	(void)sig;
	if (term_with_exit)
		exit(3);
	_exit(3);
}

static int stay_inside(struct dl_phdr_info *info, size_t size, void *data)
{
	static const char inside[] = "inside\n";
	if (write(1, inside, sizeof inside - 1) != sizeof inside - 1)
		return 1;
	for (int i = 0; i < 600; i++) { /* 60 s: the test's SIGTERM comes long before */
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
	}
	return 1;
}

static int phdr_term(const char *how)
{
	term_with_exit = !strcmp(how, "exit");
	signal(SIGTERM, on_term_any);
	if (!cuda_pair())
		return 2;
	dl_iterate_phdr(stay_inside, NULL);
	return 4; /* not signalled in time */
}

static int default_stack(long kib)
{
	pthread_attr_t a;
	if (kib > 0 &&
	    (pthread_attr_init(&a) != 0 || pthread_attr_setstacksize(&a, (size_t)kib * 1024) != 0 ||
	     pthread_setattr_default_np(&a) != 0))
		return 2;
	for (int i = 0; i < 20; i++)
		if (!deep(i))
			return 2;
	printf("buffered output survives\n"); /* stdout is a file: flushed by exit */
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		return 2;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *mode = argv[1];
	if (!strcmp(mode, "sigterm"))
		return sigterm();
	if (!strcmp(mode, "rlimit-as") && argc > 2)
		return rlimit_as(atol(argv[2]));
	if (!strcmp(mode, "stack") && argc > 3)
		return stack_run(atol(argv[2]), atoi(argv[3]), argc > 4, 0);
	if (!strcmp(mode, "paint") && argc > 2)
		return stack_run(atol(argv[2]), 0, argc > 3, 1);
	if (!strcmp(mode, "phdr-term") && argc > 2)
		return phdr_term(argv[2]);
	if (!strcmp(mode, "default-stack") && argc > 2)
		return default_stack(atol(argv[2]));
	if (!strcmp(mode, "dlerror")) {
		void *f = dlsym(RTLD_DEFAULT, "cuNoSuchCall");
		const char *e = dlerror();
		printf("%p %s\n", f, e ? e : "(no error)");
		return 0;
	}
	return 2;
}
