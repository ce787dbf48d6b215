/* gpumemtrace growth [--json] [--device N] [--width COLS] TRACE...: how
 * device memory grew: every new high-water mark, the sizes of the chunks it
 * grew in, when growth stopped (end of warm-up), whether live memory keeps
 * creeping afterwards (least-squares slope, "likely leak"), and a chart of
 * live bytes over time.
 *
 * The computation is analysis/growth.c; this parses and renders. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/growth.h"
#include "analysis/report-base.h"
#include "analysis/trace.h"

#define HUMAN_STEPS   40
#define HUMAN_CHUNKS  15
#define CHART_HEIGHT  8
#define CHART_LABEL_W 11

static const char about[] =
    "How device memory grew (cudaMalloc, cuMemAlloc, stream-ordered, cuMemCreate on\n"
    "a device), per device:\n"
    "  - every step of the high-water mark: when (time since the trace start), the\n"
    "    new peak, the step, the allocation that raised it and its site;\n"
    "  - the sizes of the allocations that raised the peak (a histogram of exact\n"
    "    sizes): it shows the allocator's growth policy (doubling, 2/20 MiB blocks,\n"
    "    one big preallocation);\n"
    "  - the end of warm-up: the last step of the high-water mark that was 5% or\n"
    "    more of the peak it made (later, smaller steps are creep, not warm-up);\n"
    "  - the slope of live bytes after the warm-up, in bytes/s: a least-squares\n"
    "    line through the highest live bytes in each of 16 equal slices of the\n"
    "    window, which runs from the warm-up end to the last moment live bytes\n"
    "    were still at their warm-up level (so the frees at exit do not hide a\n"
    "    leak). When that window is under 25% of the run, growth did not stop and\n"
    "    the second half of the run is used. \"likely leak\" when the line rises\n"
    "    over its window by at least 1 MiB and at least 1% of the peak;\n"
    "  - a chart of live bytes over time (the highest value in each column).\n"
    "Several traces (one per rank or process): a section each, then the peaks side\n"
    "by side with the imbalance (largest peak / mean).\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace growth gpumemtrace.1234.gmt\n"
    "  gpumemtrace growth --device 0 --width 120 run.gmt\n"
    "  gpumemtrace growth --json rank0.gmt rank1.gmt rank2.gmt rank3.gmt\n"
    "\n"
    "exit status: 0 ok, 2 usage, 3 cannot read a file, 4 not a trace or corrupt\n";
static const struct opt_usage usage = {
    .name = "growth", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

static void print_markers_human(FILE *f, struct growth_result *g, struct growth_dev *d)
{
	if (!growth_has_markers(g, d))
		return;
	char b1[32], b2[32];
	size_t n = g->mk.n - 1, grew = 0;
	int64_t med = growth_median_per_iteration(&g->mk, d);
	for (size_t i = 0; i < n; i++)
		grew += d->mk_live[i + 1] > d->mk_live[i];
	int64_t total = (int64_t)(d->mk_live[n] - d->mk_live[0]);
	fprintf(f,
		"  per iteration (%s \"%s\", %zu iterations): %s%s per iteration (median), "
		"%s%s over all; grew in %zu of %zu",
		g->mk.source, g->mk.name, n, med < 0 ? "-" : "+",
		fmt_size(b1, med < 0 ? -(uint64_t)med : (uint64_t)med), total < 0 ? "-" : "+",
		fmt_size(b2, total < 0 ? -(uint64_t)total : (uint64_t)total), grew, n);
	size_t shown = 0;
	for (size_t i = 0; i < n && shown < 20; i++)
		if (d->mk_live[i + 1] > d->mk_live[i])
			fprintf(f, "%s%zu", shown++ ? ", " : ": ", i + 1);
	if (grew > shown)
		fprintf(f, ", ...");
	fputc('\n', f);
}

static void print_markers_json(FILE *f, struct growth_result *g, struct growth_dev *d)
{
	if (!growth_has_markers(g, d)) {
		fputs("null", f);
		return;
	}
	size_t n = g->mk.n - 1;
	fprintf(f, "{\"source\": \"%s\", \"name\": ", g->mk.source);
	rb_json_s(f, g->mk.name);
	fprintf(f,
		", \"iterations\": %zu, \"growth_per_iteration_bytes\": %" PRId64
		", \"boundaries\": [",
		n, growth_median_per_iteration(&g->mk, d));
	for (size_t i = 0; i <= n; i++)
		fprintf(f, "%s{\"time_ns\": %" PRId64 ", \"live_bytes\": %" PRIu64 "}",
			i ? ", " : "", trace_rel(g->t, g->mk.times[i]), d->mk_live[i]);
	fputs("], \"growth_bytes\": [", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%" PRId64, i ? ", " : "",
			(int64_t)(d->mk_live[i + 1] - d->mk_live[i]));
	fputs("], \"grew\": [", f);
	for (size_t i = 0, k = 0; i < n; i++)
		if (d->mk_live[i + 1] > d->mk_live[i])
			fprintf(f, "%s%zu", k++ ? ", " : "", i + 1);
	fputs("]}", f);
}

static void print_chart(FILE *f, struct growth_result *g, struct growth_dev *d)
{
	if (!d->peak)
		return;
	bool u = rb_utf8();
	static const char *blocks[9] = {" ",	  "\u2581", "\u2582", "\u2583", "\u2584",
					"\u2585", "\u2586", "\u2587", "\u2588"};
	char b[32];
	fprintf(f, "  live bytes over time\n");
	for (int r = CHART_HEIGHT - 1; r >= 0; r--) {
		if (r == CHART_HEIGHT - 1)
			fprintf(f, "  %*s |", CHART_LABEL_W - 2, fmt_size(b, d->peak));
		else if (r == 0)
			fprintf(f, "  %*s |", CHART_LABEL_W - 2, "0 B");
		else
			fprintf(f, "  %*s |", CHART_LABEL_W - 2, "");
		for (int c = 0; c < g->ncols; c++) {
			uint64_t v = d->cols[c];
			int eighths = (int)((unsigned __int128)v * CHART_HEIGHT * 8 / d->peak);
			int fill = eighths - r * 8;
			fill = fill < 0 ? 0 : fill > 8 ? 8 : fill;
			if (u)
				fputs(blocks[fill], f);
			else
				fputc(fill == 8 ? '#' : fill > 0 ? '.' : ' ', f);
		}
		fputc('\n', f);
	}
	char b2[32];
	fprintf(f, "  %*s  %-*s%s\n", CHART_LABEL_W - 2, "", g->ncols / 2,
		rb_time(b, trace_rel(g->t, g->t0)), rb_time(b2, trace_rel(g->t, g->t1)));
}

static void print_dev_human(FILE *f, struct growth_result *g, struct growth_dev *d)
{
	struct trace *t = g->t;
	char b1[32], b2[32], b3[32], b4[32], site[512];
	uint64_t total = rb_dev_total(t, d->ordinal);
	fprintf(f, "\ndevice %" PRId64, d->ordinal);
	if (total)
		fprintf(f, " (%s)", fmt_size(b1, total));
	fprintf(f, ": peak %s at %s in %" PRIu64 " steps; live at the end %s\n",
		fmt_size(b2, d->peak), rb_time(b3, trace_rel(t, d->peak_time)), d->steps_total,
		fmt_size(b4, d->last_bytes));
	if (!d->steps_total)
		return;
	fprintf(f, "  high-water mark steps\n  %12s %11s %11s %11s  %-22s %s\n", "time", "new peak",
		"step", "allocation", "api", "site");
	size_t show = d->nsteps < HUMAN_STEPS ? d->nsteps : HUMAN_STEPS;
	int width = rb_text_width(f);
	for (size_t i = 0; i < show; i++) {
		const struct growth_step *s = &d->steps[i];
		char cut[1024];
		/* the site gets what the 75 columns of figures leave */
		fprintf(f, "  %12s %11s %11s %11s  %-22s %s\n",
			rb_time(b1, trace_rel(t, s->time_ns)), fmt_size(b2, s->peak),
			fmt_size(b3, s->step), fmt_size(b4, s->size),
			api_name(site_api(t, s->stack_id, s->api)),
			rb_fit(rb_site(t, s->stack_id, site, sizeof(site)), width - 75, cut,
			       sizeof(cut)));
	}
	if (d->steps_total > show)
		fprintf(f, "  ... %" PRIu64 " more steps (--json lists up to %d)\n",
			d->steps_total - show, GROWTH_MAX_STEPS);

	fprintf(f, "  sizes of the allocations that raised the peak\n  %11s %8s %11s\n", "size",
		"count", "bytes");
	int k = 0;
	struct growth_chunk *ch, *ct;
	HASH_ITER(hh, d->chunks, ch, ct)
	{
		if (k++ == HUMAN_CHUNKS) {
			fprintf(f, "  ... %u more sizes\n", HASH_COUNT(d->chunks) - HUMAN_CHUNKS);
			break;
		}
		fprintf(f, "  %11s %8" PRIu64 " %11s", fmt_size(b1, ch->size), ch->count,
			fmt_size(b2, ch->size * ch->count));
		if (total && ch->size * 2 >= total)
			fprintf(f, "  (%.0f%% of the device in one allocation: a preallocation)",
				100.0 * (double)ch->size / (double)total);
		fputc('\n', f);
	}

	uint64_t block;
	const char *pat = growth_pattern(d, total, &block);
	fprintf(f, "  growth pattern: %s", pat);
	if (block)
		fprintf(f, " (%s)", fmt_size(b1, block));
	fputc('\n', f);
	fprintf(f, "  warm-up ends at %s (the last step of 5%% or more, to %s)\n",
		rb_time(b1, trace_rel(t, d->warmup_end)), fmt_size(b2, d->warmup_level));
	if (!d->growth_stopped)
		fprintf(f,
			"  growth did not stop: the warm-up ends in the last 25%% of the run, so "
			"the slope covers the second half\n");
	if (d->points >= 3) {
		fprintf(f, "  after %s: live bytes %s%s/s (%s%s over %s, %" PRIu64 " samples)%s\n",
			rb_time(b1, trace_rel(t, d->window_start)), d->slope <= -0.5 ? "-" : "+",
			fmt_size(b2, (uint64_t)(d->slope < 0 ? -d->slope : d->slope)),
			d->rise <= -0.5 ? "-" : "+",
			fmt_size(b3, (uint64_t)(d->rise < 0 ? -d->rise : d->rise)),
			rb_dur(b4, (int64_t)(d->window_end - d->window_start)), d->n,
			d->leak ? ": LIKELY LEAK" : ": no leak");
	} else {
		fprintf(f, "  after %s: too few samples (%" PRIu64 ") for a slope\n",
			rb_time(b1, trace_rel(t, d->window_start)), d->n);
	}
	print_markers_human(f, g, d);
	print_chart(f, g, d);
}

static int64_t iround(double v)
{
	return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

static void print_dev_json(FILE *f, struct growth_result *g, struct growth_dev *d, bool first)
{
	struct trace *t = g->t;
	char site[512];
	fprintf(f,
		"%s\n   {\"index\": %" PRId64 ", \"total_bytes\": %" PRIu64
		", \"peak_bytes\": %" PRIu64 ", \"peak_time_ns\": %" PRId64
		", \"live_bytes_at_end\": %" PRIu64 ", \"steps_total\": %" PRIu64 ", \"steps\": [",
		first ? "" : ",", d->ordinal, rb_dev_total(t, d->ordinal), d->peak,
		d->steps_total ? trace_rel(t, d->peak_time) : 0, d->last_bytes, d->steps_total);
	for (size_t i = 0; i < d->nsteps; i++) {
		const struct growth_step *s = &d->steps[i];
		fprintf(f,
			"%s\n    {\"time_ns\": %" PRId64 ", \"peak_bytes\": %" PRIu64
			", \"step_bytes\": %" PRIu64 ", \"size\": %" PRIu64 ", \"api\": ",
			i ? "," : "", trace_rel(t, s->time_ns), s->peak, s->step, s->size);
		rb_json_s(f, api_name(s->api));
		fprintf(f, ", \"stack_id\": %" PRIu64 ", \"site\": ", s->stack_id);
		rb_json_s(f, rb_site(t, s->stack_id, site, sizeof(site)));
		fputc('}', f);
	}
	fputs("],\n    \"chunk_sizes\": [", f);
	struct growth_chunk *ch, *ct;
	int k = 0;
	HASH_ITER(hh, d->chunks, ch, ct)
	{
		fprintf(f,
			"%s{\"size\": %" PRIu64 ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			k++ ? ", " : "", ch->size, ch->count, ch->size * ch->count);
	}
	uint64_t block;
	fputs("],\n    \"pattern\": ", f);
	rb_json_s(f, growth_pattern(d, rb_dev_total(t, d->ordinal), &block));
	fprintf(f, ", \"pattern_block_bytes\": %" PRIu64, block);
	fprintf(f,
		",\n    \"warmup_end_ns\": %" PRId64 ", \"growth_stopped\": %s"
		", \"slope_window_start_ns\": %" PRId64 ", \"slope_window_end_ns\": %" PRId64
		", \"slope_samples\": %" PRIu64 ", \"slope_bytes_per_s\": ",
		d->has_warmup ? trace_rel(t, d->warmup_end) : 0,
		d->growth_stopped ? "true" : "false",
		d->has_warmup ? trace_rel(t, d->window_start) : 0,
		d->has_warmup && d->n ? trace_rel(t, d->window_end) : 0, d->n);
	fprintf(f, "%" PRId64 ", \"rise_bytes\": %" PRId64, iround(d->slope), iround(d->rise));
	fprintf(f, ", \"likely_leak\": %s, \"markers\": ", d->leak ? "true" : "false");
	print_markers_json(f, g, d);
	fprintf(f,
		",\n    \"chart\": {\"start_ns\": %" PRId64 ", \"end_ns\": %" PRId64
		", \"max_bytes\": [",
		trace_rel(t, g->t0), trace_rel(t, g->t1));
	for (int c = 0; c < g->ncols; c++)
		fprintf(f, "%s%" PRIu64, c ? ", " : "", d->cols[c]);
	fputs("]}}", f);
}

struct proc {
	uint64_t peak, live_end;
};

static void growth_print(FILE *f, const struct rb_opts *o, struct growth_result *g, int first)
{
	if (o->json) {
		fprintf(f, "%s\n  {", first ? "" : ",");
		rb_json_head(f, g->t);
		fprintf(f,
			", \"peak_bytes\": %" PRIu64 ", \"live_bytes_at_end\": %" PRIu64
			",\n   \"devices\": [",
			g->process_peak, g->process_live);
		for (size_t k = 0; k < g->ndevs; k++)
			print_dev_json(f, g, &g->devs[k], k == 0);
		fputs("]}", f);
	} else {
		if (!first)
			fputc('\n', f);
		rb_human_head(f, g->t);
		if (!g->ndevs)
			fprintf(f, "  no device memory was allocated\n");
		for (size_t k = 0; k < g->ndevs; k++)
			print_dev_human(f, g, &g->devs[k]);
	}
}

static void growth_totals(FILE *f, const struct rb_opts *o, struct trace *ts,
			  const struct proc *procs)
{
	uint64_t sum = 0, *peaks = xrealloc(NULL, (size_t)o->npaths * sizeof(*peaks));
	struct trace **tps = xrealloc(NULL, (size_t)o->npaths * sizeof(*tps));
	for (int i = 0; i < o->npaths; i++) {
		sum += procs[i].peak;
		peaks[i] = procs[i].peak;
		tps[i] = &ts[i];
	}
	if (o->json) {
		fprintf(f,
			"],\n \"totals\": {\"processes\": %d, \"peak_bytes_sum\": %" PRIu64
			", \"imbalance\": ",
			o->npaths, sum);
		trace_imbalance_json(f, peaks, (size_t)o->npaths);
		fputs("}}\n", f);
	} else if (o->npaths > 1) {
		char b1[32], b2[32], lab[128];
		fprintf(f, "\npeaks per process (device memory)\n  %-40s %11s %11s\n", "process",
			"peak", "at end");
		for (int i = 0; i < o->npaths; i++)
			fprintf(f, "  %-40.40s %11s %11s\n", trace_label(&ts[i], lab, sizeof(lab)),
				fmt_size(b1, procs[i].peak), fmt_size(b2, procs[i].live_end));
		fprintf(f, "  %-40s %11s\n", "total", fmt_size(b1, sum));
		trace_imbalance_text(f, "peak", peaks, tps, (size_t)o->npaths);
	}
	free(peaks);
	free(tps);
}

int cmd_growth(int argc, char **argv)
{
	struct rb_opts o = {0};
	struct site_args sa = {0};
	int64_t width = 0;
	const struct option opts[] = {
	    OPT_RB_JSON(&o),
	    OPT_RB_DEVICE(&o),
	    OPT_INT("width", &width, "COLS", 10, 1000,
		    "chart width in columns, 10..1000 (default: $COLUMNS, else 80)"),
	    OPT_SITES(&sa),
	    OPT_END(),
	};
	struct trace *ts;
	int rc = rb_parse_open(&usage, opts, argc, argv, &o, &sa, &ts);
	if (rc >= 0)
		return rc;
	o.width = (int)width;
	if (!width) {
		const char *c = getenv("COLUMNS");
		width = c && atoi(c) >= 10 && atoi(c) <= 1000 ? atoi(c) : 80;
	}
	FILE *f = stdout;
	struct proc *procs = xrealloc(NULL, (size_t)o.npaths * sizeof(*procs));
	int worst = 0;
	if (o.json)
		fputs("{\"traces\": [", f);
	for (int i = 0; i < o.npaths; i++) {
		struct growth_params p = {.has_device = o.has_device, .device = o.device};
		p.ncols = width - CHART_LABEL_W - 3;
		if (p.ncols < 8)
			p.ncols = 8;
		struct growth_result g;
		int r = growth_compute(&ts[i], &p, &g);
		if (r > worst)
			worst = r;
		procs[i] = (struct proc){g.process_peak, g.process_live};
		growth_print(f, &o, &g, i == 0);
		growth_result_free(&g);
	}
	growth_totals(f, &o, ts, procs);
	free(procs);
	free(o.paths);
	rc = rb_finish_all(ts, o.npaths, worst);
	site_opts_free(&sa.opts);
	return rc;
}
