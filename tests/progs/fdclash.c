/* A program whose descriptors meet the trace's. Usage: fdclash MODE [ARG]
 *   stdout:  allocates, prints a line and flushes stdout: exits 3 when the
 *            flush fails (run it with stdout closed: it must fail, traced
 *            or not, and nothing it prints may land in the trace).
 *   stderr:  the same on stderr.
 *   daemon LOG: allocates (the trace is made), closes fds 3-1023 as a daemon
 *            does, opens LOG (it gets 3) and writes lines to it between
 *            more allocations; the trace must never write into LOG.
 *   reuse LOG: allocates, then dup2()s LOG onto the trace's own descriptor
 *            (found in /proc/self/fd), and allocates on.
 *   nofile:  sets RLIMIT_NOFILE to 4, allocates, and prints how many files
 *            it can then open.
 *   closeall DIR: allocates, closes every descriptor (close_range(0, ~0)),
 *            opens DIR/0, DIR/1 and DIR/2 (it gets 0, 1 and 2: its stdin,
 *            stdout and stderr now) and writes lines to 1 and 2 between
 *            more allocations; with "unlink" as a third argument it
 *            removes the trace first (the tracer must say so nowhere).
 *   stderr-swap LOG: closes stderr and opens LOG (it gets 2) before its
 *            first CUDA call, then allocates and writes a line to LOG.
 *   crowd DIR N: (DIR absolute) allocates, closes every descriptor from 3
 *            up, opens DIR/0, DIR/1 ... read-write until one gets N-1 or
 *            more (they take 3 .. N-1: the numbers the tracer and libunwind
 *            had), a line in each, allocates more, then adds a line to
 *            each: exits 5 if one is no longer its file (closed, reused),
 *            6 if its bytes are not its two lines (read or written by
 *            someone else). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cuda-types.h"

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);

static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = NULL;
		if (cudaMalloc(&p, 4096 + (size_t)i) != cudaSuccess || cudaFree(p) != cudaSuccess) {
			fprintf(stderr, "fdclash: cuda call failed\n");
			exit(2);
		}
	}
}

static int trace_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;
	while (d && (e = readdir(d))) {
		char p[300], l[4096];
		snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
		ssize_t k = readlink(p, l, sizeof l - 1);
		l[k > 0 ? k : 0] = '\0';
		if (strstr(l, "gpumemtrace.") && strstr(l, ".gmt"))
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "stdout") || !strcmp(mode, "stderr")) {
		FILE *f = !strcmp(mode, "stdout") ? stdout : stderr;
		churn(10);
		int bad = fprintf(f, "hello from the program\n") < 0;
		bad |= fflush(f) != 0;
		churn(10);
		return bad ? 3 : 0;
	}
	if ((!strcmp(mode, "daemon") || !strcmp(mode, "reuse")) && argc > 2) {
		churn(10);
		int log;
		if (!strcmp(mode, "daemon")) {
			for (int fd = 3; fd < 1024; fd++)
				close(fd);
			log = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
		} else {
			int t = trace_fd();
			log = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (t >= 0 && log >= 0 && dup2(log, t) == t) {
				close(log);
				log = t;
			}
		}
		if (log < 0)
			return 2;
		for (int i = 0; i < 5; i++) {
			char line[64];
			int n = snprintf(line, sizeof line, "log line %d\n", i);
			if (write(log, line, (size_t)n) != n)
				return 2;
			churn(2000); /* more than a chunk's worth: the flush thread writes */
		}
		return 0;
	}
	if (!strcmp(mode, "closeall") && argc > 2) {
		churn(10);
		char trace[4096] = "";
		int t = trace_fd();
		if (argc > 3 && t >= 0) {
			char p[64];
			snprintf(p, sizeof p, "/proc/self/fd/%d", t);
			ssize_t k = readlink(p, trace, sizeof trace - 1);
			trace[k > 0 ? k : 0] = '\0';
		}
		/* the raw call: glibc's close_range wrapper is 2.34+ */
		if (syscall(SYS_close_range, 0u, ~0u, 0u) != 0)
			for (int fd = 0; fd < 65536; fd++)
				close(fd);
		for (int i = 0; i < 3; i++) {
			char p[4200];
			snprintf(p, sizeof p, "%s/%d", argv[2], i);
			if (open(p, O_RDWR | O_CREAT | O_TRUNC, 0644) != i)
				_exit(4);
		}
		if (trace[0])
			unlink(trace);
		for (int i = 0; i < 5; i++) {
			dprintf(1, "out line %d\n", i);
			dprintf(2, "err line %d\n", i);
			churn(2000); /* more than a chunk's worth: the flush thread writes */
		}
		return 0;
	}
	if (!strcmp(mode, "crowd") && argc > 3) {
		int n = atoi(argv[3]), top = 0;
		churn(10);
		if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
			for (int fd = 3; fd < 65536; fd++)
				close(fd);
		/* file k gets whatever number open() gives (a tracer thread's
		 * own open may take one for a moment), up to N-1 */
		static int fds[4096];
		while (top < 4096 && (top == 0 || fds[top - 1] < n - 1)) {
			char p[4200];
			snprintf(p, sizeof p, "%s/%d", argv[2], top);
			fds[top] = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
			if (fds[top] < 0 || dprintf(fds[top], "file %d\n", top) < 0)
				return 4;
			top++;
		}
		for (int i = 0; i < 3; i++)
			churn(2000);
		for (int k = 0; k < top; k++) {
			char p[4200], l[4200];
			snprintf(p, sizeof p, "/proc/self/fd/%d", fds[k]);
			ssize_t len = readlink(p, l, sizeof l - 1);
			l[len > 0 ? len : 0] = '\0';
			snprintf(p, sizeof p, "%s/%d", argv[2], k);
			if (len <= 0 || strcmp(l, p) != 0 || dprintf(fds[k], "again\n") != 6) {
				fprintf(stderr, "fdclash: file %d, fd %d, is now %s\n", k, fds[k],
					l);
				return 5;
			}
			char want[64], got[64] = "";
			int w = snprintf(want, sizeof want, "file %d\nagain\n", k);
			if (pread(fds[k], got, sizeof got - 1, 0) != w ||
			    memcmp(got, want, (size_t)w) != 0) {
				fprintf(stderr, "fdclash: file %d, fd %d, holds other bytes\n", k,
					fds[k]);
				return 6; /* someone else read or wrote it */
			}
		}
		return 0;
	}
	if (!strcmp(mode, "stderr-swap") && argc > 2) {
		close(2);
		if (open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2)
			return 4;
		churn(10);
		dprintf(2, "the program's line\n");
		return 0;
	}
	if (!strcmp(mode, "nofile")) {
		struct rlimit rl = {4, 4};
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			return 2;
		churn(10);
		int n = 0;
		while (n < 8 && open("/dev/null", O_RDONLY) >= 0)
			n++;
		printf("opened %d\n", n);
		return 0;
	}
	fprintf(stderr, "usage: fdclash stdout|stderr|daemon LOG|reuse LOG|nofile|closeall DIR "
			"[unlink]|stderr-swap LOG|crowd DIR N\n");
	return 2;
}
