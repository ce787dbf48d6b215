/* One parser for every command's option table; see options.h. */
#include "cli/options.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/trace.h"
#include "analysis/diag.h"
#include "reader/xalloc.h"

static const struct opt_gen_state *gen;

static bool takes_value(const struct option *o)
{
	return o->type != OPT_T_BOOL;
}

/* The option `a` names ("--by", "--by=X", "-n", "-n=X"); *val: after '='. */
static const struct option *find(const struct option *opts, const char *a, const char **val)
{
	for (const struct option *o = opts; o->type != OPT_T_END; o++) {
		size_t n;
		if (a[1] == '-') {
			n = strlen(o->long_name);
			if (strncmp(a + 2, o->long_name, n) != 0)
				continue;
			n += 2;
		} else {
			if (!o->short_name || a[1] != o->short_name)
				continue;
			n = 2;
		}
		if (a[n] == 0 || a[n] == '=') {
			*val = a[n] == '=' ? a + n + 1 : NULL;
			return o;
		}
	}
	return NULL;
}

/* "stack, function, library" from "stack|function|library". */
static void choices_list(char *buf, size_t size, const char *choices)
{
	snprintf(buf, size, "%s", choices);
	char *out = buf;
	for (const char *c = choices; *c && (size_t)(out - buf) + 2 < size; c++) {
		if (*c == '|') {
			*out++ = ',';
			*out++ = ' ';
		} else {
			*out++ = *c;
		}
	}
	*out = 0;
}

static int set_choice(const char *cmd, const struct option *o, const char *arg)
{
	int k = 0;
	size_t n = strlen(arg);
	for (const char *c = o->choices; *c; k++) {
		size_t len = strcspn(c, "|");
		if (len == n && strncmp(c, arg, n) == 0) {
			*(int *)o->value = k;
			return -1;
		}
		c += len + (c[len] == '|');
	}
	char list[256];
	choices_list(list, sizeof(list), o->choices);
	return say_usage_error(cmd, "--%s: unknown %s '%s' (%s)", o->long_name, o->noun, arg, list);
}

/* -1, or the usage error's exit code (a bad REGEX). */
static int site_args_finish(const char *cmd, struct site_args *a)
{
	char err[512];
	if (site_opts_init(&a->opts, a->hide.v, a->hide.n, a->focus.v, a->focus.n, err,
			   sizeof(err)))
		return say_usage_error(cmd, "%s", err);
	return -1;
}

int opt_parse_sites(const struct opt_usage *u, const struct option *opts, int argc, char **argv,
		    const char ***args, int *nargs, struct site_args *sa)
{
	int rc = opt_parse(u, opts, argc, argv, args, nargs);
	if (rc < 0 && (rc = site_args_finish(u->name, sa)) >= 0)
		free(*args);
	free(sa->hide.v), free(sa->focus.v);
	sa->hide.v = sa->focus.v = NULL;
	return rc;
}

void site_args_done(const char *cmd, struct site_args *a)
{
	size_t i = 0;
	bool focus;
	const char *re;
	while ((re = site_opts_unmatched(&a->opts, &i, &focus)))
		fprintf(stderr,
			"gpumemtrace %s: warning: --%s '%s' matched no frame; sites unchanged\n",
			cmd, focus ? "focus" : "hide", re);
	site_opts_free(&a->opts);
}

int opt_parse_uint(const char *cmd, const char *name, const char *arg, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = isdigit((unsigned char)arg[0]) ? strtoull(arg, &end, 10) : 0;
	if (!isdigit((unsigned char)arg[0]) || *end || errno)
		return say_usage_error(cmd, "option '%s' wants a number, not '%s'", name, arg);
	*out = x;
	return -1;
}

static int set_uint(const char *cmd, const struct option *o, const char *arg)
{
	char name[64];
	uint64_t x;
	snprintf(name, sizeof(name), "--%s", o->long_name);
	int rc = opt_parse_uint(cmd, name, arg, &x);
	if (rc >= 0)
		return rc;
	if (o->max && x > (uint64_t)o->max)
		return say_usage_error(cmd, "--%s: at most %" PRId64, o->long_name, o->max);
	*(uint64_t *)o->value = x;
	return -1;
}

static int set_int(const char *cmd, const struct option *o, const char *arg)
{
	char *end;
	errno = 0;
	long long x = *arg ? strtoll(arg, &end, 10) : 0;
	if (!*arg || *end || errno || x < o->min || x > o->max)
		return say_usage_error(
		    cmd, "option '--%s' wants an integer from %" PRId64 " to %" PRId64 ", got '%s'",
		    o->long_name, o->min, o->max, arg);
	*(int64_t *)o->value = x;
	return -1;
}

static int set_value(const char *cmd, const struct option *o, const char *arg, int argc)
{
	switch (o->type) {
	case OPT_T_BOOL:
		*(bool *)o->value = true;
		return -1;
	case OPT_T_STRING:
	case OPT_T_FILE:
		*(const char **)o->value = arg;
		return -1;
	case OPT_T_STRINGS: {
		struct opt_list *l = o->value;
		if (!l->v)
			l->v = xrealloc(NULL, (size_t)argc * sizeof(*l->v));
		l->v[l->n++] = arg;
		return -1;
	}
	case OPT_T_UINT:
		return set_uint(cmd, o, arg);
	case OPT_T_INT:
		return set_int(cmd, o, arg);
	case OPT_T_SIZE:
		if (parse_size(arg, o->value) != 0)
			return say_usage_error(
			    cmd, "--%s: bad size '%s' (use bytes, or e.g. 1.5GiB, 512MiB, 2GB)",
			    o->long_name, arg);
		return -1;
	case OPT_T_CHOICE:
		return set_choice(cmd, o, arg);
	case OPT_T_CALLBACK:
		return o->cb(cmd, o, arg);
	case OPT_T_END:
		break;
	}
	return -1;
}

static void gen_command(const struct opt_usage *u, const struct option *opts);
static void opt_help(FILE *f, const struct opt_usage *u, const struct option *opts);

/* One option argument at argv[*i]: -1, or the exit code. */
static int parse_one(const char *cmd, const struct option *opts, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *val = NULL;
	const struct option *o = find(opts, a, &val);
	if (!o)
		return say_usage_error(cmd, "unknown option '%s'", a);
	if (!takes_value(o) && val)
		return say_usage_error(cmd, "option '--%s' takes no value", o->long_name);
	if (takes_value(o) && !val) {
		if (*i + 1 >= argc)
			return say_usage_error(cmd, "option '--%s' needs a value", o->long_name);
		val = argv[++*i];
	}
	if (o->given)
		*o->given = true;
	return set_value(cmd, o, val, argc);
}

int opt_parse(const struct opt_usage *u, const struct option *opts, int argc, char **argv,
	      const char ***args, int *nargs)
{
	if (gen) {
		gen_command(u, opts);
		return 0;
	}
	const char *cmd = u->name;
	const char **pos = xrealloc(NULL, (size_t)(argc + 1) * sizeof(*pos));
	int npos = 0, rc = -1;
	bool dashdash = false;
	for (int i = 1; i < argc && rc < 0; i++) {
		const char *a = argv[i];
		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = true;
		} else if (dashdash || a[0] != '-' || !a[1]) {
			pos[npos++] = a;
			dashdash |= u->stop_at_arg;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			opt_help(stdout, u, opts);
			rc = 0;
		} else {
			rc = parse_one(cmd, opts, argc, argv, &i);
		}
		if (dashdash && u->stop_at_arg)
			for (i++; i < argc; i++)
				pos[npos++] = argv[i];
	}
	for (const struct option *o = opts; rc < 0 && o->type != OPT_T_END; o++)
		if (o->required && !*o->given) /* a required option has .given */
			rc = say_usage_error(cmd, "missing --%s %s", o->long_name,
					     o->choices ? o->choices : o->argh);
	if (rc < 0 && npos < u->min_args) /* "TRACE..." -> "missing TRACE argument" */
		rc = say_usage_error(cmd, "missing %.*s argument", (int)strcspn(u->args, ". "),
				     u->args);
	if (rc >= 0) {
		free(pos);
		return rc;
	}
	pos[npos] = NULL;
	*args = pos;
	*nargs = npos;
	return -1;
}

/* ---- text: the synopsis and the options list ---- */

/* "[--by stack|function]", "[-n N]", "--format perfetto|csv|pprof". */
static void synopsis_item(char *buf, size_t size, const struct option *o)
{
	char name[64];
	if (o->short_name && !o->required)
		snprintf(name, sizeof(name), "-%c", o->short_name);
	else
		snprintf(name, sizeof(name), "--%s", o->long_name);
	const char *v = o->choices ? o->choices : o->argh;
	snprintf(buf, size, "%s%s%s%s%s%s", o->required ? "" : "[", name, v ? " " : "", v ? v : "",
		 o->required ? "" : "]", o->type == OPT_T_STRINGS ? "..." : "");
}

/* Writes "PREFIX[item] [item]... ARGS", broken before column 80 with the
 * next lines indented to the end of the prefix; escape: man's '-'. */
static void synopsis(FILE *f, const char *prefix, const struct opt_usage *u,
		     const struct option *opts, bool wrap)
{
	size_t indent = strlen(prefix), col = indent;
	fputs(prefix, f);
	bool first = true;
	for (const struct option *o = opts;; o++) {
		char item[256];
		if (o->type == OPT_T_END)
			snprintf(item, sizeof(item), "%s", u->args);
		else
			synopsis_item(item, sizeof(item), o);
		size_t n = strlen(item);
		if (!first && wrap && col + 1 + n > 79) {
			fprintf(f, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', f);
			col++;
		}
		fputs(item, f);
		col += n;
		first = false;
		if (o->type == OPT_T_END)
			break;
	}
	fputc('\n', f);
}

/* "  -n, --limit N" */
static void option_left(char *buf, size_t size, const struct option *o)
{
	const char *v = o->argh ? o->argh : o->choices;
	if (o->short_name)
		snprintf(buf, size, "  -%c, --%s%s%s", o->short_name, o->long_name, v ? " " : "",
			 v ? v : "");
	else
		snprintf(buf, size, "      --%s%s%s", o->long_name, v ? " " : "", v ? v : "");
}

/* The --help text. */
static void opt_help(FILE *f, const struct opt_usage *u, const struct option *opts)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "usage: gpumemtrace %s ", u->name);
	synopsis(f, prefix, u, opts, true);
	if (u->about && *u->about)
		fprintf(f, "\n%s", u->about);
	int w = 12; /* "  -h, --help" */
	for (const struct option *o = opts; o->type != OPT_T_END; o++) {
		char left[128];
		option_left(left, sizeof(left), o);
		w = (int)strlen(left) > w ? (int)strlen(left) : w;
	}
	fputs("\noptions:\n", f);
	for (const struct option *o = opts; o->type != OPT_T_END; o++) {
		char left[128];
		option_left(left, sizeof(left), o);
		fprintf(f, "%-*s  ", w, left);
		for (const char *h = o->help; *h; h++) {
			fputc(*h, f);
			if (*h == '\n' && h[1])
				fprintf(f, "%*s", w + 2, "");
		}
		fputc('\n', f);
	}
	fprintf(f, "%-*s  this help\n", w, "  -h, --help");
	if (u->more && *u->more)
		fprintf(f, "\n%s", u->more);
}

/* ---- documents ---- */

void opt_gen_begin(struct opt_gen_state *g)
{
	gen = g;
}

void opt_gen_end(void)
{
	gen = NULL;
}

/* Text for roff: '-' and '\' escaped, breaks as spaces. */
static void man_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '-' || *s == '\\')
			fputc('\\', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
}

/* Text for a Markdown table cell: '|' escaped, breaks as spaces. */
static void md_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
}

static void gen_completion(FILE *f, const struct opt_usage *u, const struct option *opts)
{
	bool valued = false;
	for (const struct option *o = opts; o->type != OPT_T_END; o++)
		valued |= takes_value(o);
	fprintf(f, "\t%s)\n%s", u->name, valued ? "\t\tcase $prev in\n" : "");
	for (const struct option *o = opts; o->type != OPT_T_END; o++) {
		if (!takes_value(o))
			continue;
		fputs("\t\t", f);
		if (o->short_name)
			fprintf(f, "-%c | ", o->short_name);
		fprintf(f, "--%s) ", o->long_name);
		if (o->choices) {
			fputs("COMPREPLY=($(compgen -W \"", f);
			for (const char *c = o->choices; *c; c++)
				fputc(*c == '|' ? ' ' : *c, f);
			fputs("\" -- \"$cur\")); return ;;\n", f);
		} else if (o->type == OPT_T_FILE) {
			fputs("COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", f);
		} else {
			fputs("COMPREPLY=(); return ;;\n", f);
		}
	}
	fputs(valued ? "\t\tesac\n\t\topts=\"" : "\t\topts=\"", f);
	for (const struct option *o = opts; o->type != OPT_T_END; o++) {
		fprintf(f, "--%s ", o->long_name);
		if (o->short_name)
			fprintf(f, "-%c ", o->short_name);
	}
	fprintf(f, "--help%s\" ;;\n", u->stop_at_arg ? " --" : "");
}

static void gen_man_heading(FILE *f, const struct opt_usage *u, const struct option *opts)
{
	char prefix[64], *text = NULL;
	size_t len = 0;
	snprintf(prefix, sizeof(prefix), "%s ", u->name);
	FILE *m = open_memstream(&text, &len);
	synopsis(m, prefix, u, opts, false);
	fclose(m);
	text[len - 1] = 0; /* the '\n' */
	fputs(".SS ", f);
	man_text(f, text);
	free(text);
	fputc('\n', f);
}

static void gen_man_options(FILE *f, const struct option *opts)
{
	for (const struct option *o = opts; o->type != OPT_T_END; o++) {
		const char *v = o->argh ? o->argh : o->choices;
		fputs(".TP\n", f);
		if (o->short_name)
			fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
		fputs("\\fB\\-\\-", f);
		man_text(f, o->long_name);
		fputs("\\fR", f);
		if (v) {
			fputs(" \\fI", f);
			man_text(f, v);
			fputs("\\fR", f);
		}
		fputs("\n\\&", f);
		man_text(f, o->help);
		fputc('\n', f);
	}
}

static void gen_md_options(FILE *f, const struct opt_usage *u, const struct option *opts)
{
	for (const struct option *o = opts; o->type != OPT_T_END; o++) {
		const char *v = o->argh ? o->argh : o->choices;
		fprintf(f, "| `%s` | `", u->name);
		if (o->short_name)
			fprintf(f, "-%c`, `", o->short_name);
		fprintf(f, "--%s", o->long_name);
		if (v) {
			fputc(' ', f);
			md_text(f, v);
		}
		fputs("` | ", f);
		md_text(f, o->help);
		fputs(" |\n", f);
	}
}

static void gen_command(const struct opt_usage *u, const struct option *opts)
{
	FILE *f = gen->out;
	if (gen->only && strcmp(gen->only, u->name) != 0)
		return;
	char prefix[64];
	switch (gen->what) {
	case OPT_GEN_COMPLETION:
		gen_completion(f, u, opts);
		break;
	case OPT_GEN_MAN_SYNOPSIS:
		fprintf(f, ".B gpumemtrace %s\n", u->name);
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		synopsis(m, "", u, opts, false);
		fclose(m);
		text[len - 1] = 0; /* the '\n' */
		man_text(f, text);
		free(text);
		fputs("\n.br\n", f);
		break;
	case OPT_GEN_MAN_HEADING:
		gen_man_heading(f, u, opts);
		break;
	case OPT_GEN_MAN_OPTIONS:
		gen_man_options(f, opts);
		break;
	case OPT_GEN_MD_SYNOPSIS:
		snprintf(prefix, sizeof(prefix), "gpumemtrace %s ", u->name);
		fputs("```\n", f);
		synopsis(f, prefix, u, opts, true);
		fputs("```\n", f);
		break;
	case OPT_GEN_MD_OPTIONS:
		gen_md_options(f, u, opts);
		break;
	}
}

void opt_gen_head(const struct opt_gen_state *g, const char *const *names, size_t n)
{
	FILE *f = g->out;
	if (g->what == OPT_GEN_MD_OPTIONS) {
		fputs("| command | option | meaning |\n| --- | --- | --- |\n", f);
	} else if (g->what == OPT_GEN_COMPLETION) {
		fputs(
		    "# bash completion for gpumemtrace\n"
		    "# Generated by 'gpumemtrace --gen completion' (make gen-docs): do not edit.\n"
		    "_gpumemtrace() {\n"
		    "\tlocal cur prev cmd opts\n"
		    "\tcur=${COMP_WORDS[COMP_CWORD]}\n"
		    "\tprev=${COMP_WORDS[COMP_CWORD - 1]}\n"
		    "\tlocal cmds=\"",
		    f);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s ", names[i]);
		fputs("help\"\n"
		      "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
		      "\t\tCOMPREPLY=($(compgen -W \"$cmds --help --version\" -- \"$cur\"))\n"
		      "\t\treturn\n"
		      "\tfi\n"
		      "\tcmd=${COMP_WORDS[1]}\n"
		      "\t# after \"run ... --\" complete the command to run\n"
		      "\tlocal i\n"
		      "\tfor ((i = 2; i < COMP_CWORD; i++)); do\n"
		      "\t\tif [ \"$cmd\" = run ] && [ \"${COMP_WORDS[i]}\" = \"--\" ]; then\n"
		      "\t\t\tCOMPREPLY=($(compgen -c -- \"$cur\"))\n"
		      "\t\t\treturn\n"
		      "\t\tfi\n"
		      "\tdone\n"
		      "\tcase $cmd in\n",
		      f);
	}
}

void opt_gen_tail(const struct opt_gen_state *g)
{
	if (g->what == OPT_GEN_MAN_SYNOPSIS)
		fputs(".B gpumemtrace\n.BR \\-\\-help \" | \" \\-\\-version \" | \" help\n"
		      ".RI [ command ]\n",
		      g->out);
	if (g->what != OPT_GEN_COMPLETION)
		return;
	fputs("\thelp) COMPREPLY=($(compgen -W \"$cmds\" -- \"$cur\")); return ;;\n"
	      "\tesac\n"
	      "\tif [[ $cur == -* ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
	      "\telse\n"
	      "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
	      "\tfi\n"
	      "}\n"
	      "complete -o filenames -F _gpumemtrace gpumemtrace\n",
	      g->out);
}
