/* What the reports print alike: see report-print.h. */
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include "common/text.h"
#include "analysis/report-base.h"
#include "analysis/sites.h"
#include "cli/report-print.h"

void cli_json_s(FILE *f, const char *s)
{
	s = s ? s : "";
	json_str(f, s, strlen(s));
}

static const char *state(const struct trace *t)
{
	return t->complete			  ? "complete"
	       : t->info.damage			  ? "INCOMPLETE: damaged"
	       : t->info.stop == GMT_STOP_TORN	  ? "INCOMPLETE: torn tail"
	       : t->info.stop == GMT_STOP_CORRUPT ? "INCOMPLETE: corrupt"
						  : "INCOMPLETE: no trailer";
}

void cli_human_head(FILE *f, struct trace *t)
{
	char b[32];
	const char *cmd = t->command && t->command[0] ? t->command : NULL;
	cli_wrapf(f, 4, "trace %s (pid %" PRIu64 ", %s)%s%s", t->path,
		  t->has_process ? t->pid : (uint64_t)t->hdr.pid, state(t), cmd ? ": " : "",
		  cmd ? cmd : "");
	const char *lost = "";
	if (t->lost && t->lost_in_children >= t->lost) /* none of this process's */
		lost = " LOST in untraced child processes (_Fork, a raw clone)";
	else if (t->lost)
		lost = " LOST: the figures below undercount";
	if (t->lost)
		cli_wrapf(f, 4, "  %" PRIu64 " events over %s, %" PRIu64 "%s", t->events,
			  rb_dur(b, trace_duration_ns(t)), t->lost, lost);
	else
		cli_wrapf(f, 4, "  %" PRIu64 " events over %s", t->events,
			  rb_dur(b, trace_duration_ns(t)));
	if (!t->complete)
		cli_wrapf(f, 4,
			  "  note: the trace is incomplete (%s); figures cover what was written",
			  state(t) + 12);
}

void cli_wrapf(FILE *f, int indent, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		xalloc_failed();
	cli_wrap_hang(f, indent, cli_text_width(f), s);
	free(s);
}

void cli_partial_line(FILE *f, const struct trace *t, bool name)
{
	if (!trace_partial(t))
		return;
	char text[256], *line = NULL;
	trace_partial_text(t, text, sizeof(text));
	if (asprintf(&line, "%s%s%s", text, name ? " in " : "", name ? t->path : "") < 0)
		xalloc_failed();
	cli_wrap_hang(f, 2, cli_text_width(f), line); /* the path may be long */
	free(line);
}

void cli_json_partial(FILE *f, const struct trace *t)
{
	char what[160];
	fprintf(f, ", \"lost_events\": %" PRIu64 ", \"partial\": ", trace_lost_own(t));
	if (trace_partial(t))
		cli_json_s(f, trace_partial_what(t, what, sizeof(what)));
	else
		fputs("null", f);
}

void cli_json_head(FILE *f, struct trace *t)
{
	fputs("\"path\": ", f);
	cli_json_s(f, t->path);
	fprintf(f, ", \"pid\": %" PRIu64 ", \"command\": ",
		t->has_process ? t->pid : (uint64_t)t->hdr.pid);
	cli_json_s(f, t->command);
	fprintf(f,
		", \"complete\": %s, \"torn_tail\": %s, \"corrupt\": %s, \"events\": %" PRIu64
		", \"lost_events\": %" PRIu64 ", \"duration_ns\": %" PRId64,
		t->complete ? "true" : "false", t->info.stop == GMT_STOP_TORN ? "true" : "false",
		t->info.stop == GMT_STOP_CORRUPT ? "true" : "false", t->events, t->lost,
		trace_duration_ns(t));
	if (t->info.damage) {
		char why[256];
		fputs(", \"damaged\": ", f);
		cli_json_s(f, gmt_read_damage_text(&t->info, why, sizeof(why)));
	}
}

static void minmax(const uint64_t *v, size_t n, size_t *imax, size_t *imin, double *mean)
{
	double sum = 0;
	*imax = *imin = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i] > v[*imax])
			*imax = i;
		if (v[i] < v[*imin])
			*imin = i;
		sum += (double)v[i];
	}
	*mean = n ? sum / (double)n : 0;
}

void trace_imbalance_json(FILE *f, const uint64_t *v, size_t n)
{
	size_t imax, imin;
	double mean;
	minmax(v, n, &imax, &imin, &mean);
	fprintf(f,
		"{\"max\": %" PRIu64 ", \"max_trace\": %zu, \"min\": %" PRIu64
		", \"min_trace\": %zu, \"mean\": %.0f, \"max_over_min\": ",
		n ? v[imax] : 0, imax, n ? v[imin] : 0, imin, mean);
	if (n && v[imin])
		fprintf(f, "%.4f", (double)v[imax] / (double)v[imin]);
	else
		fputs("null", f);
	fputs(", \"max_over_mean\": ", f);
	if (mean > 0)
		fprintf(f, "%.4f}", (double)v[imax] / mean);
	else
		fputs("null}", f);
}

void trace_imbalance_text(FILE *f, const char *what, const uint64_t *v, struct trace *const *ts,
			  size_t n)
{
	size_t imax, imin;
	double mean;
	char b1[32], b2[32], b3[32], l1[64], l2[64];
	if (!n)
		return;
	char ratio[32] = "-";
	minmax(v, n, &imax, &imin, &mean);
	if (v[imin])
		snprintf(ratio, sizeof(ratio), "%.2fx", (double)v[imax] / (double)v[imin]);
	cli_wrapf(f, 4, "  %s: highest %s in %s, lowest %s in %s, mean %s; max/min %s", what,
		  fmt_size(b1, v[imax]), trace_label(ts[imax], l1, sizeof(l1)),
		  fmt_size(b2, v[imin]), trace_label(ts[imin], l2, sizeof(l2)),
		  fmt_size(b3, (uint64_t)(mean + 0.5)), ratio);
}

int cli_parse_open(const struct opt_usage *u, const struct option *opts, int argc, char **argv,
		   struct rb_opts *o, struct site_args *sa, struct trace **ts)
{
	int rc = sa ? opt_parse_sites(u, opts, argc, argv, &o->paths, &o->npaths, sa)
		    : opt_parse(u, opts, argc, argv, &o->paths, &o->npaths);
	if (rc >= 0)
		return rc;
	if (sa)
		o->sites = &sa->opts;
	rc = rb_open_all(argv[0], o, ts);
	if (rc < 0) {
		rc = rb_check_device(argv[0], o, *ts);
		if (rc >= 0) {
			for (int i = 0; i < o->npaths; i++)
				trace_close(&(*ts)[i]);
			free(*ts);
		}
	}
	if (rc >= 0)
		free(o->paths);
	return rc;
}

int cli_parse_open_plain(const struct opt_usage *u, int argc, char **argv, struct rb_opts *o,
			 struct trace **ts)
{
	const struct option opts[] = {
	    OPT_RB_JSON(o),
	    OPT_RB_DEVICE(o),
	    OPT_END(),
	};
	return cli_parse_open(u, opts, argc, argv, o, NULL, ts);
}

static int plain_open(void *ctx, struct trace *t, const char *cmd, const char *path)
{
	return trace_open(t, cmd, path);
}

int cli_one_open_read(struct cli_one *r, const char *cmd, const char *out, const char **paths,
		      int npaths, rb_read_fn read, void *ctx)
{
	int rc = npaths == 1 ? -1 : say_usage_error(cmd, "expected one TRACE, got %d", npaths);
	if (rc < 0)
		rc = cli_out_open(&r->out, cmd, out, paths, 1);
	if (rc < 0 && (rc = read(ctx, &r->t, cmd, paths[0])) >= 0)
		cli_out_close(&r->out, cmd, false);
	free(paths);
	return rc;
}

int cli_one_open(struct cli_one *r, const char *cmd, const char *out, const char **paths,
		 int npaths)
{
	return cli_one_open_read(r, cmd, out, paths, npaths, plain_open, NULL);
}

int cli_one_close(struct cli_one *r, const char *cmd, int rc)
{
	int wrc = cli_out_close(&r->out, cmd, rc < 0);
	if (rc < 0)
		rc = wrc;
	if (rc < 0)
		rc = trace_finish(&r->t);
	trace_close(&r->t);
	return rc;
}

static void json_frame(FILE *f, const struct trace_frame *fr, const char *skipped_by)
{
	fputs("{\"function\": ", f);
	json_cstr0(f, fr->function ? fr->function : "");
	fputs(", \"file\": ", f);
	json_cstr0(f, fr->file ? fr->file : "");
	fprintf(f, ", \"line\": %" PRIu64 ", \"module\": ", fr->line);
	json_cstr0(f, fr->module ? fr->module->path : "");
	fprintf(f, ", \"module_offset\": %" PRIu64 ", \"python\": %s, \"skipped_by\": ",
		fr->module ? fr->ip - fr->module->bias : 0, fr->python ? "true" : "false");
	if (skipped_by)
		json_cstr0(f, skipped_by);
	else
		fputs("null", f);
	fputc('}', f);
}

void cli_json_stack(FILE *f, struct trace *t, uint64_t stack_id)
{
	struct site_choice c;
	struct trace_frame *fr = NULL;
	site_choose(t, stack_id, &c);
	int n = trace_frames(t, stack_id, &fr);
	const struct site_opts *o = t->site_opts;
	const char *how = o && o->raw  ? "raw"
			  : c.fallback ? "fallback"
			  : c.in_cuda  ? "cuda"
				       : "user";
	enum site_class cls;
	if (c.depth >= 0 && c.depth < n && !(o && o->raw) &&
	    site_rule_of(o, &fr[c.depth], &cls) == SITE_RULE_FOCUS)
		how = "focus";
	fprintf(f, ", \"site_index\": %d, \"site_rule\": \"%s\", \"stack\": [", c.depth, how);
	for (int i = 0; i < n; i++) {
		const char *by = NULL;
		if (i < c.depth) {
			int rule = o && o->raw ? 0 : site_rule_of(o, &fr[i], &cls);
			by = o && o->raw ? "--raw-sites" : site_rule_name(rule);
			if (!by) /* the user's native code, passed over for a Python caller */
				by = "python-caller-preferred";
		}
		if (i)
			fputs(", ", f);
		json_frame(f, &fr[i], by);
	}
	fputc(']', f);
	free(fr);
}

int cli_text_width(FILE *f)
{
	struct winsize ws;
	if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	const char *c = getenv("COLUMNS");
	int n = c ? atoi(c) : 0;
	return n >= 20 && n <= 10000 ? n : 160;
}

/* Columns of s[0..n): UTF-8 continuation bytes take none. */
static int cols_of(const char *s, size_t n)
{
	int c = 0;
	for (size_t i = 0; i < n; i++)
		c += (s[i] & 0xC0) != 0x80;
	return c;
}

static int str_cols(const char *s)
{
	return cols_of(s, strlen(s));
}

void cli_wrap(FILE *f, int indent, int width, const char *text)
{
	int col = 0, lead = indent;
	bool fresh = true; /* nothing on this line yet */
	const char *p = text;
	if (width < indent + 20)
		width = indent + 20;
	while (*p) {
		if (*p == '\n') { /* the text's own line breaks stay */
			fputc('\n', f);
			p++, col = 0, fresh = true, lead = indent;
			continue;
		}
		size_t sp = strspn(p, " "), n = strcspn(p + sp, " \n");
		if (!n) {
			p += sp;
			continue;
		}
		int w = cols_of(p + sp, n);
		if (!fresh && col + 1 + w > width) {
			fputc('\n', f);
			col = 0, fresh = true, lead = indent + 2;
		}
		if (fresh) {
			fprintf(f, "%*s", lead, "");
			col = lead;
		} else {
			fputc(' ', f);
			col++;
		}
		fwrite(p + sp, 1, n, f);
		col += w, fresh = false;
		p += sp + n;
	}
	if (!fresh || col)
		fputc('\n', f);
}

void cli_wrap_hang(FILE *f, int indent, int width, const char *text)
{
	int col = 0;
	const char *p = text;
	while (*p) {
		if (*p == '\n') {
			fputc('\n', f);
			col = 0;
			p++;
			continue;
		}
		size_t sp = strspn(p, " "), wl = strcspn(p + sp, " \n");
		char word[4096];
		snprintf(word, sizeof(word), "%.*s", (int)wl, p + sp);
		int wc = cols_of(word, strlen(word));
		if (col > indent && col + (int)sp + wc > width) {
			fprintf(f, "\n%*s", indent, ""); /* the spaces before the word go */
			col = indent;
		} else {
			fprintf(f, "%*s", (int)sp, "");
			col += (int)sp;
		}
		fwrite(p + sp, 1, wl, f);
		col += wc;
		p += sp + wl;
	}
	fputc('\n', f);
}

const char *cli_fit(const char *s, int cols, char *buf, size_t size)
{
	int used = 0;
	size_t i = 0, o = 0;
	if (cols < 1)
		cols = 1;
	while (s[i]) {
		size_t n = 1;
		while ((s[i + n] & 0xC0) == 0x80)
			n++;			       /* a UTF-8 character is one column */
		if (used + 1 > cols - 1 && s[i + n]) { /* room for "…" only */
			if (o + 4 <= size) {
				memcpy(buf + o, "\xe2\x80\xa6", 3);
				o += 3;
			}
			break;
		}
		if (o + n + 1 > size)
			break;
		memcpy(buf + o, s + i, n);
		o += n;
		i += n;
		used++;
	}
	buf[o] = 0;
	return buf;
}

/* The paths inside "(...)" cut to their last `keep` components. */
static void short_paths(const char *s, int keep, char *out, size_t size)
{
	size_t o = 0, i = 0;
	while (s[i] && o + 4 < size) {
		out[o++] = s[i];
		if (s[i++] != '(')
			continue;
		size_t e = i + strcspn(s + i, ") "), from = e;
		int slashes = 0;
		while (from > i && !(s[from - 1] == '/' && ++slashes == keep))
			from--;
		if (slashes < keep || (keep > 1 && from <= i + 1))
			continue; /* nothing to cut */
		if (keep > 1) {
			memcpy(out + o, "\xe2\x80\xa6/", 4);
			o += 4;
		}
		i = from;
	}
	out[o] = 0;
}

/* The columns of a site's own frame, before its callers (" <- "). */
static int first_cols(const char *s)
{
	const char *e = strstr(s, " <- ");
	int n = 0;
	for (; *s && s != e; s++)
		n += (*s & 0xC0) != 0x80;
	return n;
}

/* The site's function without its leading namespaces while its frame is
 * too long, "…" in their place; Class::method stays:
 * "…ConvolutionBackward0::apply". */
static void short_scope(char *s, int cols)
{
	while (first_cols(s) > cols) {
		size_t start = strncmp(s, "\xe2\x80\xa6", 3) == 0 ? 3 : 0;
		size_t fn = strcspn(s, " ");
		char *a = memmem(s + start, fn - start, "::", 2);
		if (!a || !memmem(a + 2, fn - (size_t)(a + 2 - s), "::", 2))
			return;
		memmove(s + 3, a + 2, strlen(a + 2) + 1);
		memcpy(s, "\xe2\x80\xa6", 3);
	}
}

/* s fit to cols like cli_fit, but paths in parentheses shortened first
 * ("(…/pkg/train.py:7)", then "(train.py:7)"): the function and its
 * file:line stay. */
static const char *fit_site(const char *s, int cols, char *buf, size_t size)
{
	int own = first_cols(s);
	/* the callers are cut first; a cut that would leave no room for
	 * " <- …" keeps the site's own frame whole and drops them all */
	if (own <= cols && (str_cols(s) <= cols || own + 5 <= cols))
		return cli_fit(s, cols, buf, size);
	if (own <= cols) {
		const char *e = strstr(s, " <- ");
		snprintf(buf, size, "%.*s", (int)(e - s), s);
		return buf;
	}
	char *tmp = xrealloc(NULL, strlen(s) * 2 + 8);
	for (int keep = 2; keep >= 1; keep--) {
		short_paths(s, keep, tmp, strlen(s) * 2 + 8);
		if (first_cols(tmp) <= cols || keep == 1)
			break;
	}
	short_scope(tmp, cols);
	cli_fit(tmp, cols, buf, size);
	free(tmp);
	return buf;
}

void cli_site_line(FILE *f, const char *site, int room, const char *const *tails, int n)
{
	/* a note stays while the site's own frame fits (up to 80 columns) */
	int need = str_cols(site) < RB_SITE_MIN ? str_cols(site) : RB_SITE_MIN, k = 0;
	int want = first_cols(site) < 80 ? first_cols(site) : 80;
	if (want < need)
		want = need;
	while (k + 1 < n && room - str_cols(tails[k]) < want)
		k++;
	int cols = room - str_cols(tails[k]);
	char cut[4096];
	fprintf(f, "%s%s\n", fit_site(site, cols < need ? need : cols, cut, sizeof(cut)), tails[k]);
}

void cli_json_libraries(FILE *f, struct trace *t, const struct trace_row *r, int metric)
{
	const struct trace_row_lib **v;
	int m = metric == TM_CALLS ? TM_TOTAL : metric;
	size_t n = trace_row_libs(r, m, &v);
	fputs(", \"library\": ", f);
	json_cstr0(f, n ? v[0]->name : trace_library(t, r->stack_id));
	fputs(", \"libraries\": [", f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ", {\"library\": " : "{\"library\": ", f);
		json_cstr0(f, v[i]->name);
		fprintf(f, ", \"bytes\": %" PRIu64 "}", v[i]->v[m]);
	}
	fputc(']', f);
	free(v);
}
