/* gpumemtrace top: allocation sites ranked by bytes at the peak, at the end,
 * in total, or by calls.
 * The figures are analysis/top.c's; this file prints them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/fwhist.h"
#include "analysis/top.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/report-print.h"

static const char about[] =
    "Ranks the places that allocate device memory (cudaMalloc/cuMemAlloc, stream-\n"
    "ordered, cuMemCreate on a device), per device, by the bytes they held at\n"
    "that device's peak (default), the bytes still live at the end, the total\n"
    "bytes they allocated, or the number of allocation calls.\n"
    "\n"
    "A place is, with --by:\n"
    "  stack      the allocation site (first frame outside the CUDA libraries and\n"
    "             the tracer) and --depth callers (default; depth 3)\n"
    "  function   the site's function alone\n"
    "  library    the site's module: libnccl.so.2, libtorch_cuda.so, the program\n"
    "  api        the allocating API (cudaMalloc, cuMemCreate...)\n"
    "  range      the phase: the innermost NVTX or gpumemtrace range open on the\n"
    "             allocating thread, with its enclosing ones (\"step/forward\");\n"
    "             else the innermost range open in the process (another thread's,\n"
    "             or a start/end range); else \"(no phase)\"\n"
    "\n"
    "With several traces (one per rank or process) the rows add up per device\n"
    "and place; each row names the process holding the most, and a table per\n"
    "process shows the peaks and their imbalance.\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace top run.gmt\n"
    "  gpumemtrace top --by library run.gmt          # NCCL buffers, cuBLAS workspaces\n"
    "  gpumemtrace top --sort total --by function -n 20 run.gmt\n"
    "  gpumemtrace top --json rank*.gmt               # one trace per rank\n";
static const struct opt_usage usage = {
    .name = "top", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

static const char *const metric_names[TM_COUNT] = {"peak", "end", "total", "calls"};
static const char *const group_names[] = {"stack", "function", "library", "api", "range"};

/* ---- output ----------------------------------------------------------- */

static const char *metric_text(int m, uint64_t v, char *buf)
{
	if (m == TM_CALLS) {
		snprintf(buf, 32, "%" PRIu64, v);
		return buf;
	}
	return fmt_size(buf, v);
}

/* The key and, for sites, its [library] and failures: the site keeps
 * RB_SITE_MIN columns, the notes are shortened, then dropped. */
static void print_site(FILE *f, struct top *tp, struct top_trace *ts, const struct trace_row *r,
		       int metric, int room)
{
	char lib[512], brief[512], failed[48] = "", tails[3][1100];
	const char *t[3] = {tails[0], tails[1], ""};
	if (r->failed)
		snprintf(failed, sizeof(failed), " [%" PRIu64 " failed]", r->failed);
	if (tp->rows.by == GROUP_STACK || tp->rows.by == GROUP_FUNCTION) {
		if (!trace_row_library(r, metric, false, lib, sizeof(lib)))
			snprintf(lib, sizeof(lib), "%s",
				 trace_library(&ts[r->trace].t, r->stack_id));
		if (!trace_row_library(r, metric, true, brief, sizeof(brief)))
			snprintf(brief, sizeof(brief), "%s", lib);
		snprintf(tails[0], sizeof(tails[0]), "  [%s]%s", lib, failed);
		snprintf(tails[1], sizeof(tails[1]), "  [%s]%s", brief, failed);
	} else {
		snprintf(tails[0], sizeof(tails[0]), "%s", failed);
		snprintf(tails[1], sizeof(tails[1]), "%s", failed);
	}
	cli_site_line(f, r->key, room, t, 3);
}

/* What --tensors did, or that it could. */
static void tensors_note(FILE *f, struct top *tp, struct top_trace *ts, int n)
{
	int with = 0;
	for (int i = 0; i < n; i++)
		with += fwhist_present(&ts[i].t);
	const char *text =
	    !tp->tensors && with
		? "PyTorch's allocator history is in the trace: --tensors splits its segments "
		  "into the tensors they held"
	    : tp->tensors && with < n
		? "--tensors: no framework history in some trace (record it with `gpumemtrace run "
		  "--framework-history`): their segments stay whole"
	    : tp->tensors
		? "--tensors: PyTorch's segments split into their tensors (bytes as requested) "
		  "and what no tensor asked for, " TOP_CACHED ": fragmentation's \"free in the "
		  "cache\" is the free blocks alone. total and calls: the tensors' allocations "
		  "in the history, in place of the segments' driver calls"
		: NULL;
	if (text)
		cli_wrap_hang(f, 2, cli_text_width(f), text);
	for (int i = 0; tp->tensors && i < n; i++) {
		char *t = NULL, tb[32];
		const struct top_trace *tt = &ts[i];
		if (tt->hist_late &&
		    asprintf(&t,
			     "note: %s: PyTorch's history begins at %s, after its first segment: "
			     "the tensors' total and calls count from there (--history-entries "
			     "sets how far back it reaches)",
			     tt->t.path,
			     trace_fmt_time(tb, trace_rel(&tt->t, tt->hist_from_ns))) < 0)
			xalloc_failed();
		if (t)
			cli_wrap_hang(f, 2, cli_text_width(f), t);
		free(t);
		t = NULL;
		if (tt->hist_gaps &&
		    asprintf(&t,
			     "note: %s: PyTorch's history dropped entries %zu time%s (more than "
			     "--history-entries between snapshots): the tensors' total and calls "
			     "miss them",
			     tt->t.path, tt->hist_gaps, tt->hist_gaps == 1 ? "" : "s") < 0)
			xalloc_failed();
		if (t)
			cli_wrap_hang(f, 2, cli_text_width(f), t);
		free(t);
	}
	for (int i = 0; tp->tensors && i < n; i++)
		if (ts[i].early) {
			char *t = NULL;
			if (asprintf(
				&t,
				"note: %s: the history begins after the peak: the tensors are "
				"those live when it begins (--history-entries sets how far back "
				"it reaches)",
				ts[i].t.path) < 0)
				xalloc_failed();
			cli_wrap_hang(f, 2, cli_text_width(f), t);
			free(t);
		}
}

static void print_human(struct top *tp, struct top_trace *ts, int n, int metric, uint64_t limit)
{
	FILE *f = stdout;
	char b[5][32], lb[64];
	size_t nrows, ndev;
	struct trace_row **rows = trace_rows_sorted(&tp->rows, metric, &nrows);
	struct top_dev *devs = top_devices(ts, n, &ndev);
	static const char *const what[TM_COUNT] = {"bytes live at the device's peak",
						   "bytes live at the end", "total bytes allocated",
						   "allocation calls"};
	char callers[64] = "";
	if (tp->rows.by == GROUP_STACK)
		snprintf(callers, sizeof(callers), " (the site and %d caller%s)", tp->rows.depth,
			 tp->rows.depth == 1 ? "" : "s");
	cli_wrapf(f, 2, "allocation sites by %s, grouped by %s%s", what[metric],
		  group_names[tp->rows.by], callers);
	tensors_note(f, tp, ts, n);
	if (n > 1)
		fprintf(f, "%d traces: the figures add up over the processes\n", n);
	for (int i = 0; i < n; i++)
		cli_partial_line(f, &ts[i].t, n > 1);
	for (int i = 0; i < n; i++)
		if (!ts[i].t.complete) {
			char *text = NULL;
			if (asprintf(
				&text,
				"note: %s is incomplete: \"end\" means the last flush, not the "
				"exit",
				ts[i].t.path) < 0)
				xalloc_failed();
			cli_wrap_hang(f, 2, cli_text_width(f), text); /* the path may be long */
			free(text);
		}
	if (!ndev)
		fprintf(f, "\n(no device memory allocated)\n");
	for (size_t d = 0; d < ndev; d++) {
		fprintf(f, "\ndevice %" PRId64 ": peak %s", devs[d].ordinal,
			fmt_size(b[0], devs[d].peak));
		if (n == 1)
			fprintf(f, " at %s", trace_fmt_time(b[1], devs[d].peak_time));
		else
			fprintf(f, " (sum of %zu processes' peaks)", devs[d].ntraces);
		int width = cli_text_width(f), room = width - 53 - (n > 1 ? 27 : 0);
		/* narrower than the figures and a site: the site under its figures */
		bool under = room < RB_SITE_MIN;
		const char *key = tp->rows.by == GROUP_STACK || tp->rows.by == GROUP_FUNCTION
				      ? "site  [library]"
				  : tp->rows.by == GROUP_LIBRARY ? "library"
				  : tp->rows.by == GROUP_RANGE	 ? "phase"
								 : "api";
		fprintf(f, "\n  %10s %7s %10s %10s %8s%s%s%s\n", "at peak", "allocs", "at end",
			"total", "calls", under ? "\n      " : "  ",
			n > 1 ? "most in                   " : "", key);
		if (under)
			room = width - 6 - (n > 1 ? 27 : 0);
		size_t shown = 0, total = 0;
		for (size_t i = 0; i < nrows; i++) {
			struct trace_row *r = rows[i];
			if (r->device != devs[d].ordinal)
				continue;
			total++;
			if (limit && shown >= limit)
				continue;
			shown++;
			fprintf(f, "  %10s %7" PRIu64 " %10s %10s %8" PRIu64 "%s",
				fmt_size(b[0], r->v[TM_PEAK]), r->peak_allocs,
				fmt_size(b[1], r->v[TM_END]), fmt_size(b[2], r->v[TM_TOTAL]),
				r->v[TM_CALLS], under ? "\n      " : "  ");
			if (n > 1) {
				int mt = r->max_trace[metric];
				char mb[80];
				snprintf(mb, sizeof(mb), "%s %s",
					 mt >= 0 ? trace_label(&ts[mt].t, lb, sizeof(lb)) : "-",
					 metric_text(metric, r->max[metric], b[3]));
				fprintf(f, "%-26.26s ", mb);
			}
			print_site(f, tp, ts, r, metric, room);
		}
		if (total > shown)
			fprintf(f, "  ... %zu more (-n 0 shows all)\n", total - shown);
	}
	if (n > 1) {
		size_t longest = 0;
		for (int i = 0; i < n; i++)
			if (strlen(ts[i].t.path) > longest)
				longest = strlen(ts[i].t.path);
		/* the paths under their rows where they do not fit beside them */
		bool narrow = 43 + (int)longest > cli_text_width(f);
		fprintf(f, "\nprocesses\n  %-3s %-24s %10s%s\n", "#", "process", "peak",
			narrow ? "\n      trace" : "  trace");
		uint64_t *peaks = xrealloc(NULL, (size_t)n * sizeof(*peaks));
		struct trace **tps = xrealloc(NULL, (size_t)n * sizeof(*tps));
		for (int i = 0; i < n; i++) {
			peaks[i] = ts[i].peak;
			tps[i] = &ts[i].t;
			fprintf(f, "  %-3d %-24.24s %10s%s%s\n", i,
				trace_label(&ts[i].t, lb, sizeof(lb)), fmt_size(b[0], ts[i].peak),
				narrow ? "\n      " : "  ", ts[i].t.path);
		}
		fputs("imbalance\n", f);
		trace_imbalance_text(f, "peak", peaks, tps, (size_t)n);
		free(peaks);
		free(tps);
	}
	free(rows);
	free(devs);
}

/* One trace's object in "traces": what it is, and its devices' peaks. */
static void json_trace(FILE *f, const struct top_trace *tt, bool tensors, bool first)
{
	const struct trace *t = &tt->t;
	char lb[64];
	fprintf(f, "%s\n  {\"path\": ", first ? "" : ",");
	json_cstr0(f, t->path);
	fputs(", \"label\": ", f);
	json_cstr0(f, trace_label(t, lb, sizeof(lb)));
	fprintf(f, ", \"pid\": %" PRIu64 ", \"rank\": ", t->has_process ? t->pid : t->hdr.pid);
	if (trace_rank(t) >= 0)
		fprintf(f, "%" PRId64, trace_rank(t));
	else
		fputs("null", f);
	fprintf(f, ", \"complete\": %s", t->complete ? "true" : "false");
	if (tensors && fwhist_present(t))
		fprintf(f,
			", \"tensor_history\": {\"from_ns\": %" PRId64
			", \"begins_after_first_segment\": %s, \"windows_with_gap\": %zu}",
			tt->hist_from_ns ? trace_rel(t, tt->hist_from_ns) : 0,
			tt->hist_late ? "true" : "false", tt->hist_gaps);
	cli_json_partial(f, t);
	fprintf(f, ", \"peak_bytes\": %" PRIu64 ", \"devices\": [", tt->peak);
	for (size_t k = 0; k < tt->ndevs; k++) {
		const struct rp_dev *p = &tt->devs[k];
		fprintf(f,
			"%s{\"index\": %" PRId64 ", \"peak_bytes\": %" PRIu64
			", \"peak_time_ns\": %" PRId64 ", \"live_bytes_at_end\": %" PRIu64 "}",
			k ? ", " : "", p->ordinal, p->lv.peak,
			p->lv.peak_seq ? trace_rel(t, p->lv.peak_time_ns) : 0, p->lv.bytes);
	}
	fputs("]}", f);
}

/* One row of a device's "rows"; t is the trace its stack_id belongs to. */
static void json_row(FILE *f, enum trace_group by, struct trace *t, const struct trace_row *r,
		     int n, int metric, bool first)
{
	fprintf(f, "%s\n    {\"key\": ", first ? "" : ",");
	json_cstr0(f, r->key);
	fprintf(f,
		", \"peak_bytes\": %" PRIu64 ", \"peak_allocations\": %" PRIu64
		", \"end_bytes\": %" PRIu64 ", \"end_allocations\": %" PRIu64
		", \"total_bytes\": %" PRIu64 ", \"calls\": %" PRIu64 ", \"failed\": %" PRIu64,
		r->v[TM_PEAK], r->peak_allocs, r->v[TM_END], r->end_allocs, r->v[TM_TOTAL],
		r->v[TM_CALLS], r->failed);
	if (by == GROUP_RANGE) {
		fputs(", \"phase\": ", f);
		json_cstr0(f, r->key);
	} else if (by != GROUP_API) {
		struct trace_frame fr;
		bool has = r->stack_id && trace_site(t, r->stack_id, &fr);
		cli_json_libraries(f, t, r, metric);
		fputs(", \"function\": ", f);
		json_cstr0(f, has && fr.function ? fr.function : "");
		fprintf(f, ", \"stack_id\": %" PRIu64, r->stack_id);
		if (r->stack_id)
			cli_json_stack(f, t, r->stack_id);
	} else {
		fputs(", \"api\": ", f);
		json_cstr0(f, api_name(site_api(t, r->stack_id, r->api)));
	}
	if (n > 1)
		fprintf(f, ", \"traces\": %d, \"max_trace\": %d, \"max_value\": %" PRIu64,
			r->ntraces, r->max_trace[metric], r->max[metric]);
	fputc('}', f);
}

static void print_json(struct top *tp, struct top_trace *ts, int n, int metric, uint64_t limit,
		       int depth)
{
	FILE *f = stdout;
	size_t nrows, ndev;
	struct trace_row **rows = trace_rows_sorted(&tp->rows, metric, &nrows);
	struct top_dev *devs = top_devices(ts, n, &ndev);
	fprintf(f,
		"{\"by\": \"%s\", \"depth\": %d, \"sort\": \"%s\", \"limit\": %" PRIu64
		", \"tensors\": %s,\n",
		group_names[tp->rows.by], depth, metric_names[metric], limit,
		tp->tensors ? "true" : "false");
	if (tp->tensors)
		fputs(" \"tensor_bytes\": \"requested\", \"cache_row\": \"" TOP_CACHED "\",\n", f);
	fputs(" \"traces\": [", f);
	bool complete = true;
	for (int i = 0; i < n; i++) {
		complete &= ts[i].t.complete;
		json_trace(f, &ts[i], tp->tensors, i == 0);
	}
	fprintf(f, "],\n \"complete\": %s,\n \"devices\": [", complete ? "true" : "false");
	for (size_t d = 0; d < ndev; d++) {
		size_t total = 0;
		for (size_t i = 0; i < nrows; i++)
			total += rows[i]->device == devs[d].ordinal;
		fprintf(f,
			"%s\n  {\"index\": %" PRId64 ", \"peak_bytes\": %" PRIu64
			", \"peak_time_ns\": %" PRId64 ", \"rows_total\": %zu, \"rows\": [",
			d ? "," : "", devs[d].ordinal, devs[d].peak, n == 1 ? devs[d].peak_time : 0,
			total);
		size_t shown = 0;
		for (size_t i = 0; i < nrows; i++) {
			struct trace_row *r = rows[i];
			if (r->device != devs[d].ordinal || (limit && shown >= limit))
				continue;
			json_row(f, tp->rows.by, &ts[r->trace].t, r, n, metric, shown == 0);
			shown++;
		}
		fputs("]}", f);
	}
	fputs("]", f);
	if (n > 1) {
		uint64_t *peaks = xrealloc(NULL, (size_t)n * sizeof(*peaks));
		for (int i = 0; i < n; i++)
			peaks[i] = ts[i].peak;
		fputs(",\n \"imbalance\": {\"peak_bytes\": ", f);
		trace_imbalance_json(f, peaks, (size_t)n);
		fputc('}', f);
		free(peaks);
	}
	fputs("}\n", f);
	free(rows);
	free(devs);
}

int cmd_top(int argc, char **argv)
{
	bool json = false;
	struct site_args sa = {0};
	struct top tp = {0};
	int by = GROUP_STACK, metric = TM_PEAK; /* the choices are in enum order */
	uint64_t depth = 3, limit = 10;
	const struct option opts[] = {
	    OPT_CHOICE("by", &by, "stack|function|library|api|range", "grouping",
		       "grouping: stack, function, library, api or range (default\nstack)",
		       .argh = "G"),
	    OPT_UINT("depth", &depth, "N",
		     "callers kept in a stack key (default 3; 0: the site alone)", .max = 64),
	    OPT_CHOICE("sort", &metric, "peak|end|total|calls", "order",
		       "peak, end, total or calls (default peak)", .argh = "M"),
	    OPT_UINT("limit", &limit, "N", "rows per device (default 10; 0: all)",
		     .short_name = 'n'),
	    OPT_BOOL("tensors", &tp.tensors,
		     "split PyTorch's segments into the tensors they held\n"
		     "and what its cache held beyond them (a trace recorded\n"
		     "with run --framework-history; not with --by range)"),
	    OPT_BOOL("json", &json, "one JSON object instead of tables (keys: docs/cli.md)"),
	    OPT_SITES(&sa),
	    OPT_END(),
	};
	const char **paths;
	int npaths;
	int rc = opt_parse_sites(&usage, opts, argc, argv, &paths, &npaths, &sa);
	if (rc < 0 && tp.tensors && by == GROUP_RANGE) {
		free(paths);
		site_opts_free(&sa.opts);
		rc = say_usage_error(usage.name, "--tensors: not with --by range");
	}
	if (rc >= 0)
		return rc;

	trace_rows_init(&tp.rows, (enum trace_group)by, (int)depth);
	struct top_trace *ts = xcalloc((size_t)npaths, sizeof(*ts));
	int opened = 0;
	for (int i = 0; i < npaths && rc < 0; i++) {
		rc = top_read_trace(&tp, &ts[i], "top", paths[i], &sa.opts, !json);
		if (rc >= 0 && !ts[i].t.reader)
			break;
		opened++;
	}
	if (rc < 0) {
		if (json)
			print_json(&tp, ts, npaths, metric, limit, (int)depth);
		else
			print_human(&tp, ts, npaths, metric, limit);
		fflush(stdout);
		rc = 0;
		for (int i = 0; i < npaths; i++) {
			int r = trace_finish(&ts[i].t);
			rc = r > rc ? r : rc;
		}
	}
	for (int i = 0; i < opened; i++) {
		top_trace_free(&ts[i]);
		trace_close(&ts[i].t);
	}
	trace_rows_free(&tp.rows);
	free(ts);
	free(paths);
	site_args_done(usage.name, &sa);
	return rc;
}
