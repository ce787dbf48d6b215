/* gpumemtrace growth [--json] [--device N] [--width COLS] TRACE...: does
 * device memory leak? The verdict per device (leak, no leak, undetermined)
 * with its reason, a leak's rate and site, the iterations it was judged
 * on, the peak, and a chart of live bytes over time; --json adds every
 * rise of the high-water mark and each iteration's level.
 *
 * The computation is analysis/growth.c and growth-verdict.c; this parses
 * and renders. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/fwgrowth.h"
#include "analysis/fwhist.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/growth.h"
#include "analysis/report-base.h"
#include "analysis/trace.h"

#define CHART_HEIGHT  8
#define CHART_LABEL_W 11
#define SITE_CALLERS  3 /* as leaks' default --depth */

static const char about[] =
    "Does device memory (cudaMalloc, cuMemAlloc, stream-ordered, cuMemCreate) leak?\n"
    "Per device, a verdict first: LEAK, NO LEAK or UNDETERMINED, and why.\n"
    "  - It follows the memory kept from one iteration to the next. Iterations are\n"
    "    the repeats of the most frequent top-level range or mark (NVTX,\n"
    "    gpumemtrace_range_*), else of the allocation that comes back most often\n"
    "    after being freed (an iteration's temporary). An iteration's level is the\n"
    "    lowest live bytes inside it. Without iterations: the high-water mark.\n"
    "  - leak: the level still rises at the end, in every iteration (a ramp) or in\n"
    "    regular rises (a caching allocator's segments: PyTorch keeping 1 MiB an\n"
    "    iteration allocates a 20 MiB segment every 20 iterations). Shown with its\n"
    "    rate per iteration and per second and the site holding the bytes.\n"
    "  - no leak: the level stopped rising and stayed flat for 8 iterations or more\n"
    "    (without iterations: 10% of the time since the first allocation), and\n"
    "    for twice the longest flat stretch between earlier rises, however late\n"
    "    the warm-up ended.\n"
    "  - undetermined: the run ended too soon after the last rise to tell; or,\n"
    "    without iterations, it had an out-of-memory failure, gave back most of\n"
    "    its memory, was cut (no trailer), or grew by doubling regions.\n"
    "Then the evidence (site, iterations, peak, the allocator's growth pattern:\n"
    "doubling, fixed blocks, one preallocation), a chart of live bytes over time,\n"
    "and the command to see more. --json adds every rise of the high-water mark\n"
    "with its site, the sizes that raised it, and each iteration's level.\n"
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

static void print_markers_json(FILE *f, struct growth_result *g, struct growth_dev *d)
{
	if (!growth_has_markers(g, d)) {
		fputs("null", f);
		return;
	}
	size_t n = g->mk.n - 1;
	fprintf(f, "{\"source\": \"%s\", \"name\": ", g->mk.source);
	cli_json_s(f, g->mk.name);
	fprintf(f, ", \"iterations\": %zu", n);
	if (g->mk.stride > 1) /* merged: only in a run with more than GROWTH_MAX_ITERATIONS */
		fprintf(f, ", \"iterations_merged\": %zu, \"iterations_found\": %zu", g->mk.stride,
			g->mk.found - 1);
	fprintf(f, ", \"growth_per_iteration_bytes\": %" PRId64 ", \"boundaries\": [",
		growth_median_per_iteration(&g->mk, d));
	for (size_t i = 0; i <= n; i++)
		fprintf(f, "%s{\"time_ns\": %" PRId64 ", \"live_bytes\": %" PRIu64 "}",
			i ? ", " : "", trace_rel(g->t, g->mk.times[i]), d->mk_live[i]);
	fputs("], \"growth_bytes\": [", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%" PRId64, i ? ", " : "",
			(int64_t)(d->mk_live[i + 1] - d->mk_live[i]));
	fputs("], \"floor_bytes\": [", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", d->floor ? d->floor[i] : 0);
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
	fprintf(f, "  live bytes over time (max per column)\n");
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
	/* the start under the first column, the end ending under the last */
	char b2[32];
	const char *l0 = rb_time(b, trace_rel(g->t, g->t0)),
		   *l1 = rb_time(b2, trace_rel(g->t, g->t1));
	int pad = g->ncols - (int)strlen(l1);
	fprintf(f, "  %*s  %-*s%s\n", CHART_LABEL_W - 2, "",
		pad > (int)strlen(l0) ? pad : (int)strlen(l0) + 1, l0, l1);
}

static const char *verdict_label(enum growth_kind k)
{
	return k == GV_LEAK ? "LEAK" : k == GV_NO_LEAK ? "NO LEAK" : "UNDETERMINED";
}

/* The verdict line: the verdict, a leak's rate, the reason. */
static void print_verdict(FILE *f, struct growth_result *g, struct growth_dev *d)
{
	char b1[32], b2[32], reason[512];
	uint64_t total = rb_dev_total(g->t, d->ordinal);
	fprintf(f, "\ndevice %" PRId64, d->ordinal);
	if (total)
		fprintf(f, " (%s)", fmt_size(b1, total));
	fprintf(f, ": %s: ", verdict_label(d->v.kind));
	double step;
	if (d->v.kind == GV_LEAK && d->v.rate_hidden) {
		fputs("rate unknown (the allocator doubles its regions: the bytes kept per step "
		      "are not in its driver calls): ",
		      f);
	} else if (d->v.kind == GV_LEAK) {
		if (growth_rate_per_step(g, d, &step))
			fprintf(f, "+%s per iteration, ", fmt_size(b1, (uint64_t)(step + 0.5)));
		fprintf(f, "+%s/s: ", fmt_size(b2, (uint64_t)(growth_rate_per_s(g, d) + 0.5)));
	}
	fprintf(f, "%s\n", growth_reason(g, d, reason, sizeof(reason)));
}

/* A leak's site as `leaks` keys it: the site and its callers (a helper
 * shared with frees that do not leak is told apart by who called it). */
static const char *site_key(struct trace *t, uint64_t stack_id, char *buf, size_t size)
{
	return trace_group_key(t, GROUP_STACK, SITE_CALLERS, stack_id, 0, buf, size);
}

/* The evidence: a leak's site, where the iterations come from, the peak. */
static void print_evidence(FILE *f, struct growth_result *g, struct growth_dev *d, int width)
{
	struct trace *t = g->t;
	char b1[32], b2[32], b3[32], site[512], cut[512];
	size_t n = growth_iterations(g);
	if (d->v.kind == GV_LEAK && d->site_bytes)
		fprintf(
		    f, "  held by %s: %s in %" PRIu64 " allocations made since %s, still live\n",
		    /* the key on one line (cut to it), the figures wrapped after */
		    cli_fit(site_key(t, d->site_stack, site, sizeof(site)), width - 12, cut,
			    sizeof(cut)),
		    fmt_size(b1, d->site_bytes), d->site_count,
		    rb_time(b2, trace_rel(t, growth_x_time(g, d->v.start_x && n ? d->v.start_x - 1
										: d->v.start_x))));
	if (d->v.kind == GV_LEAK && d->v.shape == GV_STAIRS)
		fprintf(f, "  rate: what the driver-level memory grows by; a cache's segments also "
			   "hold the holes kept tensors leave, so the program may keep less\n");
	char merged[96] = "";
	if (n && g->mk.stride > 1)
		snprintf(merged, sizeof(merged), " (each joins %zu of the run's %zu)", g->mk.stride,
			 g->mk.found - 1);
	if (n && !strcmp(g->mk.source, "pattern"))
		fprintf(f, "  iterations: %zu%s, between repeats of a %s at %s\n", n, merged,
			g->mk.name, rb_site(t, g->mk.pattern_stack, site, sizeof(site)));
	else if (n)
		fprintf(f, "  iterations: %zu%s, from the %s \"%s\"\n", n, merged, g->mk.source,
			g->mk.name);
	else if (d->steps_total)
		fprintf(f, "  iterations: none found (no repeating range, mark or allocation): "
			   "judged on the high-water mark over time\n");
	if (!d->steps_total)
		return;
	uint64_t block;
	const char *pat = growth_pattern(d, rb_dev_total(t, d->ordinal), &block);
	/* rises of the high-water mark, not a program's steps (its iterations) */
	fprintf(f, "  peak %s at %s after %" PRIu64 " rises (%s", fmt_size(b1, d->peak),
		rb_time(b2, trace_rel(t, d->peak_time)), d->steps_total, pat);
	if (block)
		fprintf(f, ", %s", fmt_size(b3, block));
	if (!strcmp(pat, "preallocation"))
		fprintf(f, ", %.0f%% of the device in one allocation",
			100.0 * (double)block / (double)rb_dev_total(t, d->ordinal));
	fprintf(f, "); live at the end %s\n", fmt_size(b1, d->last_bytes));
}

/* Prints buf's lines wrapped to width: a line that starts with two spaces
 * goes on indented by four, others by two. */
static void print_wrapped(FILE *f, int width, char *buf)
{
	for (char *line = buf, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line) - 1;
		else
			*nl = 0;
		if (!*line)
			fputc('\n', f);
		else
			cli_wrap_hang(f, strncmp(line, "  ", 2) ? 2 : 4, width, line);
	}
}

/* The verdict, the evidence, the chart and what to run next; prose wrapped
 * to the text width (a pipe's too). */
static void print_dev_human(FILE *f, struct growth_result *g, struct growth_dev *d)
{
	int width = cli_text_width(f);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		xalloc_failed();
	print_verdict(m, g, d);
	if (!d->steps_total)
		fprintf(m, "  no device memory was allocated on it\n");
	else
		print_evidence(m, g, d, width);
	if (fclose(m) || !buf)
		xalloc_failed();
	print_wrapped(f, width, buf);
	free(buf);
	if (!d->steps_total)
		return;
	print_chart(f, g, d);
	char next[2048];
	snprintf(next, sizeof(next),
		 "  more: gpumemtrace growth --json %s (every rise and its site%s)%s%s", g->t->path,
		 growth_iterations(g) ? ", each iteration's level" : "",
		 d->v.kind == GV_LEAK ? "; gpumemtrace leaks " : "",
		 d->v.kind == GV_LEAK ? g->t->path : "");
	cli_wrap_hang(f, 4, width, next);
}

/* The tensors' own verdict (PyTorch's history), under the device's. */
static void print_tensors_human(FILE *f, struct trace *t, const struct fwg_result *fw,
				const struct fwg_dev *d)
{
	char b1[32], b2[32], b3[32], site[512], line[1400];
	int width = cli_text_width(f);
	size_t n = d->nfloor;
	const struct growth_verdict *v = &d->v;
	size_t k = snprintf(line, sizeof(line),
			    "  tensors (PyTorch's own history): %s: ", verdict_label(v->kind));
	if (v->kind == GV_LEAK)
		k += (size_t)snprintf(line + k, sizeof(line) - k,
				      "+%s per iteration, what the tensors keep (%s to %s from "
				      "iteration %" PRIu64 " to %" PRIu64 ")",
				      fmt_size(b1, (uint64_t)(v->rate + 0.5)),
				      fmt_size(b2, v->from_level), fmt_size(b3, v->to_level),
				      v->from_x, v->to_x);
	else if (v->kind == GV_NO_LEAK)
		k += (size_t)snprintf(line + k, sizeof(line) - k,
				      "their level %s, steady for the last %" PRIu64 " iterations",
				      fmt_size(b1, v->level), v->steady);
	else
		k += (size_t)snprintf(line + k, sizeof(line) - k, "%zu iterations: too few to tell",
				      n);
	cli_wrap_hang(f, 4, width, line);
	for (size_t i = 0; i < d->nsites; i++) {
		snprintf(line, sizeof(line),
			 "    held by %s: %s in %" PRIu64 " tensors from %" PRIu64
			 " iteration%s, still live",
			 rb_site(t, d->sites[i].stack_id, site, sizeof(site)),
			 fmt_size(b1, d->sites[i].bytes), d->sites[i].count, d->sites[i].iterations,
			 d->sites[i].iterations == 1 ? "" : "s");
		cli_wrap_hang(f, 6, width, line);
	}
	if (fw->pattern_stack)
		snprintf(line, sizeof(line),
			 "    iterations: %zu, between repeats of a %s tensor at %s (the tensors' "
			 "own)",
			 n, fmt_size(b1, fw->pattern_size),
			 rb_site(t, fw->pattern_stack, site, sizeof(site)));
	else
		snprintf(line, sizeof(line), "    iterations: %zu, the trace's own (above)", n);
	cli_wrap_hang(f, 6, width, line);
}

static int64_t iround(double v)
{
	return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

static void print_verdict_json(FILE *f, struct growth_result *g, struct growth_dev *d)
{
	struct trace *t = g->t;
	char reason[512], site[512];
	size_t n = growth_iterations(g);
	double step;
	bool leak = d->v.kind == GV_LEAK;
	fprintf(f, ",\n    \"verdict\": \"%s\", \"verdict_reason\": ", growth_kind_name(d->v.kind));
	cli_json_s(f, growth_reason(g, d, reason, sizeof(reason)));
	fputs(", \"rate_bytes_per_step\": ", f);
	if (growth_rate_per_step(g, d, &step) && leak)
		fprintf(f, "%" PRId64, iround(step));
	else
		fputs("null", f);
	fputs(", \"rate_bytes_per_s\": ", f);
	if (leak)
		fprintf(f, "%" PRId64, iround(growth_rate_per_s(g, d)));
	else
		fputs("null", f);
	fprintf(f, ",\n    \"iterations\": %zu, \"iteration_source\": \"%s\"", n,
		growth_iteration_source(g));
	fprintf(f, ", \"level_bytes\": %" PRIu64 ", \"last_rise_ns\": ", d->v.level);
	if (d->v.steps)
		fprintf(f, "%" PRId64, trace_rel(t, growth_x_time(g, d->v.last_rise)));
	else
		fputs("null", f);
	if (n)
		fprintf(f, ", \"steady_iterations\": %" PRIu64, d->v.steady);
	else
		fprintf(f, ", \"steady_ns\": %" PRIu64, d->v.steady);
	fprintf(f, ", \"likely_leak\": %s, \"leak_site\": ", leak ? "true" : "false");
	if (leak && d->site_bytes) {
		fprintf(f,
			"{\"stack_id\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"count\": %" PRIu64
			", \"site\": ",
			d->site_stack, d->site_bytes, d->site_count);
		cli_json_s(f, rb_site(t, d->site_stack, site, sizeof(site)));
		fputs(", \"key\": ", f);
		cli_json_s(f, site_key(t, d->site_stack, site, sizeof(site)));
		fputc('}', f);
	} else {
		fputs("null", f);
	}
}

static void print_tensors_json(FILE *f, struct trace *t, const struct fwg_result *fw,
			       const struct fwg_dev *d);
static const struct fwg_dev *fw_dev_of(const struct fwg_result *fw, int64_t device);

static void print_dev_json(FILE *f, struct growth_result *g, const struct fwg_result *fw,
			   struct growth_dev *d, bool first)
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
		cli_json_s(f, api_name(s->api));
		fprintf(f, ", \"stack_id\": %" PRIu64 ", \"site\": ", s->stack_id);
		cli_json_s(f, rb_site(t, s->stack_id, site, sizeof(site)));
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
	cli_json_s(f, growth_pattern(d, rb_dev_total(t, d->ordinal), &block));
	fprintf(f, ", \"pattern_block_bytes\": %" PRIu64, block);
	print_verdict_json(f, g, d);
	fputs(", \"markers\": ", f);
	print_markers_json(f, g, d);
	fprintf(f,
		",\n    \"chart\": {\"start_ns\": %" PRId64 ", \"end_ns\": %" PRId64
		", \"max_bytes\": [",
		trace_rel(t, g->t0), trace_rel(t, g->t1));
	for (int c = 0; c < g->ncols; c++)
		fprintf(f, "%s%" PRIu64, c ? ", " : "", d->cols[c]);
	fputs("]}", f);
	if (fw) /* only with the history: older outputs stay as they were */
		print_tensors_json(f, g->t, fw, fw_dev_of(fw, d->ordinal));
	fputc('}', f);
}

struct proc {
	uint64_t peak, live_end;
};

static const struct fwg_dev *fw_dev_of(const struct fwg_result *fw, int64_t device)
{
	for (size_t i = 0; fw && i < fw->ndevs; i++)
		if (fw->devs[i].device == device)
			return &fw->devs[i];
	return NULL;
}

static void print_tensors_json(FILE *f, struct trace *t, const struct fwg_result *fw,
			       const struct fwg_dev *d)
{
	fputs(",\n    \"tensors\": ", f);
	if (!d) {
		fputs("null", f);
		return;
	}
	const struct growth_verdict *v = &d->v;
	fprintf(f,
		"{\"verdict\": \"%s\", \"iterations\": %zu, \"iterations_source\": \"%s\", "
		"\"bytes_per_iteration\": %" PRId64 ", \"from_level_bytes\": %" PRIu64
		", \"to_level_bytes\": %" PRIu64 ", \"level_bytes\": %" PRIu64
		", \"held_bytes\": %" PRIu64 ", \"held_tensors\": %" PRIu64 ", \"sites\": [",
		growth_kind_name(v->kind), d->nfloor, fw->pattern_stack ? "tensors" : "trace",
		v->kind == GV_LEAK ? iround(v->rate) : 0, v->from_level, v->to_level, v->level,
		d->held_bytes, d->held_count);
	for (size_t i = 0; i < d->nsites; i++) {
		struct trace_frame fr;
		bool known = trace_site(t, d->sites[i].stack_id, &fr);
		fprintf(f,
			"%s{\"stack_id\": %" PRIu64 ", \"bytes\": %" PRIu64
			", \"tensors\": %" PRIu64 ", \"iterations\": %" PRIu64 ", \"function\": ",
			i ? ", " : "", d->sites[i].stack_id, d->sites[i].bytes, d->sites[i].count,
			d->sites[i].iterations);
		json_cstr0(f, known && fr.function ? fr.function : "");
		fputs(", \"file\": ", f);
		json_cstr0(f, known && fr.file ? fr.file : "");
		fprintf(f, ", \"line\": %" PRIu64 "}", known ? fr.line : 0);
	}
	fputs("]}", f);
}

static void growth_print(FILE *f, const struct rb_opts *o, struct growth_result *g,
			 const struct fwg_result *fw, int first)
{
	if (o->json) {
		fprintf(f, "%s\n  {", first ? "" : ",");
		cli_json_head(f, g->t);
		fprintf(f,
			", \"peak_bytes\": %" PRIu64 ", \"live_bytes_at_end\": %" PRIu64
			",\n   \"devices\": [",
			g->process_peak, g->process_live);
		for (size_t k = 0; k < g->ndevs; k++)
			print_dev_json(f, g, fw, &g->devs[k], k == 0);
		fputs("]}", f);
	} else {
		if (!first)
			fputc('\n', f);
		cli_human_head(f, g->t);
		if (!g->ndevs)
			fprintf(f, "  no device memory was allocated\n");
		for (size_t k = 0; k < g->ndevs; k++) {
			print_dev_human(f, g, &g->devs[k]);
			const struct fwg_dev *d = fw_dev_of(fw, g->devs[k].ordinal);
			if (d)
				print_tensors_human(f, g->t, fw, d);
		}
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
	int rc = cli_parse_open(&usage, opts, argc, argv, &o, &sa, &ts);
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
		struct fwg_result fw = {0};
		int r = growth_compute(&ts[i], &p, &g);
		if (r < 0 && fwhist_present(&ts[i]))
			r = fwg_compute(&ts[i], &g, &fw);
		if (r > worst)
			worst = r;
		procs[i] = (struct proc){g.process_peak, g.process_live};
		growth_print(f, &o, &g, fw.ndevs ? &fw : NULL, i == 0);
		fwg_free(&fw);
		growth_result_free(&g);
	}
	growth_totals(f, &o, ts, procs);
	free(procs);
	free(o.paths);
	rc = rb_finish_all(ts, o.npaths, worst);
	site_args_done(usage.name, &sa);
	return rc;
}
