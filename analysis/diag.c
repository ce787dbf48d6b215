/* The one-line messages and exit codes every command shares, and the
 * reader's outcomes said as those lines (diag.h). */
#include <stdarg.h>
#include <stdio.h>

#include <stdlib.h>

#include "analysis/diag.h"

_Thread_local struct diag_capture *gmt_diag_capture;

static void vmsg(const char *cmd, const char *fmt, va_list ap, const char *suffix)
{
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* one line, always */
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (gmt_diag_capture && gmt_diag_capture->size)
		snprintf(gmt_diag_capture->buf, gmt_diag_capture->size, "%s%s", buf,
			 suffix ? suffix : "");
	else
		fprintf(stderr, "gpumemtrace%s%s: %s%s\n", cmd ? " " : "", cmd ? cmd : "", buf,
			suffix ? suffix : "");
}

void say_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(cmd, fmt, ap, NULL);
	va_end(ap);
}

int say_usage_error(const char *cmd, const char *fmt, ...)
{
	char suffix[128];
	snprintf(suffix, sizeof(suffix), " (see gpumemtrace %s%s--help)", cmd ? cmd : "",
		 cmd ? " " : "");
	va_list ap;
	va_start(ap, fmt);
	vmsg(cmd, fmt, ap, suffix);
	va_end(ap);
	return EXIT_USAGE;
}

/* The exit code of a reader line's kind: 0 (a warning), EXIT_INPUT, EXIT_TRACE. */
static int diag_exit_code(enum gmt_read_kind kind)
{
	return kind == GMT_READ_INPUT_ERROR   ? EXIT_INPUT
	       : kind == GMT_READ_TRACE_ERROR ? EXIT_TRACE
					      : 0;
}

/* Prints a reader line as "gpumemtrace CMD: [warning: ]text"; its exit code. */
static int say_read_line(const char *cmd, const struct gmt_read_line *l)
{
	say_error(cmd, "%s%s", l->kind == GMT_READ_WARNING ? "warning: " : "", l->text);
	return diag_exit_code(l->kind);
}

struct gmt_reader *reader_open_cmd(const char *cmd, const char *path, int *rc)
{
	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(path, &err);
	if (r) {
		*rc = 0;
		return r;
	}
	struct gmt_read_line l;
	gmt_read_open_line(path, &err, &l);
	*rc = say_read_line(cmd, &l);
	return NULL;
}

int reader_finish_cmd(const char *cmd, const char *path, const struct gmt_read_info *info)
{
	struct gmt_read_line l[2];
	size_t n = gmt_read_end_lines(path, info, l);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		int r = say_read_line(cmd, &l[i]);
		/* the last line's error wins, as the read's stop follows its damage */
		rc = r ? r : rc;
	}
	return rc;
}

_Noreturn void diag_out_of_memory(void)
{
	say_error(NULL, "out of memory");
	exit(EXIT_INPUT);
}
