/* The one-line messages and exit codes every command shares (docs/cli.md),
 * and the reader's outcomes (reader/outcome.h) mapped to them: the reader
 * says what happened, the reports and the CLI say it as "gpumemtrace CMD:
 * ..." and exit with the code. */
#ifndef GMT_ANALYSIS_DIAG_H
#define GMT_ANALYSIS_DIAG_H

#include <stddef.h>

#include "reader/outcome.h"

/* Exit codes (docs/cli.md). */
enum {
	EXIT_OK_ = 0,
	EXIT_CHECK = 1, /* a check failed (reserved for gates) */
	EXIT_USAGE = 2, /* bad flags or arguments */
	EXIT_INPUT = 3, /* cannot read the input */
	EXIT_TRACE = 4, /* invalid or corrupt trace */
};

/* A library front end (capi/) is loaded into another program, whose stderr
 * is not ours: while set, each line goes here instead (the last one kept,
 * without the "gpumemtrace CMD: " prefix), for the call to return. */
struct diag_capture {
	char *buf;
	size_t size;
};
extern _Thread_local struct diag_capture *gmt_diag_capture;

/* "gpumemtrace CMD: message\n" on stderr; cmd NULL: "gpumemtrace: ". */
void say_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error: the message plus " (see gpumemtrace CMD --help)"; returns EXIT_USAGE. */
int say_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens a trace for command `cmd`; on failure prints the one error line and
 * stores the exit code in *rc. */
struct gmt_reader *reader_open_cmd(const char *cmd, const char *path, int *rc);

/* After the last pass: prints the warning (torn or missing tail) or the
 * error (corruption, read error, chunks missing or repeated) line about how the read ended, and
 * returns the exit code: 0, EXIT_INPUT or EXIT_TRACE. */
int reader_finish_cmd(const char *cmd, const char *path, const struct gmt_read_info *info);
/* Out of memory on the reading side (xalloc): the one line, exit EXIT_INPUT. */
_Noreturn void diag_out_of_memory(void);

#endif
