/* gpumemtrace oom [--json] TRACE...: every allocation call that failed,
 * named by its case (analysis/oom.h) with the figures that decide it, the
 * verdict, and where the trace cannot show an out-of-memory error. Other
 * failed calls are listed briefly. The figures are analysis/oom.c's; this
 * file parses and renders. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/explain.h"
#include "analysis/oom.h"
#include "analysis/report-base.h"
#include "analysis/trace.h"

#define HUMAN_OOMS 20

static const char about[] =
    "Every allocation call that failed, and the verdict: the case of the first\n"
    "failure that was out of device memory and not recovered. Each failure is\n"
    "named by its case, tested in this order, with the figures that decide it:\n"
    "  not-an-oom            not device memory running out: a result other than\n"
    "                        out-of-memory (a probe, a fallback), a host, managed\n"
    "                        or address-space allocation, or a request the same\n"
    "                        thread at once answered with a smaller one that\n"
    "                        succeeded (BFC back-off, cuDNN's size probe);\n"
    "  recovered-by-retry    the same request succeeded within 1 s on the same\n"
    "                        thread, after frees: the framework emptied its cache\n"
    "                        and retried (PyTorch, CuPy): not a program failure;\n"
    "  exceeds-device-total  the request is larger than the device's total memory;\n"
    "  other-processes       memory in use that is not this process's (total - free\n"
    "                        - this process) is more than this process's and at\n"
    "                        least the shortfall: without it the request would fit;\n"
    "  this-process          otherwise: this process's allocations, contexts and\n"
    "                        module code stood in the way;\n"
    "  unknown               the free memory is unknown and this process's memory\n"
    "                        plus the request does not exceed the device's total.\n"
    "Free and total come from the cuMemGetInfo the tracer calls on the failing\n"
    "thread right after the failure (a MEMINFO record), else from an NVML sample\n"
    "taken within 1 s of it. This process's memory is NVML's per-process figure\n"
    "when sampled, else its traced allocations plus its contexts and module code\n"
    "(as in accounting). What it held then is shown by library and by site.\n"
    "The report also says where the trace cannot show an out-of-memory error:\n"
    "a preallocated pool (TensorFlow, JAX), a CuPy limit, a PyTorch memory\n"
    "fraction: these fail without a driver call. Other failed calls are counted\n"
    "by API and result. Several traces: a section each, then the failures per\n"
    "process.\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace oom gpumemtrace.1234.gmt\n"
    "  gpumemtrace oom --json rank*.gmt\n"
    "\n"
    "exit status: 0 ok, 2 usage, 3 cannot read a file, 4 not a trace or corrupt\n";
static const struct opt_usage usage = {
    .name = "oom", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

static void json_u(FILE *f, const char *key, bool known, uint64_t v)
{
	if (known)
		fprintf(f, ", \"%s\": %" PRIu64, key, v);
	else
		fprintf(f, ", \"%s\": null", key);
}

static void figures_json(FILE *f, struct trace *t, const struct oom_failure *o)
{
	if (o->mi)
		fprintf(f,
			",\n     \"meminfo\": {\"time_ns\": %" PRId64 ", \"free_bytes\": %" PRIu64
			", \"total_bytes\": %" PRIu64 "}",
			trace_rel(t, o->mi->time_ns), o->mi->free_bytes, o->mi->total_bytes);
	else
		fputs(",\n     \"meminfo\": null", f);
	const struct trace_sample *s = o->sample;
	if (s) {
		fprintf(f,
			", \"nvml_sample\": {\"time_ns\": %" PRId64 ", \"used_bytes\": %" PRIu64
			", \"total_bytes\": %" PRIu64,
			trace_rel(t, s->time_ns), s->used_bytes, s->total_bytes);
		json_u(f, "process_used_bytes", s->process_known, s->process_used_bytes);
		fputc('}', f);
	} else {
		fputs(", \"nvml_sample\": null", f);
	}
	fputs(",\n     \"figures\": {\"request_bytes\": ", f);
	fprintf(f, "%" PRIu64, o->e.size);
	json_u(f, "total_bytes", o->total_known, o->total);
	json_u(f, "free_bytes", o->free_known, o->free_bytes);
	fprintf(f,
		", \"held_bytes\": %" PRIu64 ", \"held_bytes_all_devices\": %" PRIu64
		", \"contexts_bytes\": %" PRIu64 ", \"this_process_bytes\": %" PRIu64
		", \"this_process_source\": \"%s\"",
		o->held, o->held_all, o->contexts, o->this_process,
		o->from_meminfo	  ? "meminfo"
		: o->nvml_process ? "nvml"
				  : "trace");
	if (o->dropped)
		fprintf(f, ", \"inconsistent_bytes\": %" PRIu64 ", \"inconsistent_source\": \"%s\"",
			o->dropped, o->dropped_nvml ? "nvml" : "trace");
	json_u(f, "other_processes_bytes", o->free_known, o->others);
	fputc('}', f);
	const struct oom_next *n = &o->next;
	if (n->seen)
		fprintf(f,
			",\n     \"next\": {\"time_ns\": %" PRId64 ", \"size\": %" PRIu64
			", \"ok\": %s, \"same_api\": %s, \"freed_bytes\": %" PRIu64
			", \"frees\": %" PRIu64 "}",
			trace_rel(t, n->time_ns), n->size, n->ok ? "true" : "false",
			n->same_api ? "true" : "false", n->freed, n->freed_count);
	else
		fputs(",\n     \"next\": null", f);
}

static void oom_json(FILE *f, struct trace *t, const struct oom_failure *o, bool first)
{
	char site[512];
	const struct gmt_event *e = &o->e;
	fprintf(f, "%s\n    {\"time_ns\": %" PRId64 ", \"api\": ", first ? "" : ",",
		trace_rel(t, e->time_ns));
	rb_json_s(f, api_name(e->api));
	fprintf(f,
		", \"device\": %" PRId64 ", \"size\": %" PRIu64 ", \"result\": %" PRIu64
		", \"result_name\": ",
		e->device, e->size, e->result);
	rb_json_s(f, result_name(e->api, e->result));
	fprintf(f, ", \"tid\": %" PRIu64 ", \"stack_id\": %" PRIu64 ", \"site\": ", e->tid,
		e->stack_id);
	rb_json_s(f, rb_site(t, e->stack_id, site, sizeof(site)));
	fputs(",\n     \"case\": ", f);
	rb_json_s(f, oom_case_name[o->kase]);
	fputs(", \"explanation\": ", f);
	rb_json_s(f, o->why);
	figures_json(f, t, o);
	fputs(",\n     \"by_library\": [", f);
	for (size_t i = 0; i < o->nlibs; i++) {
		fputs(i ? ", {\"library\": " : "{\"library\": ", f);
		rb_json_s(f, o->libs[i].name);
		fprintf(f, ", \"bytes\": %" PRIu64 ", \"allocations\": %" PRIu64 "}",
			o->libs[i].bytes, o->libs[i].count);
	}
	fputs("],\n     \"top_sites\": [", f);
	for (size_t i = 0; i < o->nsites; i++) {
		fprintf(f, "%s{\"stack_id\": %" PRIu64 ", \"site\": ", i ? ", " : "",
			o->sites[i].stack_id);
		rb_json_s(f, rb_site(t, o->sites[i].stack_id, site, sizeof(site)));
		fprintf(f, ", \"bytes\": %" PRIu64 ", \"allocations\": %" PRIu64 "}",
			o->sites[i].bytes, o->sites[i].count);
	}
	fputs("]}", f);
}

static void trace_json(FILE *f, struct trace *t, const struct oom_result *r, bool first)
{
	fprintf(f, "%s\n  {", first ? "" : ",");
	rb_json_head(f, t);
	fputs(", \"verdict\": ", f);
	rb_json_s(f, r->verdict);
	fprintf(f,
		", \"meminfo_records\": %zu, \"failed_allocations_total\": %" PRIu64
		", \"ooms_total\": %" PRIu64 ",\n   \"cases\": {",
		t->nmeminfo, r->fails_total, r->ooms_total);
	for (int c = 0; c < OOM_NCASES; c++)
		fprintf(f, "%s\"%s\": %" PRIu64, c ? ", " : "", oom_case_name[c], r->cases[c]);
	fputs("},\n   \"invisible\": [", f);
	for (size_t k = 0; k < r->nblind; k++) {
		fprintf(f,
			"%s{\"case\": \"invisible\", \"reason\": \"%s\", \"text\": ", k ? ", " : "",
			r->blind[k].key);
		rb_json_s(f, r->blind[k].text);
		fputc('}', f);
	}
	fputs("],\n   \"ooms\": [", f);
	for (size_t k = 0; k < r->nfails; k++)
		oom_json(f, t, &r->fails[k], k == 0);
	fprintf(f, "],\n   \"other_failures_total\": %" PRIu64 ", \"other_failures\": [",
		r->others_total);
	for (size_t k = 0; k < r->nothers; k++) {
		const struct oom_other *y = &r->others[k];
		fprintf(f, "%s{\"api\": ", k ? ", " : "");
		rb_json_s(f, api_name(y->api));
		fprintf(f, ", \"result\": %" PRIu64 ", \"result_name\": ", y->result);
		rb_json_s(f, result_name(y->api, y->result));
		fprintf(f, ", \"count\": %" PRIu64 ", \"first_time_ns\": %" PRId64 "}", y->count,
			trace_rel(t, y->first_time));
	}
	fputs("]}", f);
}

static void oom_human(FILE *f, struct trace *t, const struct oom_failure *o, const char *next)
{
	char b1[32], b2[32], b3[32], site[512];
	const struct gmt_event *e = &o->e;
	const char *rn = result_name(e->api, e->result);
	char cut[512];
	int width = rb_text_width(f);
	fprintf(f, "\n%s  %s of %s on device %" PRId64 " failed: %s\n",
		rb_time(b1, trace_rel(t, e->time_ns)), api_name(site_api(t, e->stack_id, e->api)),
		fmt_size(b2, e->size), e->device, rn ? rn : "?");
	fprintf(f, "  site: %s\n",
		rb_fit(rb_site(t, e->stack_id, site, sizeof(site)), width - 8, cut, sizeof(cut)));
	if (o->device) {
		if (o->mi)
			fprintf(f, "  device memory then: %s free of %s (cuMemGetInfo at %s)\n",
				fmt_size(b1, o->mi->free_bytes), fmt_size(b2, o->mi->total_bytes),
				rb_time(b3, trace_rel(t, o->mi->time_ns)));
		else if (o->free_known)
			fprintf(f, "  device memory then: %s free of %s (NVML sample at %s)\n",
				fmt_size(b1, o->free_bytes), fmt_size(b2, o->total),
				rb_time(b3, trace_rel(t, o->sample->time_ns)));
		else
			fprintf(f, "  device memory then: free unknown (no MEMINFO record, no NVML "
				   "sample)\n");
		char line[400];
		if (o->dropped) /* a source larger than the device: named, not used */
			snprintf(
			    line, sizeof(line),
			    "this process held %s (%s traced allocations%s); %s %s is more than "
			    "the device's total: inconsistent, not used",
			    fmt_size(b1, o->this_process), fmt_size(b2, o->held),
			    o->from_meminfo ? ", the device's use: total - free"
					    : " + contexts and module code",
			    o->dropped_nvml ? "NVML's per-process" : "traced + contexts",
			    fmt_size(b3, o->dropped));
		else
			snprintf(
			    line, sizeof(line),
			    "this process %s %s (%s traced allocations, %s contexts and module "
			    "code)",
			    o->nvml_process ? "used, per NVML," : "held",
			    fmt_size(b1, o->this_process), fmt_size(b2, o->held),
			    fmt_size(b3, o->contexts));
		if (o->free_known)
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 "; other processes %s", fmt_size(b1, o->others));
		rb_wrap(f, 2, width, line);
	}
	if (o->nlibs) {
		fprintf(f, "  by library:");
		for (size_t i = 0; i < o->nlibs; i++)
			fprintf(f, "%s %s %s", i ? "," : "", o->libs[i].name,
				fmt_size(b1, o->libs[i].bytes));
		if (o->libs_total > o->nlibs)
			fprintf(f, ", ... %zu more", o->libs_total - o->nlibs);
		fputc('\n', f);
		fprintf(f, "  biggest sites:\n");
		for (size_t i = 0; i < o->nsites; i++)
			fprintf(f, "    %11s %6" PRIu64 "  %s\n", fmt_size(b1, o->sites[i].bytes),
				o->sites[i].count,
				rb_fit(rb_site(t, o->sites[i].stack_id, site, sizeof(site)),
				       width - 24, cut, sizeof(cut)));
	}
	char line[800];
	snprintf(line, sizeof(line), "case: %s: %s", oom_case_name[o->kase], o->why);
	rb_wrap(f, 2, width, line);
	if (next && o->kase == OOM_THIS_PROCESS)
		rb_wrap(f, 2, width, next);
}

static void trace_human(FILE *f, struct trace *t, const struct oom_result *r, bool first)
{
	char b1[32];
	if (!first)
		fputc('\n', f);
	rb_human_head(f, t);
	if (!r->fails_total) {
		fprintf(f, "  no allocation failed\n");
	} else {
		fprintf(f, "  %" PRIu64 " allocation call%s failed:", r->fails_total,
			r->fails_total == 1 ? "" : "s");
		for (int c = 0, n = 0; c < OOM_NCASES; c++)
			if (r->cases[c])
				fprintf(f, "%s %" PRIu64 " %s", n++ ? "," : "", r->cases[c],
					oom_case_name[c]);
		fputc('\n', f);
	}
	fprintf(f, "  verdict: %s\n", r->verdict);
	for (size_t k = 0; k < r->nblind; k++) {
		char line[640];
		snprintf(line, sizeof(line), "not visible here: %s", r->blind[k].text);
		rb_wrap(f, 2, rb_text_width(f), line);
	}
	size_t show = r->nfails < HUMAN_OOMS ? r->nfails : HUMAN_OOMS;
	/* this process's own memory under a cache: what to do, from its mode */
	char nb[600];
	const char *next = NULL;
	for (size_t k = 0; k < show && !next; k++) {
		struct ex_recog rec;
		if (r->fails[k].kase != OOM_THIS_PROCESS)
			continue;
		if (explain_allocator(t, false, 0, &rec) < 0)
			next = explain_oom_next(&rec, nb, sizeof(nb));
		break;
	}
	for (size_t k = 0; k < show; k++)
		oom_human(f, t, &r->fails[k], next);
	if (r->fails_total > show)
		fprintf(f, "\n  ... %" PRIu64 " more (--json details up to %d)\n",
			r->fails_total - show, OOM_MAX);
	if (r->others_total) {
		fprintf(f, "\nother failed calls (%" PRIu64 ")\n", r->others_total);
		for (size_t k = 0; k < r->nothers; k++) {
			const struct oom_other *y = &r->others[k];
			const char *rn = result_name(y->api, y->result);
			fprintf(f, "  %-28s %-32s %6" PRIu64 " x, first at %s\n", api_name(y->api),
				rn ? rn : "?", y->count, rb_time(b1, trace_rel(t, y->first_time)));
		}
	}
}

int cmd_oom(int argc, char **argv)
{
	struct rb_opts opt = {0};
	struct site_args sa = {0};
	const struct option opts[] = {
	    OPT_RB_JSON(&opt),
	    OPT_SITES(&sa),
	    OPT_END(),
	};
	struct trace *ts;
	int rc = rb_parse_open(&usage, opts, argc, argv, &opt, &sa, &ts);
	if (rc >= 0)
		return rc;
	FILE *f = stdout;
	int worst = 0;
	size_t n = (size_t)opt.npaths;
	uint64_t *counts = xcalloc(n, sizeof(*counts));
	struct oom_result *rs = xcalloc(n, sizeof(*rs));
	const struct oom_result **rp = xcalloc(n, sizeof(*rp));
	if (opt.json)
		fputs("{\"traces\": [", f);
	for (size_t i = 0; i < n; i++) {
		int x = oom_compute(&ts[i], &rs[i]);
		if (x >= 0 && x > worst)
			worst = x;
		counts[i] = rs[i].ooms_total;
		rp[i] = &rs[i];
		if (opt.json)
			trace_json(f, &ts[i], &rs[i], i == 0);
		else
			trace_human(f, &ts[i], &rs[i], i == 0);
	}
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += counts[i];
	const char *verdict = oom_verdict(rp, n);
	if (opt.json) {
		fprintf(f,
			"],\n \"totals\": {\"processes\": %d, \"ooms_total\": %" PRIu64
			", \"imbalance\": ",
			opt.npaths, sum);
		trace_imbalance_json(f, counts, n);
		fputs("},\n \"verdict\": ", f);
		rb_json_s(f, verdict);
		fputs("}\n", f);
	} else if (n > 1) {
		char lab[128];
		fprintf(f, "\nout-of-memory failures per process (verdict over all: %s)\n",
			verdict);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "  %-40.40s %8" PRIu64 "  %s\n",
				trace_label(&ts[i], lab, sizeof(lab)), counts[i], rs[i].verdict);
		fprintf(f, "  %-40s %8" PRIu64 "\n", "total", sum);
	}
	for (size_t i = 0; i < n; i++)
		oom_free(&rs[i]);
	free(rs);
	free(rp);
	free(counts);
	free(opt.paths);
	rc = rb_finish_all(ts, opt.npaths, worst);
	site_args_done(usage.name, &sa);
	return rc;
}
