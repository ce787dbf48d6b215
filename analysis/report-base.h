/* What the reports over several traces share (growth, fragmentation, oom,
 * accounting): the options their tables fill (cli/options.c), opening the
 * traces and ending their reads, durations, site text, device totals. The
 * header lines they print are cli/report-print.h's. */
#ifndef GMT_ANALYSIS_REPORT_BASE_H
#define GMT_ANALYSIS_REPORT_BASE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/trace.h"

struct site_opts;
struct rb_opts {
	bool json;
	bool has_device;
	int64_t device;
	int width;		       /* 0: not given */
	const struct site_opts *sites; /* the site rules (NULL: built-in) */
	const char **paths;
	int npaths;
};

/* Opens every trace (metadata pass). Returns -1, or the exit code after the
 * error line; on failure nothing stays open. */
int rb_open_all(const char *cmd, const struct rb_opts *o, struct trace **out);
/* With --device N: every trace must have device N (a DEVICE record or an
 * event on it), else the one error line and EXIT_USAGE. -1 when fine. */
int rb_check_device(const char *cmd, const struct rb_opts *o, struct trace *ts);
/* trace_finish for each (warning lines), trace_close; the worst exit code. */
int rb_finish_all(struct trace *ts, int n, int rc);

/* "+1.234 s", "+250.0 ms", "+2m03.5s": time since the trace start. */
const char *rb_time(char *buf, int64_t ns);
/* The same without the sign: a duration. */
const char *rb_dur(char *buf, int64_t ns);

/* The allocation site of a stack as text ("(no stack)" for 0). */
const char *rb_site(struct trace *t, uint64_t stack_id, char *buf, size_t size);

/* The value the PROCESS record holds for an environment variable, or NULL. */
const char *rb_env(const struct trace *t, const char *key);
/* The DEVICE record's total bytes, 0 when unknown. */
uint64_t rb_dev_total(const struct trace *t, int64_t ordinal);
/* true when `u` (UTF-8 locale) block characters may be used. */
bool rb_utf8(void);

#endif
