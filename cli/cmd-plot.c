/* gpumemtrace plot: an SVG timeline of device memory, one panel per device,
 * stacked by kind or library, with the peak, OOMs, phases and NVML usage. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/snapshot.h"
#include "analysis/timeline.h"

#define CMD	"plot"
#define NGROUPS 10 /* stacked layers drawn; the rest join "other" */

static const char about[] =
    "Draws live device memory over time as a static SVG: one panel per device,\n"
    "stacked by kind of memory (or by library), the peak marked and labelled,\n"
    "failed allocations (OOMs) marked, NVTX/marker phases shaded, and the NVML\n"
    "process usage as a line when the trace has samples, and the framework's\n"
    "own allocated and reserved bytes as lines when it has counters (run\n"
    "--framework-counters). Long traces are\n"
    "downsampled to 600 columns, each keeping its highest point, so the peak\n"
    "is never lost.\n"
    "\n"
    "The time axis spans the activity (the first to the last allocation or\n"
    "free, and a little around them), not the process's whole life: a run\n"
    "that imports for a minute and trains for a second shows the second.\n"
    "--from and --to choose the window instead, in seconds since the trace\n"
    "start (as the reports print times: 9.2, 9.2s, 250ms).\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace plot gpumemtrace.1234.gmt -o memory.svg\n"
    "  gpumemtrace plot --by library --device 0 run.gmt -o by-library.svg\n"
    "  gpumemtrace plot --from 9 --to 10.5 run.gmt -o step.svg\n"
    "  rsvg-convert memory.svg -o memory.png    # a PNG, for a slide or a ticket\n";
static const struct opt_usage usage = {
    .name = "plot", .args = "TRACE", .min_args = 1, .about = about, .more = more};

/* ---- drawing ---------------------------------------------------------- */

#define W	1200
#define PANEL_H 380
#define LEFT	84
#define RIGHT	330
#define TOP	64
#define GAP	70

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
				      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

/* 1, 2 or 5 times a power of ten, at least x. */
static double nice_step(double x)
{
	if (x <= 0)
		return 1;
	double p = pow(10, floor(log10(x)));
	double m = x / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

struct axis {
	double unit, step, max; /* in units */
	const char *name;
};

static struct axis bytes_axis(uint64_t max_bytes)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	struct axis a = {1, 1, 1, "B"};
	int u = 0;
	double v = (double)(max_bytes ? max_bytes : 1);
	while (u < 4 && v >= 1024 * 1.5) {
		v /= 1024;
		u++;
	}
	a.unit = pow(1024, u);
	a.name = names[u];
	a.step = nice_step(v / 5);
	a.max = ceil(v * 1.08 / a.step) * a.step;
	return a;
}

static struct axis time_axis(uint64_t span_ns)
{
	struct axis a;
	double s = (double)span_ns / 1e9;
	if (s < 1) {
		a.unit = 1e6;
		a.name = "ms";
	} else if (s < 180) {
		a.unit = 1e9;
		a.name = "s";
	} else {
		a.unit = 60e9;
		a.name = "min";
	}
	double v = (double)(span_ns ? span_ns : 1) / a.unit;
	a.step = nice_step(v / 8);
	a.max = v;
	return a;
}

static void fmt_num(char *buf, size_t n, double v)
{
	if (fabs(v - round(v)) < 1e-9)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%g", v);
}

struct frame {
	double x0, y0, w, h; /* the plotting area */
	struct axis xa, ya;
	uint64_t span;
	double off; /* the window's start, ns since the trace start: the ticks' origin */
};

/* Whether an absolute time falls in the window. */
static bool in_window(const struct timeline *p, uint64_t time_ns)
{
	return time_ns >= p->t0 && time_ns <= p->t0 + p->span;
}

static double fx(const struct frame *fr, double rel_ns)
{
	return fr->x0 + fr->w * (rel_ns / (double)(fr->span ? fr->span : 1));
}
static double fy(const struct frame *fr, double bytes)
{
	double top = fr->ya.max * fr->ya.unit;
	double v = bytes > top ? top : bytes;
	return fr->y0 + fr->h - fr->h * (v / top);
}

static void draw_axes(FILE *f, const struct frame *fr)
{
	fputs("<g id=\"axes\" class=\"axes\" font-size=\"12\" fill=\"#333\">\n", f);
	char buf[64];
	for (double v = 0; v <= fr->ya.max + 1e-9; v += fr->ya.step) {
		double y = fy(fr, v * fr->ya.unit);
		fmt_num(buf, sizeof(buf), v);
		fprintf(f,
			"<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#e3e3e3\"/>\n<text class=\"ytick\" x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"end\">%s %s</text>\n",
			fr->x0, y, fr->x0 + fr->w, y, fr->x0 - 8, y + 4, buf, fr->ya.name);
	}
	double first = ceil(fr->off / fr->xa.unit / fr->xa.step - 1e-9) * fr->xa.step;
	for (double v = first; v <= fr->off / fr->xa.unit + fr->xa.max + 1e-9; v += fr->xa.step) {
		double x = fx(fr, v * fr->xa.unit - fr->off);
		fmt_num(buf, sizeof(buf), v);
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n"
			"<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s "
			"%s</text>\n",
			x, fr->y0 + fr->h, x, fr->y0 + fr->h + 5, x, fr->y0 + fr->h + 19, buf,
			fr->xa.name);
	}
	fprintf(f,
		"<line id=\"x-axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		"stroke=\"#333\"/>\n"
		"<line id=\"y-axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		"stroke=\"#333\"/>\n"
		"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\">time since "
		"start (%s)</text>\n"
		"<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\" "
		"font-size=\"13\">live device memory (%s)</text>\n</g>\n",
		fr->x0, fr->y0 + fr->h, fr->x0 + fr->w, fr->y0 + fr->h, fr->x0, fr->y0, fr->x0,
		fr->y0 + fr->h, fr->x0 + fr->w / 2, fr->y0 + fr->h + 38, fr->xa.name, fr->x0 - 62,
		fr->y0 + fr->h / 2, fr->ya.name);
}

static void draw_phases(FILE *f, const struct frame *fr, const struct timeline *p,
			const struct timeline_phase *ph, size_t n)
{
	if (!n)
		return;
	fputs("<g id=\"phases\" font-size=\"11\" fill=\"#555\">\n", f);
	int shade = 0;
	for (size_t i = 0; i < n; i++) {
		if (ph[i].end < p->t0 || ph[i].start > p->t0 + p->span ||
		    (ph[i].mark && !in_window(p, ph[i].start)))
			continue;
		uint64_t start = ph[i].start > p->t0 ? ph[i].start : p->t0;
		uint64_t end = ph[i].end < p->t0 + p->span ? ph[i].end : p->t0 + p->span;
		double x1 = fx(fr, (double)(start - p->t0));
		if (ph[i].mark) {
			fprintf(f,
				"<g class=\"phase mark\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				"y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"2 3\"/>",
				x1, fr->y0, x1, fr->y0 + fr->h);
		} else {
			double x2 = fx(fr, (double)(end - p->t0));
			if (ph[i].depth > 1)
				continue;
			/* outer phases shade the plot; the ones inside them are a strip on top */
			double w = x2 - x1 > 0.5 ? x2 - x1 : 0.5;
			const char *fill = ph[i].depth	 ? "#7a8fa6"
					   : shade++ % 2 ? "#dde3ec"
							 : "#ece6da";
			fprintf(f,
				"<g class=\"phase\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				"height=\"%.1f\" fill=\"%s\" fill-opacity=\"%s\"/>",
				x1, ph[i].depth ? fr->y0 + 18 : fr->y0, w,
				ph[i].depth ? 4.0 : fr->h, fill, ph[i].depth ? "0.35" : "0.8");
			/* a label only where it fits (about 6.5 px a character) */
			const char *label = ph[i].text ? ph[i].text : "";
			if (ph[i].depth || (double)strlen(label) * 6.5 + 6 > w) {
				fputs("<title>", f);
				xml_text(f, label);
				fputs("</title></g>\n", f);
				continue;
			}
		}
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x1 + 3, fr->y0 + 13);
		xml_text(f, ph[i].text && *ph[i].text ? ph[i].text : "(unnamed)");
		fputs("</text><title>", f);
		xml_text(f, ph[i].text ? ph[i].text : "");
		fputs("</title></g>\n", f);
	}
	fputs("</g>\n", f);
}

static int layer_order(const struct timeline_panel *pn, int ngroups, int *order)
{
	int n = 0;
	for (int g = 0; g < TIMELINE_GROUPS; g++)
		if (pn->group_max[g] && (g < ngroups || g == TIMELINE_GROUPS - 1))
			order[n++] = g;
	for (int i = 1; i < n; i++) /* biggest at the bottom */
		for (int j = i; j > 0 && pn->group_max[order[j]] > pn->group_max[order[j - 1]];
		     j--) {
			int x = order[j];
			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	return n;
}

/* The y axis's top: the peak, or NVML's process usage or the framework's
 * counters where higher. */
static uint64_t panel_top(const struct timeline *p, const struct timeline_panel *pn, bool *nvml,
			  const struct counters_series *cs)
{
	const struct trace *t = p->t;
	uint64_t top = 0;
	for (int c = 0; c < TIMELINE_COLS; c++)
		if (pn->cols[c].total > top)
			top = pn->cols[c].total;
	if (cs && cs->max_allocated > top)
		top = cs->max_allocated;
	if (cs && cs->max_reserved > top)
		top = cs->max_reserved;
	*nvml = false;
	for (size_t i = 0; i < t->nsamples; i++)
		if (t->samples[i].device == pn->ordinal && t->samples[i].process_known &&
		    in_window(p, t->samples[i].time_ns)) {
			*nvml = true;
			if (t->samples[i].process_used_bytes > top)
				top = t->samples[i].process_used_bytes;
		}
	return top;
}

static void draw_title(FILE *f, const struct trace *t, int64_t ordinal, double y0)
{
	const struct trace_device *td = trace_device(t, ordinal);
	char sz[32];
	fprintf(f,
		"<text class=\"subtitle\" x=\"%d\" y=\"%.1f\" font-size=\"14\" "
		"font-weight=\"bold\">device %" PRId64,
		LEFT, y0 - 10, ordinal);
	if (td && td->name && *td->name) {
		fputs(" \xe2\x80\x94 ", f);
		xml_text(f, td->name);
		if (td->total_bytes)
			fprintf(f, ", %s", fmt_size(sz, td->total_bytes));
	}
	fputs("</text>\n", f);
}

/* The stacked layers, one step per column, then the total as a crisp outline. */
static void draw_layers(FILE *f, const struct frame *fr, const struct timeline_panel *pn,
			const int *order, int nl)
{
	fputs("<g id=\"layers\">\n", f);
	static uint64_t below[TIMELINE_COLS];
	memset(below, 0, sizeof(below));
	for (int li = 0; li < nl; li++) {
		int g = order[li];
		fprintf(f, "<path class=\"layer\" fill=\"%s\" fill-opacity=\"0.85\" d=\"",
			palette[li % 10]);
		for (int c = 0; c < TIMELINE_COLS; c++) {
			double xa = fr->x0 + fr->w * c / TIMELINE_COLS,
			       xb = fr->x0 + fr->w * (c + 1) / TIMELINE_COLS;
			double y = fy(fr, (double)(below[c] + pn->cols[c].g[g]));
			fprintf(f, "%s%.1f %.1f L%.1f %.1f ", c ? "L" : "M", xa, y, xb, y);
		}
		for (int c = TIMELINE_COLS; c-- > 0;) {
			double xa = fr->x0 + fr->w * c / TIMELINE_COLS,
			       xb = fr->x0 + fr->w * (c + 1) / TIMELINE_COLS;
			double y = fy(fr, (double)below[c]);
			fprintf(f, "L%.1f %.1f L%.1f %.1f ", xb, y, xa, y);
			below[c] += pn->cols[c].g[g];
		}
		fputs("Z\"/>\n", f);
	}
	fputs("<path id=\"total\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.2\" d=\"", f);
	for (int c = 0; c < TIMELINE_COLS; c++) {
		double xa = fr->x0 + fr->w * c / TIMELINE_COLS,
		       xb = fr->x0 + fr->w * (c + 1) / TIMELINE_COLS;
		double y = fy(fr, (double)pn->cols[c].total);
		fprintf(f, "%s%.1f %.1f L%.1f %.1f ", c ? "L" : "M", xa, y, xb, y);
	}
	fputs("\"/>\n</g>\n", f);
}

static void draw_nvml(FILE *f, const struct frame *fr, const struct timeline *p, int64_t ordinal)
{
	const struct trace *t = p->t;
	fputs("<polyline id=\"nvml\" class=\"nvml\" fill=\"none\" stroke=\"#d62728\" "
	      "stroke-width=\"1.8\" stroke-dasharray=\"6 3\" points=\"",
	      f);
	for (size_t i = 0; i < t->nsamples; i++) {
		const struct trace_sample *s = &t->samples[i];
		if (s->device == ordinal && s->process_known && in_window(p, s->time_ns))
			fprintf(f, "%.1f,%.1f ", fx(fr, (double)(s->time_ns - p->t0)),
				fy(fr, (double)s->process_used_bytes));
	}
	fputs("\"/>\n", f);
}

/* The framework's own figures as steps: each reading holds until the next. */
static void draw_counter_line(FILE *f, const struct frame *fr, const struct timeline *p,
			      const struct counters_series *cs, unsigned bit, const char *id,
			      const char *style)
{
	fprintf(f, "<polyline id=\"%s\" fill=\"none\" %s points=\"", id, style);
	double prev_y = -1;
	for (size_t i = 0; i < cs->n; i++) {
		const struct counters_point *pt = &cs->pts[i];
		if (!(pt->has & bit))
			continue;
		double x = fx(fr, (double)(pt->time_ns > p->t0 ? pt->time_ns - p->t0 : 0));
		double y = fy(fr, (double)(bit == CNT_RESERVED ? pt->reserved : pt->allocated));
		if (x > fr->x0 + fr->w) /* a reading at exit, after the axis's last event */
			x = fr->x0 + fr->w;
		if (prev_y >= 0)
			fprintf(f, "%.1f,%.1f ", x, prev_y);
		fprintf(f, "%.1f,%.1f ", x, y);
		prev_y = y;
	}
	fputs("\"/>\n", f);
}

static const char counter_alloc_style[] = "stroke=\"#2ca02c\" stroke-width=\"1.8\"";
static const char counter_resv_style[] =
    "stroke=\"#9467bd\" stroke-width=\"1.8\" stroke-dasharray=\"2 2\"";

static void draw_counters(FILE *f, const struct frame *fr, const struct timeline *p,
			  const struct counters_series *cs)
{
	if (cs->has & CNT_RESERVED)
		draw_counter_line(f, fr, p, cs, CNT_RESERVED, "framework-reserved",
				  counter_resv_style);
	if (cs->has & CNT_ALLOCATED)
		draw_counter_line(f, fr, p, cs, CNT_ALLOCATED, "framework-allocated",
				  counter_alloc_style);
}

/* Its legend entries; returns the next line's y. */
static double legend_counters(FILE *f, const struct counters_series *cs, double lx, double ly)
{
	for (int k = 0; k < 2; k++) {
		unsigned bit = k ? CNT_RESERVED : CNT_ALLOCATED;
		if (!(cs->has & bit))
			continue;
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/><text "
			"x=\"%.1f\" y=\"%.1f\">",
			lx, ly - 4, lx + 12, ly - 4, k ? counter_resv_style : counter_alloc_style,
			lx + 18, ly);
		xml_text(f, cs->source);
		fprintf(f, " %s (%s)</text>\n", k ? "reserved" : "allocated", cs->device_name);
		ly += 18;
	}
	return ly;
}

static void draw_ooms(FILE *f, const struct frame *fr, const struct timeline *p, int64_t ordinal)
{
	char sz[32], tbuf[32];
	for (size_t i = 0; i < p->nooms; i++) {
		if (p->ooms[i].device != ordinal || !in_window(p, p->ooms[i].time_ns))
			continue;
		double x = fx(fr, (double)(p->ooms[i].time_ns - p->t0)), y = fr->y0 + 10;
		fprintf(f,
			"<g class=\"oom\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#c00\" stroke-width=\"1\" stroke-dasharray=\"3 2\"/>"
			"<path d=\"M%.1f %.1f l8 8 m0 -8 l-8 8\" stroke=\"#c00\" "
			"stroke-width=\"2.5\"/><title>OOM: %s failed at %s</title></g>\n",
			x, fr->y0, x, fr->y0 + fr->h, x - 4, y - 4, fmt_size(sz, p->ooms[i].size),
			trace_fmt_time(tbuf, (int64_t)(p->ooms[i].time_ns - p->origin)));
	}
}

static void draw_peak(FILE *f, const struct frame *fr, const struct timeline *p,
		      const struct rp_level *lv)
{
	char sz[32], tbuf[32];
	double x = fx(fr, (double)(lv->peak_time_ns - p->t0)), y = fy(fr, (double)lv->peak);
	bool right = x < fr->x0 + fr->w * 0.7;
	fprintf(f,
		"<g id=\"peak\" class=\"peak\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		"y2=\"%.1f\" stroke=\"#000\" stroke-dasharray=\"4 3\"/>"
		"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#fff\" stroke=\"#000\" "
		"stroke-width=\"2\"/>"
		"<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\" "
		"text-anchor=\"%s\">peak %s at %s</text></g>\n",
		x, y, x, fr->y0 + fr->h, x, y, right ? x + 9 : x - 9, y - 8,
		right ? "start" : "end", fmt_size(sz, lv->peak),
		trace_fmt_time(tbuf, (int64_t)(lv->peak_time_ns - p->origin)));
}

/* The legend's fixed entries below the layers: total, peak, and NVML, OOMs
 * and phases where the panel has them. */
static void draw_legend_marks(FILE *f, const struct timeline *p, int64_t ordinal, double lx,
			      double ly, bool nvml, size_t nph)
{
	const struct counters_series *cs = counters_for_device(&p->counters, ordinal);
	fprintf(f,
		"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
		"stroke-width=\"1.2\"/><text x=\"%.1f\" y=\"%.1f\">total</text>\n",
		lx, ly - 4, lx + 12, ly - 4, lx + 18, ly);
	ly += 18;
	fprintf(f,
		"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#fff\" stroke=\"#000\" "
		"stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\">peak</text>\n",
		lx + 6, ly - 4, lx + 18, ly);
	ly += 18;
	if (nvml) {
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
			"stroke-width=\"1.8\" stroke-dasharray=\"6 3\"/><text x=\"%.1f\" "
			"y=\"%.1f\">NVML process usage</text>\n",
			lx, ly - 4, lx + 12, ly - 4, lx + 18, ly);
		ly += 18;
	}
	if (cs)
		ly = legend_counters(f, cs, lx, ly);
	size_t nd = 0;
	for (size_t i = 0; i < p->nooms; i++)
		nd += p->ooms[i].device == ordinal;
	if (nd) {
		fprintf(f,
			"<path d=\"M%.1f %.1f l8 8 m0 -8 l-8 8\" stroke=\"#c00\" "
			"stroke-width=\"2.5\"/><text x=\"%.1f\" y=\"%.1f\">failed allocation "
			"(OOM) \xc3\x97%zu%s</text>\n",
			lx + 2, ly - 9, lx + 18, ly, nd, p->ooms_dropped ? "+" : "");
		ly += 18;
	}
	if (nph) {
		fprintf(f,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"#ece6da\" "
			"stroke=\"#bbb\"/><text x=\"%.1f\" y=\"%.1f\">phase (NVTX range)</text>\n",
			lx, ly - 10, lx + 18, ly);
	}
}

static void draw_legend(FILE *f, const struct timeline *p, const struct timeline_panel *pn,
			double y0, const int *order, int nl, bool nvml, size_t nph)
{
	char sz[32];
	double lx = W - RIGHT + 24, ly = y0 + 8;
	fprintf(f,
		"<g id=\"legend\" class=\"legend\" font-size=\"12\">\n<text x=\"%.1f\" "
		"y=\"%.1f\" font-weight=\"bold\">%s (highest)</text>\n",
		lx, ly, p->by_library ? "library" : "kind");
	ly += 20;
	for (int li = 0; li < nl; li++) {
		int g = order[li];
		const char *name = g == TIMELINE_GROUPS - 1 ? "other"
				   : p->by_library	    ? p->names[g]
				   : g < DK_COUNT	    ? dev_kind_label[g]
							    : "?";
		fprintf(f,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%.1f\" y=\"%.1f\">",
			lx, ly - 10, palette[li % 10], lx + 18, ly);
		xml_text(f, name);
		fprintf(f, " (%s)</text>\n", fmt_size(sz, pn->group_max[g]));
		ly += 18;
	}
	draw_legend_marks(f, p, pn->ordinal, lx, ly, nvml, nph);
	fputs("</g>\n", f);
}

static void draw_panel(FILE *f, struct timeline *p, struct timeline_panel *pn, double y0,
		       const struct timeline_phase *ph, size_t nph)
{
	bool nvml;
	const struct counters_series *cs = counters_for_device(&p->counters, pn->ordinal);
	uint64_t top = panel_top(p, pn, &nvml, cs);
	struct frame fr = {LEFT,
			   y0,
			   W - LEFT - RIGHT,
			   PANEL_H,
			   time_axis(p->span),
			   bytes_axis(top),
			   p->span,
			   (double)(p->t0 - p->origin)};

	fprintf(f, "<g class=\"panel\" id=\"device-%" PRId64 "\">\n", pn->ordinal);
	draw_title(f, p->t, pn->ordinal, y0);
	draw_phases(f, &fr, p, ph, nph);
	draw_axes(f, &fr);
	int order[TIMELINE_GROUPS], nl = layer_order(pn, p->ngroups, order);
	draw_layers(f, &fr, pn, order, nl);
	if (nvml)
		draw_nvml(f, &fr, p, pn->ordinal);
	if (cs)
		draw_counters(f, &fr, p, cs);
	draw_ooms(f, &fr, p, pn->ordinal);
	if (pn->lv.peak && in_window(p, pn->lv.peak_time_ns))
		draw_peak(f, &fr, p, &pn->lv);
	draw_legend(f, p, pn, y0, order, nl, nvml, nph);
	fputs("</g>\n", f);
}

static void write_svg(FILE *f, struct timeline *p)
{
	struct trace *t = p->t;
	struct timeline_phase *ph = NULL;
	size_t nph = timeline_phases(t, &ph);
	double h = TOP + (double)p->npanels * (PANEL_H + GAP) + 20;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, "
		"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"28\" font-size=\"18\" font-weight=\"bold\">"
		"gpumemtrace: ",
		W, h, W, h, LEFT);
	const char *cmd = t->command && *t->command ? t->command : "(unknown command)";
	char shortcmd[96];
	snprintf(shortcmd, sizeof(shortcmd), "%s", cmd);
	if (strlen(cmd) > 80) { /* cut at 77 bytes, never inside a UTF-8 character */
		size_t cut = 77;
		while (cut > 0 && ((unsigned char)shortcmd[cut] & 0xc0) == 0x80)
			cut--;
		strcpy(shortcmd + cut, "...");
	}
	xml_text(f, shortcmd);
	fputs(" on ", f);
	xml_text(f, t->host && *t->host ? t->host : "(unknown host)");
	char sz[32];
	fprintf(f,
		"</text>\n<text x=\"%d\" y=\"46\" font-size=\"12\" fill=\"#555\">pid %" PRIu64
		", %" PRIu64 " events%s</text>\n",
		LEFT, t->pid, t->events, trace_partial(t) ? "" : ", none lost");
	char w0[32], w1[32], len[32];
	fprintf(f,
		"<text id=\"window\" x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#555\">showing "
		"%s to %s of a %s trace (%s)</text>\n",
		LEFT, TOP - 2, trace_fmt_time(w0, (int64_t)(p->t0 - p->origin)),
		trace_fmt_time(w1, (int64_t)(p->t0 + p->span - p->origin)),
		trace_fmt_time(len, trace_duration_ns(t)) + 1,
		p->chosen ? "--from/--to" : "the activity; --from/--to choose");
	(void)sz;
	if (trace_partial(t)) {
		char text[256];
		fprintf(f,
			"<text id=\"partial\" x=\"%d\" y=\"46\" font-size=\"12\" fill=\"#c00\" "
			"dx=\"260\">",
			LEFT);
		xml_text(f, trace_partial_text(t, text, sizeof(text)));
		fputs("</text>\n", f);
	}
	for (size_t i = 0; i < p->npanels; i++)
		draw_panel(f, p, &p->panels[i], TOP + 30 + (double)i * (PANEL_H + GAP), ph, nph);
	if (p->npanels == 0)
		fprintf(f,
			"<text x=\"%d\" y=\"%d\" font-size=\"14\">no device memory was allocated "
			"in this trace</text>\n",
			LEFT, TOP + 40);
	fputs("</svg>\n", f);
	free(ph);
}

/* "9.2", "+9.2s", "250ms", "1m": a time since the trace start, in ns. */
static bool parse_time(const char *text, uint64_t *ns)
{
	char *end;
	double v = strtod(text[0] == '+' ? text + 1 : text, &end);
	static const struct {
		const char *suffix;
		double ns;
	} units[] = {{"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"m", 60e9}};
	if (end == text || !isfinite(v) || v < 0)
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(*units); i++)
		if (strcmp(end, units[i].suffix) == 0) {
			*ns = (uint64_t)(v * units[i].ns + 0.5);
			return true;
		}
	return false;
}

/* The window drawn: the activity (timeline_activity), or --from/--to.
 * -1, or the exit code after the error line. */
static int set_window(struct timeline *p, const char *from, const char *to)
{
	const struct trace *t = p->t;
	uint64_t origin = t->hdr.start_mono_ns, lo, hi;
	timeline_activity(t, &lo, &hi);
	uint64_t v;
	if (from && !parse_time(from, &v))
		return say_usage_error(CMD, "bad --from '%s': seconds since the trace start", from);
	if (from)
		lo = origin + v;
	if (to && !parse_time(to, &v))
		return say_usage_error(CMD, "bad --to '%s': seconds since the trace start", to);
	if (to)
		hi = origin + v;
	if ((from || to) && hi <= lo) {
		char a[32], b[32], c[32];
		/* with the trace's length: the window the user can ask for */
		return say_usage_error(CMD, "empty window: from %s to %s (the trace lasts %s)",
				       trace_fmt_time(a, (int64_t)(lo - origin)),
				       trace_fmt_time(b, (int64_t)(hi - origin)),
				       rb_dur(c, trace_duration_ns(t)));
	}
	p->origin = origin;
	p->t0 = lo;
	p->span = hi > lo ? hi - lo : 0;
	p->chosen = from || to;
	return -1;
}

int cmd_plot(int argc, char **argv)
{
	struct timeline p = {0};
	const char *out = NULL, *from = NULL, *to = NULL;
	int by = 0;
	uint64_t dev = 0;
	const struct option opts[] = {
	    OPT_FILE("output", &out, "FILE", "write the SVG to FILE (default: stdout)",
		     .short_name = 'o'),
	    OPT_CHOICE("by", &by, "kind|library", "layering", "what the layers are (default kind)"),
	    OPT_UINT("device", &dev, "N", "only device N", .given = &p.has_only_dev),
	    OPT_STRING("from", &from, "TIME",
		       "start of the time axis, seconds since the trace start (default: the "
		       "activity's)"),
	    OPT_STRING("to", &to, "TIME", "end of the time axis (default: the activity's)"),
	    OPT_END(),
	};
	const char **paths = NULL;
	int npaths = 0;
	int rc = opt_parse(&usage, opts, argc, argv, &paths, &npaths);
	if (rc >= 0)
		return rc;
	p.by_library = by == 1;
	p.only_dev = (int64_t)dev;
	struct cli_one r;
	rc = cli_one_open(&r, CMD, out, paths, npaths);
	if (rc >= 0)
		return rc;
	p.t = &r.t;
	rc = set_window(&p, from, to);
	if (rc < 0)
		rc = timeline_compute(&p);
	if (rc < 0 && p.has_only_dev && p.npanels == 0) {
		say_error(CMD, "%s: no device memory on device %" PRId64, r.t.path, p.only_dev);
		rc = EXIT_USAGE;
	}
	if (rc < 0)
		write_svg(r.out.f, &p);
	timeline_free(&p);
	rc = cli_one_close(&r, CMD, rc);
	return rc;
}
