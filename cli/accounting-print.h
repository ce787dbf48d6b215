/* The accounting reconciliation as text and JSON: the accounting command
 * and summary's section (the model: analysis/accounting.h). */
#ifndef GMT_CLI_ACCOUNTING_PRINT_H
#define GMT_CLI_ACCOUNTING_PRINT_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/accounting.h"

/* The full report of one trace (`accounting`), only_device < 0: all. */
void acct_print(FILE *f, const struct acct *a, int64_t only_device);
/* The summary's short section. */
void acct_print_brief(FILE *f, const struct acct *a);
/* {"nvml": ..., "devices": [...]} */
void acct_print_json(FILE *f, const struct acct *a, int64_t only_device);

#endif
