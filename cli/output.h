/* Where a command writes a file (-o, --junit): never over a trace it reads,
 * and never half-written. */
#ifndef GMT_CLI_OUTPUT_H
#define GMT_CLI_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cli_out {
	FILE *f;
	const char *path; /* as given; NULL: stdout */
	char *dest;	  /* where the file lands (a symlink's target) */
	char *tmp;	  /* the temporary file beside dest, renamed over it at the end */
};

/* Opens o->f for `path` (NULL or "-": stdout). A regular file, or one not
 * there yet, is written to a new temporary file in its directory, renamed
 * over it by cli_out_close: a command that fails or is interrupted leaves
 * the old file as it was. Anything else that exists (a FIFO, /dev/null, a
 * terminal) is opened and written as it is. Refused with one line and
 * EXIT_USAGE: a path (or stdout) that is one of the ninputs traces read,
 * by device and inode, so `export -o T T`, a hard link or a symlink to T
 * never touch T. Returns -1, or the exit code after the one error line. */
int cli_out_open(struct cli_out *o, const char *cmd, const char *path, const char *const *inputs,
		 size_t ninputs);

/* ok: flushes and renames the file into place (a write error is one line
 * and EXIT_INPUT, and removes it); !ok: removes it, leaving path as it
 * was. Returns -1, or the exit code. */
int cli_out_close(struct cli_out *o, const char *cmd, bool ok);

#endif
