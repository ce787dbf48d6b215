/* The gpumemtrace command-line tool: shared declarations. */
#ifndef GMT_CLI_H
#define GMT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reader.h"

#ifndef GMT_VERSION
#define GMT_VERSION "0.1.0"
#endif

/* Exit codes (docs/cli.md). */
enum {
	EXIT_OK_ = 0,
	EXIT_CHECK = 1, /* a check failed (reserved for gates) */
	EXIT_USAGE = 2, /* bad flags or arguments */
	EXIT_INPUT = 3, /* cannot read the input */
	EXIT_TRACE = 4, /* invalid or corrupt trace */
};

/* ---- commands (cli/cmd-*.c): argv[0] is the command name ---- */
int cmd_dump(int argc, char **argv);
int cmd_summary(int argc, char **argv);
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

/* ---- util.c ---- */

/* Allocation that cannot fail: out of memory is one error line and exit 3. */
void *xrealloc(void *p, size_t n);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
/* Grows arr (n used of cap) by doubling when full. */
#define GROW(arr, n, cap)                                                                          \
	do {                                                                                       \
		if ((n) == (cap)) {                                                                \
			(cap) = (cap) ? 2 * (cap) : 16;                                            \
			(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));                           \
		}                                                                                  \
	} while (0)

/* "gpumemtrace CMD: message\n" on stderr; cmd NULL: "gpumemtrace: ". */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error: the message plus " (see gpumemtrace CMD --help)"; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses the common "[--help] [flags] TRACE" shape. `flags` lists the
 * boolean long flags the command accepts (NULL-terminated); their values
 * land in set[i]. Returns -1 when parsing succeeded (*trace set), else the
 * exit code to return (0 after --help). */
int cli_parse(int argc, char **argv, const char *help, const char *const *flags, bool *set,
	      const char **trace);

/* Opens a trace for command `cmd`; on failure prints the one error line and
 * stores the exit code in *rc. */
struct gmt_reader *cli_open(const char *cmd, const char *path, int *rc);

/* After the last pass: prints the warning (torn or missing tail) or the
 * error (corruption, read error) line about how the read ended, and returns
 * the exit code: 0, EXIT_INPUT or EXIT_TRACE. */
int cli_finish(const char *cmd, const char *path, const struct gmt_read_info *info);

/* API table, from GMT_API_LIST. NULL/0 for ids not in it. */
struct api_info {
	const char *name;
	int op, kind, space;
};
extern const struct api_info api_table_[GMT_API_MAX_ + 1]; /* use api_lookup */
/* Inline: the replay asks up to three times an event. */
static inline const struct api_info *api_lookup(uint32_t api)
{
	if (api > GMT_API_MAX_ || !api_table_[api].name)
		return NULL;
	return &api_table_[api];
}
/* The name, or "api#N" in a static buffer for unknown ids. */
const char *api_name(uint32_t api);

/* "CUDA_ERROR_OUT_OF_MEMORY" for driver APIs, "cudaErrorMemoryAllocation"
 * for runtime ones; NULL when unknown. */
const char *result_name(uint32_t api, uint64_t result);

/* "1.5 GiB", "512 B". buf >= 32 bytes. */
const char *fmt_size(char *buf, uint64_t bytes);
/* "+1.234567890" seconds relative to the trace start. buf >= 32. */
const char *fmt_reltime(char *buf, int64_t ns);

/* JSON string with quotes; invalid UTF-8 becomes U+FFFD. */
void json_str(FILE *f, const char *s, size_t len);
/* XML text (JUnit, SVG): escaped, control characters and invalid UTF-8 as '?'. */
void xml_text(FILE *f, const char *s);
/* The same escaping, for human output (quoted). */
#define json_cstr(f, s) json_str((f), (s), strlen(s))

const char *path_basename(const char *path);

/* ---- color.c ---- */
/* Whether f gets colour: a terminal, and NO_COLOR unset or empty. */
bool cli_colour(FILE *f);
enum cli_colour { C_RESET, C_PASS, C_FAIL, C_WARN, C_BOLD };
/* The escape sequence for c, or "" when f gets no colour. */
const char *cli_paint(FILE *f, enum cli_colour c);

#endif
