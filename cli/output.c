/* Where a command writes a file: see output.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/output.h"
#include "analysis/diag.h"
#include "reader/xalloc.h"

/* The temporary file being written, removed if a signal ends the command
 * (one at a time: a command writes one file). */
static char *volatile pending_tmp;
static struct sigaction old_act[3];
static const int cleanup_sigs[3] = {SIGINT, SIGTERM, SIGHUP};

static void on_signal(int sig)
{
	char *tmp = pending_tmp;
	if (tmp)
		unlink(tmp);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void watch(char *tmp)
{
	pending_tmp = tmp;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(cleanup_sigs[i], &sa, &old_act[i]);
}

static void unwatch(void)
{
	for (int i = 0; i < 3; i++)
		sigaction(cleanup_sigs[i], &old_act[i], NULL);
	pending_tmp = NULL;
}

/* Which input st is, or -1. */
static int input_of(const struct stat *st, const char *const *inputs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct stat in;
		if (stat(inputs[i], &in) == 0 && in.st_dev == st->st_dev && in.st_ino == st->st_ino)
			return (int)i;
	}
	return -1;
}

int cli_out_open(struct cli_out *o, const char *cmd, const char *path, const char *const *inputs,
		 size_t ninputs)
{
	memset(o, 0, sizeof(*o));
	struct stat st;
	int k;
	if (!path || strcmp(path, "-") == 0) {
		if (fstat(STDOUT_FILENO, &st) == 0 && (k = input_of(&st, inputs, ninputs)) >= 0) {
			say_error(cmd, "standard output is the trace %s: give -o FILE", inputs[k]);
			return EXIT_USAGE;
		}
		o->f = stdout;
		return -1;
	}
	o->path = path;
	if (stat(path, &st) == 0) {
		if ((k = input_of(&st, inputs, ninputs)) >= 0) {
			if (strcmp(path, inputs[k]) == 0)
				say_error(cmd,
					  "%s is the trace being read: choose another output file",
					  path);
			else
				say_error(
				    cmd,
				    "%s is the same file as the trace %s: choose another output "
				    "file",
				    path, inputs[k]);
			return EXIT_USAGE;
		}
		if (!S_ISREG(st.st_mode)) { /* a FIFO, /dev/null, a terminal: as it is */
			o->f = fopen(path, "w");
			if (!o->f) {
				say_error(cmd, "cannot write %s: %s", path, strerror(errno));
				return EXIT_INPUT;
			}
			return -1;
		}
	}
	/* a symlink stays a symlink: its target is what gets replaced */
	struct stat lst;
	char *real = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) ? realpath(path, NULL) : NULL;
	o->dest = real ? real : xstrdup(path);
	const char *slash = strrchr(o->dest, '/');
	size_t dirlen = slash ? (size_t)(slash - o->dest) + 1 : 0;
	size_t len = strlen(o->dest) + 16;
	o->tmp = xrealloc(NULL, len);
	snprintf(o->tmp, len, "%.*s.%s.XXXXXX", (int)dirlen, o->dest, o->dest + dirlen);
	int fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd < 0) {
		say_error(cmd, "cannot write %s: %s", path, strerror(errno));
		free(o->tmp);
		free(o->dest);
		memset(o, 0, sizeof(*o));
		return EXIT_INPUT;
	}
	/* the mode the file would have had: its own, or a new file's */
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, stat(o->dest, &st) == 0 ? st.st_mode & 07777 : 0666 & ~mask);
	watch(o->tmp);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int e = errno;
		close(fd);
		cli_out_close(o, cmd, false);
		say_error(cmd, "cannot write %s: %s", path, strerror(e));
		return EXIT_INPUT;
	}
	return -1;
}

int cli_out_close(struct cli_out *o, const char *cmd, bool ok)
{
	int rc = -1;
	if (!o->path) { /* stdout: the caller's to flush, as before */
		memset(o, 0, sizeof(*o));
		return -1;
	}
	if (o->f) {
		bool bad = ferror(o->f) != 0;
		errno = 0;
		int closed = fclose(o->f);
		int e = errno ? errno : EIO;
		if (closed != 0 || bad) {
			if (ok)
				say_error(cmd, "cannot write %s: %s", o->path, strerror(e));
			ok = false;
			rc = EXIT_INPUT;
		}
	}
	if (o->tmp) {
		if (ok && rename(o->tmp, o->dest) != 0) {
			say_error(cmd, "cannot write %s: %s", o->path, strerror(errno));
			ok = false;
			rc = EXIT_INPUT;
		}
		if (!ok)
			unlink(o->tmp);
		unwatch();
		free(o->tmp);
		free(o->dest);
	}
	memset(o, 0, sizeof(*o));
	return rc;
}
