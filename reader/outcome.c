/* How opening or reading a trace went, in the reader's words (outcome.h). */
#include <stdarg.h>
#include <stdio.h>

#include "reader/outcome.h"

static void line(struct gmt_read_line *out, enum gmt_read_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void line(struct gmt_read_line *out, enum gmt_read_kind kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	out->kind = kind;
	vsnprintf(out->text, sizeof(out->text), fmt, ap);
	va_end(ap);
}

void gmt_read_open_line(const char *path, const struct gmt_read_error *err,
			struct gmt_read_line *out)
{
	if (err->code == GMT_READ_ERR_OPEN)
		line(out, GMT_READ_INPUT_ERROR, "cannot open %s: %s", path, err->msg);
	else if (err->code == GMT_READ_ERR_ZSTD)
		line(out, GMT_READ_INPUT_ERROR, "cannot read %s: %s", path, err->msg);
	else
		line(out, GMT_READ_TRACE_ERROR, "%s: %s", path, err->msg);
}

const char *gmt_read_damage_text(const struct gmt_read_info *in, char *buf, size_t size)
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

size_t gmt_read_end_lines(const char *path, const struct gmt_read_info *info,
			  struct gmt_read_line out[2])
{
	unsigned long long off = (unsigned long long)info->stop_offset;
	unsigned long long lost = (unsigned long long)info->unreadable;
	size_t n = 0;
	if (info->damage) {
		char why[256];
		line(&out[n++], GMT_READ_TRACE_ERROR,
		     "%s: damaged trace: %s; results cover the chunks read", path,
		     gmt_read_damage_text(info, why, sizeof(why)));
	}
	switch (info->stop) {
	case GMT_STOP_IO:
		line(
		    &out[n++], GMT_READ_INPUT_ERROR,
		    "cannot read %s: %s (chunk at offset %llu); results cover the first %llu bytes",
		    path, info->stop_msg, off, (unsigned long long)info->readable_end);
		return n;
	case GMT_STOP_CORRUPT:
		line(&out[n++], GMT_READ_TRACE_ERROR,
		     "%s: corrupt trace: bad chunk at offset %llu (%s); %llu bytes unreadable; "
		     "results cover the readable part",
		     path, off, info->stop_msg, lost);
		return n;
	case GMT_STOP_TORN:
		line(&out[n++], GMT_READ_WARNING,
		     "%s: incomplete trace: torn tail at offset %llu (%s), %llu bytes unreadable; "
		     "results cover the readable part",
		     path, off, info->stop_msg, lost);
		return n;
	case GMT_STOP_NONE:
		break;
	}
	if (!info->complete && !(info->damage && info->has_trailer))
		line(&out[n++], GMT_READ_WARNING,
		     "%s: incomplete trace: no trailer at the end (the process was killed or is "
		     "still running); results cover what was written",
		     path);
	return n;
}
