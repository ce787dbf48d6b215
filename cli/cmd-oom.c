/* gpumemtrace oom [--json] TRACE...: every allocation that failed with
 * out-of-memory: what was asked, when, where; what cuMemGetInfo said right
 * then (the MEMINFO record the tracer writes on the failing thread); what
 * this process held, by library and by site; and a verdict: fragmentation,
 * other processes, or real exhaustion. Other failed calls are listed
 * briefly. One replay per trace. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/oom.h"
#include "analysis/report-base.h"
#include "analysis/trace.h"

#define HUMAN_OOMS 20

static const char about[] =
    "Every allocation that failed with out-of-memory (CUDA_ERROR_OUT_OF_MEMORY,\n"
    "cudaErrorMemoryAllocation): the size asked for, when (time since the trace\n"
    "start), the API and the allocation site; the device's free and total memory\n"
    "at that moment, from the cuMemGetInfo the tracer calls on the failing thread\n"
    "right after the failure (the first MEMINFO record of the same thread at or\n"
    "after the failure); the device memory this process held then, by library and\n"
    "by site; and a verdict:\n"
    "  fragmentation       free >= requested, yet the allocation failed: no free\n"
    "                      block was large enough;\n"
    "  other processes     free < requested, and memory in use that this process\n"
    "                      did not allocate (total - free - held: other processes,\n"
    "                      CUDA contexts) is larger than what this process held;\n"
    "  real exhaustion     free < requested, and this process held at least half of\n"
    "                      the memory in use.\n"
    "Without a MEMINFO record the free memory is unknown: the verdict is real\n"
    "exhaustion when what this process held plus the request exceeds the device's\n"
    "total, or it held at least 90% of it; otherwise \"unknown\".\n"
    "Other failed calls are counted by API and result.\n"
    "Several traces: a section each, then the failures per process.\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace oom gpumemtrace.1234.gmt\n"
    "  gpumemtrace oom --json rank*.gmt\n"
    "\n"
    "exit status: 0 ok, 2 usage, 3 cannot read a file, 4 not a trace or corrupt\n";
static const struct opt_usage usage = {
    .name = "oom", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

static void oom_json(FILE *f, struct trace *t, const struct oom_failure *o, bool first)
{
	char site[512];
	const struct gmt_event *e = &o->e;
	const char *rn = result_name(e->api, e->result);
	fprintf(f, "%s\n    {\"time_ns\": %" PRId64 ", \"api\": ", first ? "" : ",",
		trace_rel(t, e->time_ns));
	rb_json_s(f, api_name(e->api));
	fprintf(f,
		", \"device\": %" PRId64 ", \"size\": %" PRIu64 ", \"result\": %" PRIu64
		", \"result_name\": ",
		e->device, e->size, e->result);
	rb_json_s(f, rn);
	fprintf(f, ", \"tid\": %" PRIu64 ", \"stack_id\": %" PRIu64 ", \"site\": ", e->tid,
		e->stack_id);
	rb_json_s(f, rb_site(t, e->stack_id, site, sizeof(site)));
	if (o->mi) {
		uint64_t used = o->mi->total_bytes > o->mi->free_bytes
				    ? o->mi->total_bytes - o->mi->free_bytes
				    : 0;
		fprintf(f,
			",\n     \"meminfo\": {\"time_ns\": %" PRId64 ", \"free_bytes\": %" PRIu64
			", \"total_bytes\": %" PRIu64 "}, \"other_bytes\": %" PRIu64,
			trace_rel(t, o->mi->time_ns), o->mi->free_bytes, o->mi->total_bytes,
			used > o->held ? used - o->held : 0);
	} else {
		fputs(",\n     \"meminfo\": null, \"other_bytes\": null", f);
	}
	fprintf(f, ", \"held_bytes\": %" PRIu64 ", \"held_bytes_all_devices\": %" PRIu64, o->held,
		o->held_all);
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
	fputs("],\n     \"verdict\": ", f);
	rb_json_s(f, o->verdict);
	fputs(", \"explanation\": ", f);
	rb_json_s(f, o->why);
	fputc('}', f);
}

static void oom_human(FILE *f, struct trace *t, const struct oom_failure *o)
{
	char b1[32], b2[32], b3[32], site[512];
	const struct gmt_event *e = &o->e;
	const char *rn = result_name(e->api, e->result);
	char cut[512];
	int width = rb_text_width(f);
	fprintf(f, "\n%s  %s of %s on device %" PRId64 " failed: %s\n",
		rb_time(b1, trace_rel(t, e->time_ns)), api_name(site_api(t, e->stack_id, e->api)),
		fmt_size(b2, e->size), e->device, rn ? rn : "out of memory");
	fprintf(f, "  site: %s\n",
		rb_fit(rb_site(t, e->stack_id, site, sizeof(site)), width - 8, cut, sizeof(cut)));
	if (o->mi)
		fprintf(f, "  device memory then: %s free of %s (cuMemGetInfo at %s)\n",
			fmt_size(b1, o->mi->free_bytes), fmt_size(b2, o->mi->total_bytes),
			rb_time(b3, trace_rel(t, o->mi->time_ns)));
	else
		fprintf(f, "  device memory then: free unknown (no MEMINFO record)\n");
	fprintf(f, "  this process held %s on the device (%s on all devices)\n",
		fmt_size(b1, o->held), fmt_size(b2, o->held_all));
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
	fprintf(f, "  verdict: %s: %s\n", o->verdict, o->why);
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
	uint64_t *counts = xrealloc(NULL, (size_t)opt.npaths * sizeof(*counts));
	struct trace **tps = xrealloc(NULL, (size_t)opt.npaths * sizeof(*tps));
	if (opt.json)
		fputs("{\"traces\": [", f);
	for (int i = 0; i < opt.npaths; i++) {
		struct trace *t = &ts[i];
		struct oom_result r;
		int x = oom_compute(t, &r);
		if (x >= 0 && x > worst)
			worst = x;
		counts[i] = r.ooms_total;
		tps[i] = t;
		if (opt.json) {
			fprintf(f, "%s\n  {", i ? "," : "");
			rb_json_head(f, t);
			fprintf(f,
				", \"meminfo_records\": %zu, \"ooms_total\": %" PRIu64
				", \"ooms\": [",
				t->nmeminfo, r.ooms_total);
			for (size_t k = 0; k < r.nooms; k++)
				oom_json(f, t, &r.ooms[k], k == 0);
			fprintf(f,
				"],\n   \"other_failures_total\": %" PRIu64
				", \"other_failures\": [",
				r.others_total);
			for (size_t k = 0; k < r.nothers; k++) {
				const struct oom_other *y = &r.others[k];
				fprintf(f, "%s{\"api\": ", k ? ", " : "");
				rb_json_s(f, api_name(y->api));
				fprintf(f,
					", \"result\": %" PRIu64 ", \"result_name\": ", y->result);
				rb_json_s(f, result_name(y->api, y->result));
				fprintf(f,
					", \"count\": %" PRIu64 ", \"first_time_ns\": %" PRId64 "}",
					y->count, trace_rel(t, y->first_time));
			}
			fputs("]}", f);
		} else {
			char b1[32];
			if (i)
				fputc('\n', f);
			rb_human_head(f, t);
			if (!r.ooms_total)
				fprintf(f, "  no allocation failed with out-of-memory\n");
			else
				fprintf(f, "  %" PRIu64 " allocation%s failed with out-of-memory\n",
					r.ooms_total, r.ooms_total == 1 ? "" : "s");
			size_t show = r.nooms < HUMAN_OOMS ? r.nooms : HUMAN_OOMS;
			for (size_t k = 0; k < show; k++)
				oom_human(f, t, &r.ooms[k]);
			if (r.ooms_total > show)
				fprintf(f, "\n  ... %" PRIu64 " more (--json details up to %d)\n",
					r.ooms_total - show, OOM_MAX);
			if (r.others_total) {
				fprintf(f, "\nother failed calls (%" PRIu64 ")\n", r.others_total);
				for (size_t k = 0; k < r.nothers; k++) {
					const struct oom_other *y = &r.others[k];
					const char *rn = result_name(y->api, y->result);
					fprintf(f, "  %-28s %-32s %6" PRIu64 " x, first at %s\n",
						api_name(y->api), rn ? rn : "?", y->count,
						rb_time(b1, trace_rel(t, y->first_time)));
				}
			}
		}
		oom_free(&r);
	}
	uint64_t sum = 0;
	for (int i = 0; i < opt.npaths; i++)
		sum += counts[i];
	if (opt.json) {
		fprintf(f,
			"],\n \"totals\": {\"processes\": %d, \"ooms_total\": %" PRIu64
			", \"imbalance\": ",
			opt.npaths, sum);
		trace_imbalance_json(f, counts, (size_t)opt.npaths);
		fputs("}}\n", f);
	} else if (opt.npaths > 1) {
		char lab[128];
		fprintf(f, "\nout-of-memory failures per process\n");
		for (int i = 0; i < opt.npaths; i++)
			fprintf(f, "  %-40.40s %8" PRIu64 "\n",
				trace_label(&ts[i], lab, sizeof(lab)), counts[i]);
		fprintf(f, "  %-40s %8" PRIu64 "\n", "total", sum);
	}
	free(counts);
	free(tps);
	free(opt.paths);
	rc = rb_finish_all(ts, opt.npaths, worst);
	site_opts_free(&sa.opts);
	return rc;
}
