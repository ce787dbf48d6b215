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
 *            it can then open. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
	fprintf(stderr, "usage: fdclash stdout|stderr|daemon LOG|reuse LOG|nofile\n");
	return 2;
}
