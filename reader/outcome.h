/* How opening or reading a trace went, said as lines a front end prints:
 * the reader's own words, without a front end's prefix or exit codes. Each
 * line has a kind; the front end maps kinds to what it does (the CLI: its
 * exit codes, analysis/diag.c; Python: exceptions and warnings). */
#ifndef GMT_READER_OUTCOME_H
#define GMT_READER_OUTCOME_H

#include <stddef.h>

#include "reader/reader.h"

enum gmt_read_kind {
	GMT_READ_WARNING,     /* results cover what was read: an incomplete trace */
	GMT_READ_INPUT_ERROR, /* the file could not be opened or read */
	GMT_READ_TRACE_ERROR, /* not a trace, or a corrupt or damaged one */
};

struct gmt_read_line {
	enum gmt_read_kind kind;
	char text[1024]; /* one line, no newline: "PATH: corrupt trace: ..." */
};

/* Why gmt_reader_open failed (its err), as one line. */
void gmt_read_open_line(const char *path, const struct gmt_read_error *err,
			struct gmt_read_line *out);

/* How the read ended, after the last pass: 0, 1 or 2 lines into out[2]
 * (damage, then how it stopped or that it has no trailer); their count. */
size_t gmt_read_end_lines(const char *path, const struct gmt_read_info *info,
			  struct gmt_read_line out[2]);

/* Why a trace is damaged (info->damage), one phrase, into buf. */
const char *gmt_read_damage_text(const struct gmt_read_info *in, char *buf, size_t size);

#endif
