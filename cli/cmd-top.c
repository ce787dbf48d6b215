/* gpumemtrace top: allocation sites ranked by bytes at the peak, at the end,
 * in total, or by calls.
 *
 * Per trace, two passes: the first replays the live set to find each
 * device's peak and counts what every site allocated; the second replays
 * up to each peak and charges what is live there to its site. Several
 * traces (one per process) add up per device ordinal and site. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/phase.h"
#include "analysis/trace.h"
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

struct top_trace {
	struct trace t;
	struct rp_dev *devs;
	size_t ndevs;
	uint64_t peak; /* the highest device peak */
	/* pass 2 */
	struct rp_dev **targets;
	size_t ntargets, next;
};

struct top {
	struct trace_rows rows;
	struct top_trace *cur;
	struct phase_tracker phases; /* --by range: this pass's */
};

/* The row an event's allocation counts in. */
static struct trace_row *event_row(struct top *tp, const struct gmt_event *e)
{
	if (tp->rows.by != GROUP_RANGE)
		return trace_rows_get(&tp->rows, &tp->cur->t, e->device, e->stack_id, e->api);
	struct phase *ph = phase_of(&tp->phases, e->tid);
	const struct api_info *a = api_lookup(e->api);
	if (a && !gmt_failed(e->result, e->flags))
		phase_remember(&tp->phases, a->space, e->ptr, ph);
	return trace_rows_get_key(&tp->rows, e->device, ph->name, e->stack_id, e->api);
}

static void range_pass(struct top *tp, const struct gmt_event *e)
{
	const struct api_info *a = api_lookup(e->api);
	phase_advance(&tp->phases, e->time_ns, 0);
	if (a && a->op == GMT_OP_ALLOC && trace_alloc_bucket(e) == BK_DEVICE)
		event_row(tp, e);
}

static void on_event1(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	struct top *tp = ctx;
	const struct api_info *a = api_lookup(e->api);
	if (tp->rows.by == GROUP_RANGE)
		phase_advance(&tp->phases, e->time_ns, 0);
	if (!a || a->op != GMT_OP_ALLOC)
		return;
	bool failed = gmt_failed(e->result, e->flags);
	if (failed) {
		if (gmt_device_memory(a->kind, e->aux))
			event_row(tp, e)->failed++;
		return;
	}
	if (trace_alloc_bucket(e) != BK_DEVICE)
		return;
	struct trace_row *r = event_row(tp, e);
	trace_row_add(r, &tp->cur->t, e->stack_id, TM_TOTAL, e->size);
	trace_row_add(r, &tp->cur->t, e->stack_id, TM_CALLS, 1);
}

static void charge_live(struct top *tp, struct replay *rp, int64_t device, int metric)
{
	GMT_EACH_SPACE(sp)
	{
		struct rp_live *l, *lt;
		RP_EACH(rp, sp, l, lt)
		{
			if (l->bucket != BK_DEVICE || (device != INT64_MIN && l->device != device))
				continue;
			struct trace_row *r =
			    tp->rows.by == GROUP_RANGE
				? trace_rows_get_key(
				      &tp->rows, l->device,
				      phase_recall(&tp->phases, l->space, l->key)->name,
				      l->stack_id, l->api)
				: trace_rows_get(&tp->rows, &tp->cur->t, l->device, l->stack_id,
						 l->api);
			trace_row_add(r, &tp->cur->t, l->stack_id, metric, l->size);
			if (metric == TM_PEAK)
				r->peak_allocs++;
			else
				r->end_allocs++;
		}
	}
}

static void on_event2(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	struct top *tp = ctx;
	struct top_trace *tt = tp->cur;
	if (tp->rows.by == GROUP_RANGE)
		range_pass(tp, e);
	while (tt->next < tt->ntargets && tt->targets[tt->next]->lv.peak_seq == rp->seq)
		charge_live(tp, rp, tt->targets[tt->next++]->ordinal, TM_PEAK);
}

static int target_cmp(const void *a, const void *b)
{
	const struct rp_dev *x = *(struct rp_dev *const *)a, *y = *(struct rp_dev *const *)b;
	return x->lv.peak_seq < y->lv.peak_seq ? -1 : x->lv.peak_seq > y->lv.peak_seq;
}

static int devpeak_cmp(const void *a, const void *b)
{
	const struct rp_dev *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/* Both passes over one opened trace. -1 or an exit code. */
static int top_one(struct top *tp, struct top_trace *tt)
{
	struct replay rp;
	tp->cur = tt;
	replay_init(&rp);
	phase_init(&tp->phases, &tt->t);
	int rc = trace_replay(&tt->t, &rp, on_event1, tp);
	if (rc >= 0) {
		replay_free(&rp);
		phase_free(&tp->phases);
		return rc;
	}
	charge_live(tp, &rp, INT64_MIN, TM_END);
	phase_free(&tp->phases);
	tt->ndevs = rp.ndevs;
	tt->devs = xrealloc(NULL, rp.ndevs * sizeof(*tt->devs));
	tt->targets = xrealloc(NULL, rp.ndevs * sizeof(*tt->targets));
	for (size_t i = 0; i < rp.ndevs; i++) {
		tt->devs[i] = rp.devs[i];
		if (rp.devs[i].lv.peak > tt->peak)
			tt->peak = rp.devs[i].lv.peak;
	}
	if (tt->ndevs)
		qsort(tt->devs, tt->ndevs, sizeof(*tt->devs), devpeak_cmp);
	for (size_t i = 0; i < tt->ndevs; i++)
		if (tt->devs[i].lv.peak_seq)
			tt->targets[tt->ntargets++] = &tt->devs[i];
	replay_free(&rp);
	if (tt->ntargets) {
		if (tt->ntargets)
			qsort(tt->targets, tt->ntargets, sizeof(*tt->targets), target_cmp);
		replay_init(&rp);
		phase_init(&tp->phases, &tt->t);
		rc = trace_replay(&tt->t, &rp, on_event2, tp);
		replay_free(&rp);
		phase_free(&tp->phases);
	}
	trace_rows_fold(&tp->rows);
	return rc;
}

/* ---- output ----------------------------------------------------------- */

struct devsum {
	int64_t ordinal;
	uint64_t peak; /* summed over the traces */
	int64_t peak_time;
	size_t ntraces;
};

static struct devsum *device_list(struct top_trace *ts, int n, size_t *ndev)
{
	size_t cap = 0, nd = 0;
	for (int i = 0; i < n; i++)
		cap += ts[i].ndevs;
	struct devsum *d = xrealloc(NULL, cap * sizeof(*d));
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < ts[i].ndevs; k++) {
			const struct rp_dev *p = &ts[i].devs[k];
			size_t j = 0;
			while (j < nd && d[j].ordinal != p->ordinal)
				j++;
			if (j == nd)
				d[nd++] = (struct devsum){p->ordinal, 0, 0, 0};
			d[j].peak += p->lv.peak;
			d[j].peak_time =
			    p->lv.peak_seq ? trace_rel(&ts[i].t, p->lv.peak_time_ns) : 0;
			d[j].ntraces++;
		}
	for (size_t i = 1; i < nd; i++)
		for (size_t j = i; j > 0 && d[j - 1].ordinal > d[j].ordinal; j--) {
			struct devsum x = d[j];
			d[j] = d[j - 1];
			d[j - 1] = x;
		}
	*ndev = nd;
	return d;
}

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
	rb_site_line(f, r->key, room, t, 3);
}

static void print_human(struct top *tp, struct top_trace *ts, int n, int metric, uint64_t limit)
{
	FILE *f = stdout;
	char b[5][32], lb[64];
	size_t nrows, ndev;
	struct trace_row **rows = trace_rows_sorted(&tp->rows, metric, &nrows);
	struct devsum *devs = device_list(ts, n, &ndev);
	static const char *const what[TM_COUNT] = {"bytes live at the device's peak",
						   "bytes live at the end", "total bytes allocated",
						   "allocation calls"};
	fprintf(f, "allocation sites by %s, grouped by %s", what[metric], group_names[tp->rows.by]);
	if (tp->rows.by == GROUP_STACK)
		fprintf(f, " (the site and %d caller%s)", tp->rows.depth,
			tp->rows.depth == 1 ? "" : "s");
	fputc('\n', f);
	if (n > 1)
		fprintf(f, "%d traces: the figures add up over the processes\n", n);
	for (int i = 0; i < n; i++)
		rb_partial_line(f, &ts[i].t, n > 1);
	for (int i = 0; i < n; i++)
		if (!ts[i].t.complete) {
			char *text = NULL;
			if (asprintf(
				&text,
				"note: %s is incomplete: \"end\" means the last flush, not the "
				"exit",
				ts[i].t.path) < 0)
				xalloc_failed();
			rb_wrap_hang(f, 2, rb_text_width(f), text); /* the path may be long */
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
		fprintf(f, "\n  %10s %7s %10s %10s %8s  %s%s\n", "at peak", "allocs", "at end",
			"total", "calls", n > 1 ? "most in                   " : "",
			tp->rows.by == GROUP_STACK || tp->rows.by == GROUP_FUNCTION
			    ? "site  [library]"
			: tp->rows.by == GROUP_LIBRARY ? "library"
			: tp->rows.by == GROUP_RANGE   ? "phase"
						       : "api");
		size_t shown = 0, total = 0;
		int width = rb_text_width(f);
		for (size_t i = 0; i < nrows; i++) {
			struct trace_row *r = rows[i];
			if (r->device != devs[d].ordinal)
				continue;
			total++;
			if (limit && shown >= limit)
				continue;
			shown++;
			fprintf(f, "  %10s %7" PRIu64 " %10s %10s %8" PRIu64 "  ",
				fmt_size(b[0], r->v[TM_PEAK]), r->peak_allocs,
				fmt_size(b[1], r->v[TM_END]), fmt_size(b[2], r->v[TM_TOTAL]),
				r->v[TM_CALLS]);
			if (n > 1) {
				int mt = r->max_trace[metric];
				char mb[80];
				snprintf(mb, sizeof(mb), "%s %s",
					 mt >= 0 ? trace_label(&ts[mt].t, lb, sizeof(lb)) : "-",
					 metric_text(metric, r->max[metric], b[3]));
				fprintf(f, "%-26.26s ", mb);
			}
			print_site(f, tp, ts, r, metric, width - 53 - (n > 1 ? 27 : 0));
		}
		if (total > shown)
			fprintf(f, "  ... %zu more (-n 0 shows all)\n", total - shown);
	}
	if (n > 1) {
		fprintf(f, "\nprocesses\n  %-3s %-24s %10s  %s\n", "#", "process", "peak", "trace");
		uint64_t *peaks = xrealloc(NULL, (size_t)n * sizeof(*peaks));
		struct trace **tps = xrealloc(NULL, (size_t)n * sizeof(*tps));
		for (int i = 0; i < n; i++) {
			peaks[i] = ts[i].peak;
			tps[i] = &ts[i].t;
			fprintf(f, "  %-3d %-24.24s %10s  %s\n", i,
				trace_label(&ts[i].t, lb, sizeof(lb)), fmt_size(b[0], ts[i].peak),
				ts[i].t.path);
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
static void json_trace(FILE *f, const struct top_trace *tt, bool first)
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
	rb_json_partial(f, t);
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
		rb_json_libraries(f, t, r, metric);
		fputs(", \"function\": ", f);
		json_cstr0(f, has && fr.function ? fr.function : "");
		fprintf(f, ", \"stack_id\": %" PRIu64, r->stack_id);
		if (r->stack_id)
			rb_json_stack(f, t, r->stack_id);
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
	struct devsum *devs = device_list(ts, n, &ndev);
	fprintf(f, "{\"by\": \"%s\", \"depth\": %d, \"sort\": \"%s\", \"limit\": %" PRIu64 ",\n",
		group_names[tp->rows.by], depth, metric_names[metric], limit);
	fputs(" \"traces\": [", f);
	bool complete = true;
	for (int i = 0; i < n; i++) {
		complete &= ts[i].t.complete;
		json_trace(f, &ts[i], i == 0);
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
	    OPT_BOOL("json", &json, "one JSON object instead of tables (keys: docs/cli.md)"),
	    OPT_SITES(&sa),
	    OPT_END(),
	};
	const char **paths;
	int npaths;
	int rc = opt_parse_sites(&usage, opts, argc, argv, &paths, &npaths, &sa);
	if (rc >= 0)
		return rc;

	struct top tp;
	trace_rows_init(&tp.rows, (enum trace_group)by, (int)depth);
	struct top_trace *ts = xcalloc((size_t)npaths, sizeof(*ts));
	int opened = 0;
	for (int i = 0; i < npaths && rc < 0; i++) {
		rc = trace_open(&ts[i].t, "top", paths[i]);
		if (rc >= 0)
			break;
		ts[i].t.site_opts = &sa.opts;
		ts[i].t.short_names = !json;
		opened++;
		rc = top_one(&tp, &ts[i]);
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
		free(ts[i].devs);
		free(ts[i].targets);
		trace_close(&ts[i].t);
	}
	trace_rows_free(&tp.rows);
	free(ts);
	free(paths);
	site_args_done(usage.name, &sa);
	return rc;
}
