/* The exit wake-up, forced (t-life-exit-wakeup). Usage: exitwake MODE
 * (exit, _exit or return).
 *
 * The flush thread reads its wake word, then (maybe) sleeps on it. A final
 * flush asked for between its check of the request and that read was a
 * lost wake-up: it slept its whole period (1 s idle, 60 s with
 * GPUMEMTRACE_SAMPLE_MS=0) with the request pending, and the exit waited
 * for it (up to 10 s, then left without a trailer). Timing makes that
 * window rare; this program makes it certain, and the lost wake-up
 * visible without measuring any time:
 *
 * - `write`, defined here, is what the tracer's writes reach (the program
 *   comes first in the lookup scope; -rdynamic exports it). Once armed, the
 *   flush thread's first write waits until the exit's request has come:
 *   that write is inside a flush cycle, after the cycle read the request.
 * - `syscall`, also defined here, sees the futex calls: the flush thread's
 *   first timed FUTEX_WAIT names its wake word; the main thread's wake of
 *   that word once exiting is the exit's request. A FUTEX_WAIT of the flush
 *   thread on the word after that request, at the value the word holds,
 *   would sleep with the request pending: printed as "LOST WAKE-UP" (and
 *   not slept: the wait is made to return at once, so the test stays fast
 *   even against the bug).
 * stderr gets "ordered" when the order was forced, and the tracer's
 * trailer must follow. */
#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
ssize_t __write(int fd, const void *buf, size_t n); /* glibc's, under the name we take */

static uint32_t *wake_word; /* the flush thread's wake word */
static int armed, exiting;
static uint32_t in_write, asked; /* futex words of ours */

/* The kernel's syscall, straight: libc's is the one we replace, and the
 * tracer calls ours from its constructor, before any lookup could run. */
static long real_syscall(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
			 x2 __asm__("x2") = c, x3 __asm__("x3") = d, x4 __asm__("x4") = e,
			 x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	ret = x0;
#else
#error "exitwake: add this architecture's syscall"
#endif
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

static void say(const char *s)
{
	__write(2, s, strlen(s));
}

static int on_flush_thread(void)
{
	char name[16] = "";
	prctl(PR_GET_NAME, name, 0, 0, 0);
	return strcmp(name, "gmt-flush") == 0;
}

static void set_word(uint32_t *w)
{
	__atomic_store_n(w, 1, __ATOMIC_SEQ_CST);
	real_syscall(SYS_futex, (long)w, FUTEX_WAKE, INT32_MAX, 0, 0, 0);
}

/* Waits for *w to become 1, at most ms (a bound for a broken tracer, never
 * reached when it works: then the order was not forced, and we say so). */
static int wait_word(uint32_t *w, long ms)
{
	for (long i = 0; i < ms / 10 && !__atomic_load_n(w, __ATOMIC_SEQ_CST); i++) {
		struct timespec ts = {0, 10000000};
		real_syscall(SYS_futex, (long)w, FUTEX_WAIT, 0, (long)&ts, 0, 0);
	}
	return __atomic_load_n(w, __ATOMIC_SEQ_CST);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static int held;
	if (__atomic_load_n(&armed, __ATOMIC_SEQ_CST) && !held && on_flush_thread()) {
		held = 1;
		set_word(&in_write);
		if (wait_word(&asked, 120000))
			say("exitwake: ordered\n");
	}
	return __write(fd, buf, n);
}

/* How many arguments the syscalls the tracer and the simulated CUDA make
 * take: reading more than were passed is undefined (ASan's
 * stack-buffer-underflow), reading fewer would drop some. */
static int args_of(long n)
{
	switch (n) {
	case SYS_gettid:
		return 0;
	case SYS_exit_group:
		return 1;
	case SYS_clock_gettime:
		return 2;
	case SYS_membarrier:
		return 3;
	default:
		return 6;
	}
}

long syscall(long n, ...)
{
	va_list ap;
	long a[6] = {0};
	va_start(ap, n);
	for (int i = 0; i < args_of(n); i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_futex) {
		uint32_t *w = (uint32_t *)a[0];
		int op = (int)a[1] & FUTEX_CMD_MASK;
		if (op == FUTEX_WAIT && a[3] && on_flush_thread()) {
			if (!wake_word)
				wake_word = w;
			if (w == wake_word && __atomic_load_n(&asked, __ATOMIC_SEQ_CST) &&
			    (uint32_t)a[2] == __atomic_load_n(w, __ATOMIC_SEQ_CST)) {
				say("exitwake: LOST WAKE-UP: the flush thread slept with the "
				    "final flush asked for\n");
				a[2] = (long)((uint32_t)a[2] + 1); /* return at once instead */
			}
		} else if (op == FUTEX_WAKE && w == wake_word && wake_word &&
			   __atomic_load_n(&exiting, __ATOMIC_SEQ_CST) &&
			   real_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0) == getpid()) {
			set_word(&asked);
		}
	}
	return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	void *p;
	if (cudaMalloc(&p, 1 << 20) != cudaSuccess)
		return 2;
	cudaFree(p);
	__atomic_store_n(&armed, 1, __ATOMIC_SEQ_CST);
	if (cudaMalloc(&p, 1 << 20) != cudaSuccess) /* drained, written: the write waits */
		return 2;
	if (!wait_word(&in_write, 120000))
		say("exitwake: the flush thread never wrote\n");
	__atomic_store_n(&exiting, 1, __ATOMIC_SEQ_CST);
	if (!strcmp(mode, "_exit"))
		_exit(0);
	if (!strcmp(mode, "exit"))
		exit(0);
	return 0;
}
