/* What the reports print alike: the per-trace header lines, JSON numbers
 * and strings, the imbalance of a figure across traces. */
#ifndef GMT_CLI_REPORT_PRINT_H
#define GMT_CLI_REPORT_PRINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/report-base.h"
#include "analysis/trace.h"
#include "cli/options.h"
#include "cli/output.h"

/* "trace PATH (pid N): command" and the incomplete/lost lines. */
void cli_human_head(FILE *f, struct trace *t);
/* "PARTIAL DATA: 500 events lost...: allocations and frees may be
 * missing[ in PATH]" as a line, when the trace lost events or is
 * incomplete (trace_partial); nothing otherwise. */
void cli_partial_line(FILE *f, const struct trace *t, bool name);
/* ", \"lost_events\": N, \"partial\": \"500 events lost, ...\"|null". */
void cli_json_partial(FILE *f, const struct trace *t);
/* "\"path\": ..., \"pid\": ..., \"complete\": ..., ..." (no braces). */
void cli_json_head(FILE *f, struct trace *t);
void cli_json_s(FILE *f, const char *s);
/* Imbalance of one figure across n traces: max, min, which trace, ratio.
 * JSON: {"max": N, "max_trace": I, "min": N, "min_trace": I, "mean": N,
 * "max_over_min": X, "max_over_mean": X} (ratios null when undefined). */
void trace_imbalance_json(FILE *f, const uint64_t *v, size_t n);
/* "  imbalance: max 3.0 GiB (rank 1 (pid 12)), min ..., max/min 1.50x\n" */
void trace_imbalance_text(FILE *f, const char *what, const uint64_t *v, struct trace *const *ts,
			  size_t n);

/* The site's whole stack for --json: ", \"site_index\": N, \"site_rule\":
 * \"user\"|\"focus\"|\"fallback\"|\"raw\"|\"cuda\", \"stack\": [{\"function\", \"file\",
 * \"line\", \"module\", \"module_offset\", \"python\", \"skipped_by\"}...]" where
 * skipped_by names the rule that passed over each frame before the site
 * (null at and past it). Full names always. */
void cli_json_stack(FILE *f, struct trace *t, uint64_t stack_id);

/* The width text tables fit: the terminal's, else $COLUMNS, else 160. */
int cli_text_width(FILE *f);
/* s cut to `cols` columns (UTF-8 aware) with "…" at the end, into buf. */
const char *cli_fit(const char *s, int cols, char *buf, size_t size);
/* Prose wrapped at `width` columns (UTF-8 aware) at spaces: the first line
 * after `indent` spaces, the others after indent + 2, each ended by a
 * newline. A word longer than a line is printed whole, never cut. */
void cli_wrap(FILE *f, int indent, int width, const char *text);
/* text wrapped at spaces to `width` columns (UTF-8 aware), then a newline.
 * The first line is text as it starts (its own leading spaces or label,
 * its spacing kept); each further line starts with `indent` spaces. A word
 * longer than a line (a path) stays whole; a '\n' in text starts a line. */
void cli_wrap_hang(FILE *f, int indent, int width, const char *text);

/* printf's text through rb_wrap_hang at cli_text_width(f): no newline at
 * the end of fmt (rb_wrap_hang adds one). */
void cli_wrapf(FILE *f, int indent, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The columns a site keeps before the notes after it ([library], kinds)
 * are shortened or dropped, however narrow the width. */
#define RB_SITE_MIN 40
/* One table's site cell and what follows it, in room columns: the first of
 * tails[0..n) (longest first, the last usually "") that leaves the site
 * RB_SITE_MIN columns (or all it needs); the site never below that. */
void cli_site_line(FILE *f, const char *site, int room, const char *const *tails, int n);

/* A row's ", \"library\": L, \"libraries\": [{\"library\": L, \"bytes\": N}...]":
 * L the library with the most bytes by metric (total bytes for calls),
 * each library that made the group's calls with its bytes. */
void cli_json_libraries(FILE *f, struct trace *t, const struct trace_row *r, int metric);

/* Parses a report's options into o (and the site options into sa, when
 * not NULL: its regexes stay compiled until site_opts_free), then opens
 * every trace. Returns -1 with *ts open, or the exit code (nothing left
 * open, o->paths freed). */
int cli_parse_open(const struct opt_usage *u, const struct option *opts, int argc, char **argv,
		   struct rb_opts *o, struct site_args *sa, struct trace **ts);
/* A command that reads one trace and writes one file (export, flamegraph):
 * its output (-o) and the trace. */
struct cli_one {
	struct cli_out out;
	struct trace t;
};
/* The options such a command shares: the moment (peak or end) and the
 * interpreter's frames kept (help: what the option does in this command). */
#define OPT_CLI_AT(v, help) OPT_CHOICE("at", v, "peak|end", "moment", help)
#define OPT_CLI_RAW_FRAMES(v, pre)                                                                 \
	OPT_BOOL("raw-sites", v,                                                                   \
		 pre "keep the interpreter's own frames (_PyEval_*,\n"                             \
		     "python3.12+0x...), left out by default")
/* Wants one path (paths freed), opens the output `out` (cli_out_open: NULL
 * or "-" is stdout) and the trace. -1 with both open, or the exit code
 * after the one error line (nothing open). */
int cli_one_open(struct cli_one *r, const char *cmd, const char *out, const char **paths,
		 int npaths);
/* cli_one_open with the trace opened by read (which reads it whole, in one
 * pass: e.g. snapshot_live_read) instead of trace_open. */
typedef int (*rb_read_fn)(void *ctx, struct trace *t, const char *cmd, const char *path);
int cli_one_open_read(struct cli_one *r, const char *cmd, const char *out, const char **paths,
		      int npaths, rb_read_fn read, void *ctx);
/* Closes the output (kept when rc is -1, the command's success) and the
 * trace (its warnings): the exit code. */
int cli_one_close(struct cli_one *r, const char *cmd, int rc);

/* The same for the reports whose options are --json and --device alone
 * (accounting, explain, fragmentation). */
int cli_parse_open_plain(const struct opt_usage *u, int argc, char **argv, struct rb_opts *o,
			 struct trace **ts);

#endif
