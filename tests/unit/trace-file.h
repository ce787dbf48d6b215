/* For unit tests that open traces: trace_file(b, name) writes the
 * builder's trace into a directory of its own (removed at exit) and
 * returns the path. */
#ifndef GMT_UNIT_TRACE_FILE_H
#define GMT_UNIT_TRACE_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace-builder.h"

static char trace_file_dir_[256];

static inline void trace_file_cleanup_(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", trace_file_dir_);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", trace_file_dir_);
}

static inline const char *trace_file(struct tb *b, const char *name)
{
	static char path[320];
	if (!trace_file_dir_[0]) {
		snprintf(trace_file_dir_, sizeof(trace_file_dir_), "%s/gmt-unit.XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(trace_file_dir_)) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(trace_file_cleanup_);
	}
	snprintf(path, sizeof(path), "%s/%s", trace_file_dir_, name);
	if (tb_write(b, path) != 0) {
		perror(path);
		exit(2);
	}
	return path;
}

#endif
