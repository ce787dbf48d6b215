/* Running a command under the tracer: `run` and `watch -- COMMAND`. */
#ifndef GMT_CLI_LAUNCH_H
#define GMT_CLI_LAUNCH_H

#include <stdbool.h>

/* The library to preload (GPUMEMTRACE_LIBRARY, else next to the CLI), or
 * NULL after the error line. malloc'd. */
char *launch_find_library(const char *cmd);
/* The folder of the counters helper's sitecustomize.py (make install's
 * share/, the package's _counters/, a source tree's), or NULL after the
 * error line. malloc'd. */
char *launch_find_counters_helper(const char *cmd);
/* name=value:old (or value). */
void launch_prepend_env(const char *name, const char *value);
/* LD_PRELOAD gets lib first; NVTX_INJECTION64_PATH lib unless set. */
void launch_set_preload(const char *lib);
/* The trace path template made absolute, so a command that changes
 * directory still writes where we look. malloc'd. */
char *launch_absolute_template(const char *t);

/* The list the library adds each trace's path to (GPUMEMTRACE_TRACE_LIST):
 * a private file, so that a command reports exactly the traces its
 * COMMAND and the command's descendants made, never those of a run
 * beside it. */
struct launch_list {
	int fd;
	char *path;
};
/* 0, or -1 after the error line. */
int launch_list_create(const char *cmd, struct launch_list *l);
/* The traces listed, each once, in the order they were made. A listed file
 * that is no longer there gets a line and sets *missing. malloc'd. */
char **launch_list_read(const char *cmd, struct launch_list *l, int *n, bool *missing);
/* A `run` inside a `run`: the outer one's list gets our traces too. */
void launch_list_forward(const char *outer, char *const *paths, int n);
/* --per-tensor: the switches that turn the frameworks' caching allocators
 * off (every tensor a driver call with its own stack); says what it
 * overrides, on stderr. */
void launch_per_tensor(const char *cmd);
/* --history-entries N (implies --framework-history, which implies
 * --framework-counters): -1, or the exit code after the error line. */
int launch_history_args(const char *cmd, const char *entries, bool *history, bool *counters);
/* GPUMEMTRACE_FRAMEWORK_HISTORY for the helper: entries, or the default. */
void launch_set_history(const char *entries);
/* The frames of the traces named into them once their command has ended
 * (outside the traced processes), so they read with names anywhere. */
void launch_name_frames(const char *cmd, char *const *paths, int n);

#endif
