/* export --format perfetto (Perfetto's protobuf) and --format chrome-json
 * (the Trace Event Format's JSON): cli/export-perfetto.c. Each returns -1,
 * or the exit code (its line printed). */
#ifndef GMT_CLI_EXPORT_PERFETTO_H
#define GMT_CLI_EXPORT_PERFETTO_H

#include <stdio.h>

#include "analysis/trace.h"

int export_perfetto(FILE *f, struct trace *t);
int export_chrome_json(FILE *f, struct trace *t);

#endif
