/* Shared by the growth, fragmentation and oom reports: their options
 * (parsed by cli/options.c), opening several traces, the per-trace header
 * lines and a few formatting helpers. */
#ifndef GMT_ANALYSIS_REPORT_BASE_H
#define GMT_ANALYSIS_REPORT_BASE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/trace.h"

struct rb_opts {
	bool json;
	bool has_device;
	int64_t device;
	int width; /* 0: not given */
	const char **paths;
	int npaths;
};

/* Opens every trace (metadata pass). Returns -1, or the exit code after the
 * error line; on failure nothing stays open. */
int rb_open_all(const char *cmd, const struct rb_opts *o, struct trace **out);
/* trace_finish for each (warning lines), trace_close; the worst exit code. */
int rb_finish_all(struct trace *ts, int n, int rc);

void rb_xfree(void *p);

/* "+1.234 s", "+250.0 ms", "+2m03.5s": time since the trace start. */
const char *rb_time(char *buf, int64_t ns);
/* The same without the sign: a duration. */
const char *rb_dur(char *buf, int64_t ns);

/* The allocation site of a stack as text ("(no stack)" for 0). */
const char *rb_site(struct trace *t, uint64_t stack_id, char *buf, size_t size);

/* "trace PATH (pid N): command" and the incomplete/lost lines. */
void rb_human_head(FILE *f, struct trace *t);
/* "\"path\": ..., \"pid\": ..., \"complete\": ..., ..." (no braces). */
void rb_json_head(FILE *f, struct trace *t);
void rb_json_s(FILE *f, const char *s);
/* A finite double for JSON (NaN/inf become 0). */
void rb_json_d(FILE *f, double v);

/* The DEVICE record's total bytes, 0 when unknown. */
uint64_t rb_dev_total(const struct trace *t, int64_t ordinal);
/* true when `u` (UTF-8 locale) block characters may be used. */
bool rb_utf8(void);

#endif
