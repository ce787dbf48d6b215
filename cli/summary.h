/* summary's printers: the text (cmd-summary.c) and JSON (summary-json.c);
 * the model is analysis/summary.h. */
#ifndef GMT_CLI_SUMMARY_H
#define GMT_CLI_SUMMARY_H

#include <stdio.h>

#include "analysis/summary.h"

/* One trace's summary as a JSON object (no newline after it). */
void summary_print_json(struct summary *s, const struct gmt_read_info *in);
/* Several traces: each one's object, then the per-process rows, totals and
 * imbalance. */
void summary_print_many_json(struct summary *all, struct trace **ts,
			     const struct summary_proc *rows, const struct summary_proc *tot,
			     const uint64_t *peaks, const uint64_t *ends, int n);

#endif
