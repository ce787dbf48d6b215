/* gpumemtrace watch: a frame of the view as lines, and as JSON (cli/watch.h).
 * The terminal view and the plain snapshots print the same lines: one
 * renderer, so the two never show different figures. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/watch.h"

#define NUM_COLS     31 /* "   live  vs start   vs step  ": three columns and gaps */
#define SPARK_SNAP   60 /* history columns in a snapshot */
#define DEVICE_LINES 3	/* name, figures, history; then the column heads */

static void add(struct watch_lines *l, int style, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(struct watch_lines *l, int style, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = xstrdup("");
	va_end(ap);
	GROW(l->v, l->n, l->cap);
	l->v[l->n++] = (struct watch_line){s, style};
}

static char *strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *strf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = xstrdup("");
	va_end(ap);
	return s;
}

void watch_lines_free(struct watch_lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Code points in s (the terminal columns the view's text takes). */
static size_t watch_width(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

void watch_cut(char *s, size_t cols)
{
	size_t n = 0;
	for (char *p = s; *p; p++) {
		if (((unsigned char)*p & 0xc0) != 0x80 && n++ == cols) {
			*p = '\0';
			return;
		}
	}
}

/* "+1.0 MiB", "-512 KiB", "0 B". */
static const char *fmt_delta(char *buf, int64_t v)
{
	char s[32];
	if (!v)
		return strcpy(buf, "0 B");
	snprintf(buf, 40, "%c%s", v > 0 ? '+' : '-',
		 fmt_size(s, v > 0 ? (uint64_t)v : (uint64_t)0 - (uint64_t)v));
	return buf;
}

/* "2m13s", "45s", "1h02m". */
static const char *fmt_age(char *buf, int64_t ns)
{
	int64_t s = ns > 0 ? ns / 1000000000 : 0;
	if (s < 60)
		snprintf(buf, 32, "%" PRId64 "s", s);
	else if (s < 3600)
		snprintf(buf, 32, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else
		snprintf(buf, 32, "%" PRId64 "h%02" PRId64 "m", s / 3600, s / 60 % 60);
	return buf;
}

/* The row's name as the column shows it: a thread gets its name. */
static void row_name(struct live *lv, const struct live_row *r, char *buf, size_t size)
{
	const char *name = NULL;
	if (r->group == LIVE_BY_THREAD)
		name = live_thread_name(lv, strtoull(r->key + 4, NULL, 10));
	snprintf(buf, size, "%s%s%s", r->key, name ? " " : "", name ? name : "");
}

/* A name that does not fit: "fn (dir/file.py:42)" loses the directories
 * first, then its end. */
static void fit_name(char *s, size_t cols, bool utf8)
{
	if (watch_width(s) <= cols)
		return;
	char *open = strrchr(s, '('), *slash = open ? strrchr(open, '/') : NULL;
	if (slash)
		memmove(open + 1, slash + 1, strlen(slash + 1) + 1);
	if (watch_width(s) <= cols || cols < 4)
		return;
	watch_cut(s, cols - (utf8 ? 1 : 3));
	strcat(s, utf8 ? "\xe2\x80\xa6" : "...");
}

static const char *dev_label(char *buf, int64_t ordinal)
{
	if (ordinal < 0)
		snprintf(buf, 32, "GPU ?");
	else
		snprintf(buf, 32, "GPU %" PRId64, ordinal);
	return buf;
}

static void spark_label(char *buf, size_t size, uint64_t shown_s, uint64_t span, uint64_t max)
{
	char a[32], b[32], m[32];
	fmt_age(a, (int64_t)shown_s * 1000000000);
	fmt_size(m, max);
	if (span > 1)
		snprintf(buf, size, "last %s (%s a column), max %s", a,
			 fmt_age(b, (int64_t)span * 1000000000), m);
	else
		snprintf(buf, size, "last %s, max %s", a, m);
}

static void spark(struct live *lv, const struct live_dev *d, const struct watch_frame *f,
		  struct watch_lines *out)
{
	size_t ncols = SPARK_SNAP;
	char label[128];
	if (f->tui) { /* the label at its widest takes its room, the history the rest */
		spark_label(label, sizeof(label), LIVE_HISTORY_S, 99, d->peak);
		size_t lw = strlen(label) + 4;
		ncols = (size_t)f->width > lw + 8 ? (size_t)f->width - lw : 8;
	}
	uint64_t *cols = xcalloc(ncols, sizeof(*cols)), span, max = 0;
	size_t empty;
	live_history(lv, d, cols, ncols, &span, &empty);
	for (size_t i = 0; i < ncols; i++)
		max = cols[i] > max ? cols[i] : max;
	spark_label(label, sizeof(label), (uint64_t)(ncols - empty) * span, span, max);
	static const char *const blocks[] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83",
					     "\xe2\x96\x84", "\xe2\x96\x85", "\xe2\x96\x86",
					     "\xe2\x96\x87", "\xe2\x96\x88"};
	static const char ascii[] = ".:-=+*#@";
	char *line = xcalloc(ncols * 3 + 8, 1), *p = line;
	*p++ = ' ';
	*p++ = ' ';
	for (size_t i = 0; i < ncols; i++) {
		unsigned level = max && cols[i] ? (unsigned)((cols[i] * 8 - 1) / max) : 8;
		if (level == 8 || i < empty) {
			*p++ = ' ';
		} else if (f->utf8) {
			memcpy(p, blocks[level], 3);
			p += 3;
		} else {
			*p++ = ascii[level];
		}
	}
	*p = '\0';
	add(out, WS_PLAIN, "%s  %s", line, label);
	free(line);
	free(cols);
}

static void device_head(struct live *lv, const struct live_dev *d, const struct watch_frame *f,
			struct watch_lines *out)
{
	const char *dot = f->utf8 ? " \xc2\xb7" : " -";
	const struct trace_device *td = trace_device(&lv->t, d->ordinal);
	char a[32], b[32], c[32], l[32];
	char total[96] = "";
	if (d->has_nvml && d->nvml_total && !d->nvml_inconsistent)
		snprintf(total, sizeof(total), "%s %s of %s used (NVML)", dot,
			 fmt_size(a, d->nvml_used), fmt_size(b, d->nvml_total));
	else if (d->total)
		snprintf(total, sizeof(total), "%s %s", dot, fmt_size(a, d->total));
	add(out, WS_HEAD, "%s%s%s%s", dev_label(l, d->ordinal), td && *td->name ? " " : "",
	    td && *td->name ? td->name : "", total);
	char fw[96] = "", smi[64] = "";
	if (d->has_reserved)
		snprintf(fw, sizeof(fw), "  reserved %s (%s)", fmt_size(a, d->reserved), d->source);
	else if (d->has_allocated)
		snprintf(fw, sizeof(fw), "  %s allocated %s", d->source, fmt_size(a, d->allocated));
	if (d->has_nvml && d->nvml_process_known && !d->nvml_inconsistent)
		snprintf(smi, sizeof(smi), "  nvml %s", fmt_size(c, d->nvml_process));
	add(out, WS_PLAIN, "  traced %s  peak %s%s%s", fmt_size(a, d->live), fmt_size(b, d->peak),
	    fw, smi);
}

static void rows(struct live *lv, const struct live_dev *d, const struct watch_frame *f,
		 size_t max_rows, struct watch_lines *out)
{
	add(out, WS_HEAD, "%9s %10s %10s  %s by %s", "live", "vs start", "vs step",
	    live_group_name[f->by], live_sort_name[f->sort]);
	size_t n;
	struct live_row **v = live_rows(lv, d->ordinal, f->by, f->sort, &n);
	size_t cols = f->tui && f->width > NUM_COLS + 8 ? (size_t)f->width - NUM_COLS : 0;
	for (size_t i = 0; i < n && i < max_rows; i++) {
		char a[32], b[40], c[40], name[1100];
		row_name(lv, v[i], name, sizeof(name) - 8);
		if (cols)
			fit_name(name, cols, f->utf8);
		add(out, WS_PLAIN, "%9s %10s %10s  %s", fmt_size(a, v[i]->live),
		    fmt_delta(b, live_row_since_start(v[i])),
		    lv->steps ? fmt_delta(c, live_row_since_step(lv, v[i])) : "-", name);
	}
	if (n > max_rows && max_rows)
		add(out, WS_PLAIN, "%9s (%zu more)", "", n - max_rows);
	if (!n)
		add(out, WS_PLAIN, "%9s (nothing live)", "");
	free(v);
}

/* The model's warnings, one line each: a leak suspect, a device nearly
 * full, events lost. */
static void warnings(struct live *lv, const struct watch_frame *f, struct watch_lines *out)
{
	char a[32], b[32], c[32], l[32], name[1100];
	for (size_t i = 0; i < lv->ndevs; i++) {
		const struct live_dev *d = &lv->devs[i];
		if (f->one_device && d->ordinal != f->device)
			continue;
		struct live_leak lk;
		if (live_leak(lv, d, &lk)) {
			name[0] = '\0';
			if (lk.site) {
				row_name(lv, lk.site, name, sizeof(name));
				if (f->tui)
					fit_name(name, 48, f->utf8);
			}
			add(out, WS_WARN,
			    "! leak suspect on %s: live bytes rose in %" PRIu64
			    " of the last %" PRIu64 " steps (%s)%s%s%s%s",
			    dev_label(l, d->ordinal), lk.rises, lk.steps,
			    fmt_delta(a, (int64_t)lk.grew), lk.site ? ", most at " : "", name,
			    lk.site ? " " : "", lk.site ? fmt_delta(b, (int64_t)lk.site_grew) : "");
		}
		bool nvml = d->has_nvml && d->nvml_total && !d->nvml_inconsistent;
		uint64_t used = nvml ? d->nvml_used : d->live;
		uint64_t total = nvml ? d->nvml_total : d->total;
		if (total && used * 100 >= total * f->full_pct)
			add(out, WS_WARN, "! %s is %" PRIu64 "%% full: %s of %s %s",
			    dev_label(l, d->ordinal), used * 100 / total, fmt_size(a, used),
			    fmt_size(b, total), nvml ? "used (NVML, every process)" : "traced");
		if (d->nvml_inconsistent)
			add(out, WS_WARN,
			    "! NVML reported %s on %s, more than its total: its figures are "
			    "not used",
			    fmt_size(a, d->nvml_inconsistent), dev_label(l, d->ordinal));
	}
	if (lv->t.lost_in_children)
		add(out, WS_WARN,
		    "! %" PRIu64 " events of children made without fork handlers lost",
		    lv->t.lost_in_children);
	(void)c;
}

/* The title's command in cols columns: its arguments cut, its pid kept. */
static char *fit_title(const char *title, size_t cols, bool utf8)
{
	const char *pid = strstr(title, " (pid ");
	size_t tail = pid ? watch_width(pid) : 0, dots = utf8 ? 1 : 3;
	char *s = xstrdup(title);
	if (watch_width(s) <= cols)
		return s;
	if (cols < tail + dots + 4) {
		watch_cut(s, cols);
		return s;
	}
	watch_cut(s, cols - tail - dots);
	char *r = strf("%s%s%s", s, utf8 ? "\xe2\x80\xa6" : "...", pid ? pid : "");
	free(s);
	return r;
}

static void title(struct live *lv, const struct watch_frame *f, struct watch_lines *out)
{
	const char *dot = f->utf8 ? " \xc2\xb7 " : " - ";
	char e[32];
	if (!lv) {
		add(out, WS_TITLE, "gpumemtrace watch%s%s%s%s", dot, f->state, dot, f->title);
		add(out, WS_PLAIN, "no trace yet");
		return;
	}
	int64_t el = lv->newest_ns ? trace_rel(&lv->t, lv->newest_ns) : 0;
	char *head = strf("gpumemtrace watch%s%s%s%s%s%" PRIu64 " events%s", dot, f->state, dot,
			  fmt_age(e, el), dot, lv->t.events, dot);
	size_t hw = watch_width(head);
	char *cmd = f->tui && hw < (size_t)f->width
			? fit_title(f->title, (size_t)f->width - hw, f->utf8)
			: xstrdup(f->title);
	add(out, WS_TITLE, "%s%s", head, cmd);
	free(head);
	free(cmd);
	char ago[32], *steps = NULL;
	if (lv->steps)
		steps = strf("%" PRIu64 " step%s, the last \"%s\" %s ago", lv->steps,
			     lv->steps == 1 ? "" : "s", lv->step_text,
			     fmt_age(ago, (int64_t)(lv->newest_ns - lv->step_time_ns)));
	else
		steps = strf("no steps yet (ranges or marks matching '%s')", f->step_re);
	/* a path too long for the line: its file name */
	const char *path = f->path;
	if (f->tui && watch_width(path) + watch_width(dot) + watch_width(steps) > (size_t)f->width)
		path = path_basename(path);
	add(out, WS_PLAIN, "%s%s%s", path, dot, steps);
	free(steps);
}

/* Long lines broken at spaces into lines of at most width columns, the
 * rest indented by two. */
static void wrap(struct watch_lines *l, size_t width)
{
	struct watch_lines out = {0};
	for (size_t i = 0; i < l->n; i++) {
		const char *p = l->v[i].text;
		bool first = true;
		while (*p) {
			size_t room = first || width < 8 ? width : width - 2, cols = 0;
			const char *end = p, *space = NULL;
			while (*end && cols < room) {
				if (*end == ' ')
					space = end;
				cols += ((unsigned char)*++end & 0xc0) != 0x80;
			}
			if (*end && space && space > p)
				end = space;
			add(&out, l->v[i].style, "%s%.*s", first ? "" : "  ", (int)(end - p), p);
			first = false;
			p = *end == ' ' ? end + 1 : end;
		}
		free(l->v[i].text);
	}
	free(l->v);
	*l = out;
}

/* Partial data, said first, as every report says it. */
static void partial(struct live *lv, const struct watch_frame *f, struct watch_lines *out)
{
	uint64_t lost = trace_lost_own(&lv->t);
	if (lost)
		add(out, WS_WARN,
		    "! PARTIAL DATA: %" PRIu64 " events lost: allocations and frees may be missing",
		    lost);
	if (f->incomplete && !lv->t.has_trailer)
		add(out, WS_WARN,
		    "! PARTIAL DATA: incomplete trace (no trailer: killed, crashed or still "
		    "running): figures up to its last write");
}

void watch_render(struct live *lv, const struct watch_frame *f, struct watch_lines *out)
{
	title(lv, f, out);
	if (!lv)
		return;
	struct watch_lines part = {0};
	partial(lv, f, &part);
	if (f->tui)
		wrap(&part, (size_t)f->width);
	for (size_t i = 0; i < part.n; i++) {
		GROW(out->v, out->n, out->cap);
		out->v[out->n++] = part.v[i];
	}
	free(part.v);
	long head = (long)out->n;
	size_t ndev = 0;
	for (size_t i = 0; i < lv->ndevs; i++)
		ndev += !f->one_device || lv->devs[i].ordinal == f->device;
	struct watch_lines warn = {0};
	warnings(lv, f, &warn);
	for (size_t i = 0; i < f->nnotes; i++)
		add(&warn, WS_WARN, "! %s", f->notes[i]);
	if (f->tui)
		wrap(&warn, (size_t)f->width);
	size_t per_dev = f->top;
	if (f->tui) {
		/* the title and partial data, a device's own lines and the column
		 * heads, warnings, footer */
		long room = (long)f->height - head - (long)warn.n - 1 -
			    (long)ndev * (DEVICE_LINES + 1) - (ndev ? (long)ndev : 0);
		per_dev = room > 0 && ndev ? (size_t)room / ndev : 1;
		per_dev = per_dev ? per_dev : 1;
	}
	if (!ndev)
		add(out, WS_PLAIN,
		    f->one_device ? "(no such device in the trace yet)"
				  : "(no device memory traced yet)");
	for (size_t i = 0; i < lv->ndevs; i++) {
		const struct live_dev *d = &lv->devs[i];
		if (f->one_device && d->ordinal != f->device)
			continue;
		device_head(lv, d, f, out);
		spark(lv, d, f, out);
		rows(lv, d, f, per_dev, out);
	}
	for (size_t i = 0; i < warn.n; i++) {
		GROW(out->v, out->n, out->cap);
		out->v[out->n++] = warn.v[i];
	}
	free(warn.v);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_rows(struct live *lv, const struct live_dev *d, const struct watch_frame *f,
		      FILE *out)
{
	fputs(", \"rows\": [", out);
	size_t n;
	struct live_row **v = live_rows(lv, d->ordinal, f->by, f->sort, &n);
	for (size_t i = 0; i < n && i < f->top; i++) {
		char name[1100];
		row_name(lv, v[i], name, sizeof(name));
		fputs(i ? ", {\"key\": " : "{\"key\": ", out);
		json_cstr(out, name);
		fprintf(out,
			", \"live_bytes\": %" PRIu64 ", \"live_allocations\": %" PRIu64
			", \"since_start_bytes\": %" PRId64 ", \"since_step_bytes\": ",
			v[i]->live, v[i]->count, live_row_since_start(v[i]));
		if (lv->steps)
			fprintf(out, "%" PRId64 "}", live_row_since_step(lv, v[i]));
		else
			fputs("null}", out);
	}
	fputc(']', out);
	free(v);
}

static void json_opt(FILE *out, const char *key, bool has, uint64_t v)
{
	fprintf(out, ", \"%s\": ", key);
	if (has)
		fprintf(out, "%" PRIu64, v);
	else
		fputs("null", out);
}

void watch_json(struct live *lv, const struct watch_frame *f, FILE *out)
{
	fputs("{\"state\": ", out);
	json_cstr(out, f->state);
	fputs(", \"trace\": ", out);
	if (f->path)
		json_cstr(out, f->path);
	else
		fputs("null", out);
	if (!lv) {
		fputs(", \"devices\": []}\n", out);
		return;
	}
	fprintf(out,
		", \"elapsed_ns\": %" PRId64 ", \"events\": %" PRIu64 ", \"lost_events\": %" PRIu64
		", \"complete\": %s, \"steps\": %" PRIu64 ", \"step\": ",
		lv->newest_ns ? trace_rel(&lv->t, lv->newest_ns) : 0, lv->t.events,
		trace_lost_own(&lv->t), lv->t.complete && lv->t.has_trailer ? "true" : "false",
		lv->steps);
	if (lv->step_text)
		json_cstr(out, lv->step_text);
	else
		fputs("null", out);
	fprintf(out, ", \"by\": \"%s\", \"devices\": [", live_group_name[f->by]);
	bool first = true;
	for (size_t i = 0; i < lv->ndevs; i++) {
		const struct live_dev *d = &lv->devs[i];
		if (f->one_device && d->ordinal != f->device)
			continue;
		fprintf(out,
			"%s{\"index\": %" PRId64 ", \"live_bytes\": %" PRIu64
			", \"live_allocations\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
			", \"since_start_bytes\": %" PRId64,
			first ? "" : ", ", d->ordinal, d->live, d->count, d->peak,
			(int64_t)(d->live - d->at_start));
		first = false;
		if (lv->steps)
			fprintf(out, ", \"since_step_bytes\": %" PRId64,
				live_dev_since_step(lv, d));
		else
			fputs(", \"since_step_bytes\": null", out);
		json_opt(out, "total_bytes", d->total, d->total);
		json_opt(out, "framework_reserved_bytes", d->has_reserved, d->reserved);
		json_opt(out, "framework_allocated_bytes", d->has_allocated, d->allocated);
		json_opt(out, "nvml_process_bytes", d->has_nvml && d->nvml_process_known,
			 d->nvml_process);
		json_opt(out, "nvml_used_bytes", d->has_nvml, d->nvml_used);
		json_opt(out, "nvml_inconsistent_bytes", d->nvml_inconsistent != 0,
			 d->nvml_inconsistent);
		json_rows(lv, d, f, out);
		fputc('}', out);
	}
	fputs("], \"warnings\": [", out);
	struct watch_lines warn = {0};
	warnings(lv, f, &warn);
	for (size_t i = 0; i < f->nnotes; i++)
		add(&warn, WS_WARN, "! %s", f->notes[i]);
	for (size_t i = 0; i < warn.n; i++) {
		if (i)
			fputs(", ", out);
		json_cstr(out, warn.v[i].text + 2);
	}
	watch_lines_free(&warn);
	fputs("]}\n", out);
}
