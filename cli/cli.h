/* The gpumemtrace command-line tool: shared declarations. */
#ifndef GMT_CLI_H
#define GMT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/api.h"
#include "common/text.h"
#include "analysis/diag.h"
#include "reader/reader.h"
#include "reader/xalloc.h"
#include "cli/report-print.h"

/* GMT_VERSION: the Makefile's VERSION, given to the compiler */

/* ---- commands (cli/cmd-*.c): argv[0] is the command name ---- */
int cmd_dump(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_growth(int argc, char **argv);
int cmd_fragmentation(int argc, char **argv);
int cmd_oom(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_accounting(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);

/* ---- doc-tables.c ---- */
/* Writes docs/reports.md's table KIND ("md-site-rules", "md-frameworks")
 * to f; -1 for another kind. */
int cli_gen_table(const char *kind, FILE *f);

/* ---- color.c ---- */
enum cli_colour { C_RESET, C_PASS, C_FAIL, C_WARN, C_BOLD };
/* The escape sequence for c, or "" when f gets no colour. */
const char *cli_paint(FILE *f, enum cli_colour c);

#endif
