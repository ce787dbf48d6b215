/* Which row of the framework table (common/frameworks.h) a module belongs
 * to: the one matcher every report asks. */
#ifndef GMT_ANALYSIS_FRAMEWORKS_H
#define GMT_ANALYSIS_FRAMEWORKS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/frameworks.h"

struct trace;

/* Whether s matches one of the NULL-ended globs (fnmatch; NULL list: no). */
bool fw_glob_any(const char *const *globs, const char *s);

/* The row of a module by its file name and path, as the site rules pass
 * its frames over: the CUDA driver, runtime and tracer first, then the
 * rows in the table's order, each by file name then path. GMT_FW_NONE:
 * none (the user's code). path may be NULL. */
enum gmt_fw_id fw_of_module(const char *library, const char *path);

/* The same by file name alone, the rows' loose names included: what a
 * module's name says is loaded (explain's recognition). */
enum gmt_fw_id fw_of_library(const char *library);

/* Whether the trace loaded a module of row `id` (by file name, loose
 * name or path); cuda: one of its CUDA side (cuda_modules). */
bool fw_loaded(const struct trace *t, enum gmt_fw_id id, bool cuda);

/* The row whose Python package is `python` ("torch": a COUNTERS record's
 * source); GMT_FW_NONE: none. */
enum gmt_fw_id fw_of_python(const char *python);

/* A setting with two names (common/frameworks.c: an older name's row
 * names the current one): which one is in force in a recorded environment.
 * name, value: the one read (NULL when neither is set); older: it is the
 * older name; ignored, ignored_value: the other name, set but not read;
 * conflict: both are set and that is an error (JAX's memory fraction). */
struct fw_in_force {
	const char *name, *value, *ignored, *ignored_value;
	bool older, conflict;
};
struct trace_env;
void fw_in_force_of(const struct trace_env *env, size_t nenv, const char *current,
		    struct fw_in_force *s);

#endif
