/* The option machinery of every command: one declarative table per command,
 * each entry bound to a field of the command's own argument struct,
 *
 *     struct top_args a = {.limit = 10};
 *     const struct option opts[] = {
 *         OPT_BOOL("json", &a.json, "one JSON object instead of tables"),
 *         OPT_UINT("limit", &a.limit, "N", "rows per device", .short_name = 'n'),
 *         OPT_END(),
 *     };
 *     int rc = opt_parse(&top_usage, opts, argc, argv, &a.paths, &a.npaths);
 *
 * From the same tables come the parsing, each command's --help, and the
 * man page, bash completion and docs/cli.md sections (`gpumemtrace --gen`,
 * `make gen-docs`). */
#ifndef GMT_CLI_OPTIONS_H
#define GMT_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum opt_type {
	OPT_T_END,
	OPT_T_BOOL,    /* bool *: a flag */
	OPT_T_STRING,  /* const char **: the last value given */
	OPT_T_FILE,    /* const char **: a file name (completed as one) */
	OPT_T_STRINGS, /* struct opt_list *: every value, repeatable */
	OPT_T_UINT,    /* uint64_t *: a non-negative integer, at most .max if set */
	OPT_T_INT,     /* int64_t *: an integer from .min to .max */
	OPT_T_SIZE,    /* uint64_t *: bytes, "1.5GiB", "512MiB" (parse_size) */
	OPT_T_CHOICE,  /* int *: the index of the value in .choices */
	OPT_T_CALLBACK /* .cb parses the value into .value */
};

struct option;
/* Parses arg into o->value: -1 on success, else the exit code after the
 * usage error line. */
typedef int (*opt_cb)(const char *cmd, const struct option *o, const char *arg);

struct option {
	enum opt_type type;
	const char *long_name; /* "limit" for --limit */
	char short_name;       /* 'n' for -n; 0: none */
	void *value;
	const char *argh;    /* the value's name in the help: "N", "SIZE" */
	const char *help;    /* may hold '\n' where the --help text breaks */
	const char *choices; /* OPT_T_CHOICE: "stack|function|library" */
	const char *noun;    /* OPT_T_CHOICE: "grouping" in "unknown grouping 'x'" */
	int64_t min, max;    /* OPT_T_INT; OPT_T_UINT: max (0: none) */
	opt_cb cb;
	bool *given;   /* set when the option is given (optional) */
	bool required; /* a usage error without it */
};

struct opt_list {
	const char **v;
	size_t n;
};

#define OPT_END()                                                                                  \
	{                                                                                          \
		.type = OPT_T_END                                                                  \
	}
#define OPT_BOOL(l, v, h, ...)                                                                     \
	{                                                                                          \
		.type = OPT_T_BOOL, .long_name = (l), .value = (bool *){v}, .help = (h),           \
		__VA_ARGS__                                                                        \
	}
#define OPT_STRING(l, v, a, h, ...)                                                                \
	{                                                                                          \
		.type = OPT_T_STRING, .long_name = (l), .value = (const char **){v}, .argh = (a),  \
		.help = (h), __VA_ARGS__                                                           \
	}
#define OPT_FILE(l, v, a, h, ...)                                                                  \
	{                                                                                          \
		.type = OPT_T_FILE, .long_name = (l), .value = (const char **){v}, .argh = (a),    \
		.help = (h), __VA_ARGS__                                                           \
	}
#define OPT_STRINGS(l, v, a, h, ...)                                                               \
	{                                                                                          \
		.type = OPT_T_STRINGS, .long_name = (l), .value = (struct opt_list *){v},          \
		.argh = (a), .help = (h), __VA_ARGS__                                              \
	}
#define OPT_UINT(l, v, a, h, ...)                                                                  \
	{                                                                                          \
		.type = OPT_T_UINT, .long_name = (l), .value = (uint64_t *){v}, .argh = (a),       \
		.help = (h), __VA_ARGS__                                                           \
	}
#define OPT_INT(l, v, a, lo, hi, h, ...)                                                           \
	{                                                                                          \
		.type = OPT_T_INT, .long_name = (l), .value = (int64_t *){v}, .argh = (a),         \
		.min = (lo), .max = (hi), .help = (h), __VA_ARGS__                                 \
	}

/* The options the reports over several traces share (struct rb_opts). */
#define OPT_RB_JSON(o)                                                                             \
	OPT_BOOL("json", &(o)->json, "one JSON object instead of text (keys: docs/cli.md)")
#define OPT_RB_DEVICE(o)                                                                           \
	OPT_INT("device", &(o)->device, "N", 0, INT32_MAX, "only device N",                        \
		.given = &(o)->has_device)
#define OPT_SIZE(l, v, a, h, ...)                                                                  \
	{                                                                                          \
		.type = OPT_T_SIZE, .long_name = (l), .value = (uint64_t *){v}, .argh = (a),       \
		.help = (h), __VA_ARGS__                                                           \
	}
#define OPT_CHOICE(l, v, c, n, h, ...)                                                             \
	{                                                                                          \
		.type = OPT_T_CHOICE, .long_name = (l), .value = (int *){v}, .choices = (c),       \
		.noun = (n), .help = (h), __VA_ARGS__                                              \
	}
#define OPT_CALLBACK(l, v, a, f, h, ...)                                                           \
	{                                                                                          \
		.type = OPT_T_CALLBACK, .long_name = (l), .value = (v), .argh = (a), .cb = (f),    \
		.help = (h), __VA_ARGS__                                                           \
	}

/* The site options of the commands that show allocation sites (summary,
 * top, leaks, growth, oom, diff, export): analysis/sites.h says what they
 * mean; site_args_finish compiles them into .opts. */
#include "analysis/sites.h"
struct site_args {
	struct opt_list hide, focus;
	struct site_opts opts;
};
#define OPT_SITES(a)                                                                               \
	OPT_STRINGS("hide", &(a)->hide, "REGEX",                                                   \
		    "pass over frames whose function, file or module\nmatches REGEX when "         \
		    "choosing the site (repeatable)"),                                             \
	    OPT_STRINGS("focus", &(a)->focus, "REGEX",                                             \
			"the site is the first frame that matches REGEX\n(pprof's --focus; "       \
			"repeatable)"),                                                            \
	    OPT_BOOL("raw-sites", &(a)->opts.raw,                                                  \
		     "the innermost frame outside the CUDA libraries as\nthe site, no rules"),     \
	    OPT_BOOL("full-names", &(a)->opts.full_names,                                          \
		     "C++ names whole in tables (--json always is)")
/* After the report: one warning on stderr for each --hide or --focus that
 * matched no frame (the sites are then what they were without it), and the
 * expressions freed. */
void site_args_done(const char *cmd, struct site_args *a);

/* A command as its --help and the generated documents show it. */
struct opt_usage {
	const char *name;  /* "top" */
	const char *args;  /* after the options in the synopsis: "TRACE..." */
	const char *about; /* the text between the usage line and the options */
	const char *more;  /* the text after the options: examples, exit status */
	int min_args;	   /* fewer positional arguments: "missing TRACE argument" */
	bool stop_at_arg;  /* the first argument ends the options (run's COMMAND) */
};

/* Parses "[options] ARG..." (options anywhere unless stop_at_arg; "--" ends
 * them). Returns -1 with *args (malloc'd, free it; NULL-terminated) and
 * *nargs set, else the exit code: 0 after --help, which prints the help on
 * stdout, or 2 after the usage error line. */
int opt_parse(const struct opt_usage *u, const struct option *opts, int argc, char **argv,
	      const char ***args, int *nargs);
/* opt_parse, then the site options in sa compiled (site_args_finish) and
 * their expression lists freed: -1 with *args to free, or the exit code
 * (*args freed). site_args_done after the report. */
int opt_parse_sites(const struct opt_usage *u, const struct option *opts, int argc, char **argv,
		    const char ***args, int *nargs, struct site_args *sa);

/* A non-negative integer (an option's value, as OPT_UINT reads it): -1,
 * else the usage error "option 'NAME' wants a number, not 'ARG'" (2). */
int opt_parse_uint(const char *cmd, const char *name, const char *arg, uint64_t *out);

/* ---- documents (gpumemtrace --gen) ---- */

/* What --gen writes: the bash completion script; the man page's SYNOPSIS;
 * a command's .SS heading and its options list; a command's synopsis for
 * docs/cli.md; the docs/cli.md flags table. */
enum opt_gen {
	OPT_GEN_COMPLETION,
	OPT_GEN_MAN_SYNOPSIS,
	OPT_GEN_MAN_HEADING,
	OPT_GEN_MAN_OPTIONS,
	OPT_GEN_MD_SYNOPSIS,
	OPT_GEN_MD_OPTIONS
};
/* Between opt_gen_begin and opt_gen_end, opt_parse writes its command's
 * part of the document to out (only for the command `only` when that is
 * set) instead of parsing, and returns 0: the command runs no further. */
struct opt_gen_state {
	enum opt_gen what;
	FILE *out;
	const char *only;
};
void opt_gen_begin(struct opt_gen_state *g);
void opt_gen_end(void);
/* The parts before and after the commands' parts (nothing for most). */
void opt_gen_head(const struct opt_gen_state *g, const char *const *names, size_t n);
void opt_gen_tail(const struct opt_gen_state *g);

#endif
