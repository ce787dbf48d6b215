/* Running a command under the tracer, for `run` and `watch`: where the
 * library and the counters helper are, the environment, and the private
 * list each traced process adds its trace's path to (cli/launch.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/launch.h"
#include "analysis/trace.h"

static char *self_dir(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return xstrdup(exe);
}

/* The library to preload, or NULL after the error line. */
char *launch_find_library(const char *cmd)
{
	const char *env = getenv("GPUMEMTRACE_LIBRARY");
	if (env && *env) {
		if (access(env, R_OK) != 0) {
			say_error(cmd, "GPUMEMTRACE_LIBRARY=%s: %s", env, strerror(errno));
			return NULL;
		}
		return realpath(env, NULL);
	}
	char *dir = self_dir();
	if (!dir) {
		say_error(cmd, "cannot find the CLI's own path; set GPUMEMTRACE_LIBRARY");
		return NULL;
	}
	static const char *const rel[] = {"/../lib/libgpumemtrace.so", "/libgpumemtrace.so"};
	char path[PATH_MAX + 64];
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s%s", dir, rel[i]);
		char *real = realpath(path, NULL);
		if (real) {
			free(dir);
			return real;
		}
	}
	say_error(cmd, "cannot find libgpumemtrace.so in %s/../lib or %s; set GPUMEMTRACE_LIBRARY",
		  dir, dir);
	free(dir);
	return NULL;
}

/* The folder of the counters helper's sitecustomize.py, or NULL after the
 * error line. */
char *launch_find_counters_helper(const char *cmd)
{
	char *dir = self_dir();
	if (!dir) {
		say_error(cmd, "--framework-counters: cannot find the CLI's own path");
		return NULL;
	}
	static const char *const rel[] = {"/../share/gpumemtrace/counters", "/../_counters",
					  "/../python/gpumemtrace/_counters"};
	char path[PATH_MAX + 64];
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s%s/sitecustomize.py", dir, rel[i]);
		if (access(path, R_OK) == 0) {
			snprintf(path, sizeof(path), "%s%s", dir, rel[i]);
			free(dir);
			return realpath(path, NULL);
		}
	}
	say_error(cmd,
		  "--framework-counters: no sitecustomize.py in %s/../share/gpumemtrace/counters",
		  dir);
	free(dir);
	return NULL;
}

void launch_prepend_env(const char *name, const char *value)
{
	const char *old = getenv(name);
	if (old && *old) {
		char *v = xrealloc(NULL, strlen(value) + strlen(old) + 2);
		sprintf(v, "%s:%s", value, old);
		setenv(name, v, 1);
		free(v);
	} else {
		setenv(name, value, 1);
	}
}

/* The template as an absolute path, so a command that changes directory
 * still writes where we look. */
char *launch_absolute_template(const char *t)
{
	if (t[0] == '/')
		return xstrdup(t);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		return xstrdup(t);
	char *out = xrealloc(NULL, strlen(cwd) + strlen(t) + 2);
	sprintf(out, "%s/%s", cwd, t);
	return out;
}

/* The list the library adds each trace's path to (GPUMEMTRACE_TRACE_LIST):
 * a private file, so that `run` reports exactly the traces its command and
 * the command's descendants made, never those of a run beside it. */
int launch_list_create(const char *cmd, struct launch_list *l)
{
	const char *tmp = getenv("TMPDIR");
	const char *dirs[] = {tmp && *tmp ? tmp : "/tmp", "/tmp"};
	int err = 0;
	for (int i = 0; i < 2; i++) {
		if (i && !strcmp(dirs[0], dirs[1]))
			break;
		l->path = xrealloc(NULL, strlen(dirs[i]) + 32);
		sprintf(l->path, "%s/gpumemtrace-run.XXXXXX", dirs[i]);
		l->fd = mkostemp(l->path, O_CLOEXEC);
		if (l->fd >= 0)
			return 0;
		err = errno;
		free(l->path);
	}
	l->path = NULL;
	say_error(cmd, "cannot create the list of traces in %s: %s", dirs[0], strerror(err));
	return -1;
}

/* The traces listed, each once, in the order they were made. A listed file
 * that is no longer there gets a line and sets *missing. */
char **launch_list_read(const char *cmd, struct launch_list *l, int *n, bool *missing)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	if (lseek(l->fd, 0, SEEK_SET) == 0) {
		for (;;) {
			if (cap - len < 4096) {
				cap = cap ? 2 * cap : 8192;
				buf = xrealloc(buf, cap + 1);
			}
			ssize_t k = read(l->fd, buf + len, cap - len);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			len += (size_t)k;
		}
	}
	char **v = NULL;
	size_t nv = 0, vcap = 0;
	for (size_t i = 0; i < len;) {
		char *p = buf + i;
		size_t k = strnlen(p, len - i);
		p[k] = '\0'; /* an unterminated tail: buf has room for the NUL */
		i += k + 1;
		bool dup = !*p;
		for (size_t j = 0; j < nv && !dup; j++)
			dup = !strcmp(v[j], p);
		if (dup)
			continue;
		struct stat st;
		errno = 0;
		if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
			fprintf(stderr, "gpumemtrace %s: the command's trace %s is gone: %s\n", cmd,
				p, errno ? strerror(errno) : "not a regular file");
			*missing = true;
			continue;
		}
		GROW(v, nv, vcap);
		v[nv++] = xstrdup(p);
	}
	free(buf);
	*n = (int)nv;
	return v;
}

/* A `run` inside a `run`: the outer one reports our traces too. */
void launch_list_forward(const char *outer, char *const *paths, int n)
{
	if (!outer || !n)
		return;
	int fd = open(outer, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	for (int i = 0; i < n; i++)
		if (write(fd, paths[i], strlen(paths[i]) + 1) < 0)
			break;
	close(fd);
}

void launch_set_preload(const char *lib)
{
	launch_prepend_env("LD_PRELOAD", lib);
	setenv("NVTX_INJECTION64_PATH", lib, 0);
}

/* The frames of the traces named into them, now that the command is over
 * (outside the traced processes, whose exit never waits on naming), so
 * that they read with names on any machine. A trace that cannot take the
 * names (torn, still open in a process) gets its one line and is left. */
void launch_name_frames(const char *cmd, char *const *paths, int n)
{
	for (int i = 0; i < n; i++) {
		struct trace t;
		if (trace_open(&t, cmd, paths[i]) >= 0)
			continue; /* its line is said; the summary says it too */
		struct trace_symbolize res;
		trace_symbolize(&t, -1, &res);
		trace_close(&t);
	}
}

/* --per-tensor: the switches that make each framework allocate every
 * tensor from the driver (docs/reports.md, "A per-tensor mode"). */
void launch_per_tensor(const char *cmd)
{
	static const char *const sets[][2] = {{"PYTORCH_NO_CUDA_MEMORY_CACHING", "1"},
					      {"XLA_PYTHON_CLIENT_ALLOCATOR", "platform"},
					      {"TF_GPU_ALLOCATOR", "cuda_malloc_async"}};
	char said[600] = "";
	size_t len = 0;
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		const char *old = getenv(sets[i][0]);
		/* the user's own setting is replaced: say which, never silently */
		if (old && strcmp(old, sets[i][1]) != 0 && len + 200 < sizeof(said))
			len += (size_t)snprintf(said + len, sizeof(said) - len, "%s%s=%.60s",
						len ? ", " : "", sets[i][0], old);
		setenv(sets[i][0], sets[i][1], 1);
	}
	if (len)
		fprintf(stderr,
			"gpumemtrace %s: --per-tensor: overrides your %s (with "
			"PYTORCH_NO_CUDA_MEMORY_CACHING=1, XLA_PYTHON_CLIENT_ALLOCATOR=platform, "
			"TF_GPU_ALLOCATOR=cuda_malloc_async)\n",
			cmd, said);
	fprintf(stderr,
		"gpumemtrace %s: --per-tensor: PyTorch, JAX and TensorFlow caches off: every "
		"tensor gets its own stack, but the program runs slower and its peak differs "
		"from a cached run's\n"
		"gpumemtrace %s: --per-tensor: CuPy has no such switch: call "
		"cupy.cuda.set_allocator(None) in the program\n",
		cmd, cmd);
}

/* --history-entries' default: PyTorch's own examples record 100000
 * (torch.cuda.memory docs, "Understanding CUDA Memory Usage"). */
#define LAUNCH_HISTORY_ENTRIES "100000"

int launch_history_args(const char *cmd, const char *entries, bool *history, bool *counters)
{
	uint64_t v = 0;
	if (entries && opt_parse_uint(cmd, "--history-entries", entries, &v) >= 0)
		return EXIT_USAGE;
	if (entries && !v)
		return say_usage_error(cmd, "--history-entries: at least 1, not 0");
	if (entries)
		*history = true;
	if (*history)
		*counters = true;
	return -1;
}

void launch_set_history(const char *entries)
{
	setenv("GPUMEMTRACE_FRAMEWORK_HISTORY", entries ? entries : LAUNCH_HISTORY_ENTRIES, 1);
}
