/* The one-line messages and exit codes every command shares, and how a
 * trace's open and read ended, said as those lines. */
#include <stdarg.h>
#include <stdio.h>

#include "reader/diag.h"

static void vmsg(const char *cmd, const char *fmt, va_list ap, const char *suffix)
{
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* one line, always */
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
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

struct gmt_reader *reader_open_cmd(const char *cmd, const char *path, int *rc)
{
	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(path, &err);
	if (r) {
		*rc = 0;
		return r;
	}
	if (err.code == GMT_READ_ERR_OPEN) {
		say_error(cmd, "cannot open %s: %s", path, err.msg);
		*rc = EXIT_INPUT;
	} else if (err.code == GMT_READ_ERR_ZSTD) {
		say_error(cmd, "cannot read %s: %s", path, err.msg);
		*rc = EXIT_INPUT;
	} else {
		say_error(cmd, "%s: %s", path, err.msg);
		*rc = EXIT_TRACE;
	}
	return NULL;
}

const char *reader_damage_text(const struct gmt_read_info *in, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	if (in->damage & GMT_DAMAGE_GAP)
		n += (size_t)snprintf(
		    buf + n, size - n, "%s%llu chunk sequence gap%s (chunks missing)",
		    n ? ", " : "", (unsigned long long)in->seq_gaps, in->seq_gaps == 1 ? "" : "s");
	if ((in->damage & GMT_DAMAGE_DUP) && n < size)
		n += (size_t)snprintf(buf + n, size - n, "%s%llu chunk%s repeated", n ? ", " : "",
				      (unsigned long long)in->seq_dups,
				      in->seq_dups == 1 ? "" : "s");
	if ((in->damage & GMT_DAMAGE_TOTALS) && n < size)
		snprintf(buf + n, size - n, "%s%llu events read, the trailer counts %llu",
			 n ? ", " : "", (unsigned long long)in->events,
			 (unsigned long long)in->trailer_events);
	return buf;
}

int reader_finish_cmd(const char *cmd, const char *path, const struct gmt_read_info *info)
{
	unsigned long long off = (unsigned long long)info->stop_offset;
	unsigned long long lost = (unsigned long long)info->unreadable;
	int rc = 0;
	if (info->damage) {
		char why[256];
		say_error(cmd, "%s: damaged trace: %s; results cover the chunks read", path,
			  reader_damage_text(info, why, sizeof(why)));
		rc = EXIT_TRACE;
	}
	switch (info->stop) {
	case GMT_STOP_IO:
		say_error(
		    cmd,
		    "cannot read %s: %s (chunk at offset %llu); results cover the first %llu bytes",
		    path, info->stop_msg, off, (unsigned long long)info->readable_end);
		return EXIT_INPUT;
	case GMT_STOP_CORRUPT:
		say_error(
		    cmd,
		    "%s: corrupt trace: bad chunk at offset %llu (%s); %llu bytes unreadable; "
		    "results cover the readable part",
		    path, off, info->stop_msg, lost);
		return EXIT_TRACE;
	case GMT_STOP_TORN:
		say_error(
		    cmd,
		    "warning: %s: incomplete trace: torn tail at offset %llu (%s), %llu bytes "
		    "unreadable; results cover the readable part",
		    path, off, info->stop_msg, lost);
		return rc;
	case GMT_STOP_NONE:
		break;
	}
	if (!info->complete && !(info->damage && info->has_trailer))
		say_error(cmd,
			  "warning: %s: incomplete trace: no trailer at the end (the process was "
			  "killed or is still running); results cover what was written",
			  path);
	return rc;
}
