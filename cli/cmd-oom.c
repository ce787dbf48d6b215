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
    "Every allocation call that failed, every out-of-memory error a framework\n"
    "raised (recorded by `run --framework-counters`: joined to the failed call it\n"
    "explains, else on its own), and the verdict: the case of the first one that\n"
    "was out of device memory, not recovered and not caught by the program. Each\n"
    "is named by its case, tested in this order, with the figures that decide it:\n"
    "  not-an-oom            not device memory running out: a result other than\n"
    "                        out-of-memory (a probe, a fallback), a host, managed\n"
    "                        or address-space allocation, or a request the same\n"
    "                        thread at once answered with a smaller one that\n"
    "                        succeeded (BFC back-off, cuDNN's size probe);\n"
    "  recovered-by-retry    the same request succeeded within 1 s on the same\n"
    "                        thread, after frees: the framework emptied its cache\n"
    "                        and retried (PyTorch, CuPy): not a program failure;\n"
    "  exceeds-device-total  the request is larger than the device's total memory;\n"
    "  fragmentation         (the framework's own figures) free inside its cache or\n"
    "                        pool was at least the request, yet no block was large\n"
    "                        enough: PyTorch's reserved but unallocated, BFC's free\n"
    "                        bytes against its largest free block, CuPy's pool;\n"
    "  limit                 (the framework's own figures) a limit set below the\n"
    "                        device refused it while the device had room: a memory\n"
    "                        fraction, memory_limit, XLA's fraction, CuPy's limit;\n"
    "  other-processes       memory in use that is not this process's (total - free\n"
    "                        - this process) is more than this process's and at\n"
    "                        least the shortfall: without it the request would fit;\n"
    "  this-process          otherwise: this process's allocations, contexts and\n"
    "                        module code stood in the way: its working set (under\n"
    "                        a cache without the framework's figures, fragmentation\n"
    "                        cannot be told from it);\n"
    "  unknown               the free memory is unknown and this process's memory\n"
    "                        plus the request does not exceed the device's total.\n"
    "Free and total come from the cuMemGetInfo the tracer calls on the failing\n"
    "thread right after the failure (a MEMINFO record), else from an NVML sample\n"
    "taken within 1 s of it. This process's memory is NVML's per-process figure\n"
    "when sampled, else its traced allocations plus its contexts and module code\n"
    "(as in accounting). What it held then is shown by library and by site.\n"
    "The report also says where the trace cannot show an out-of-memory error:\n"
    "a preallocated pool (TensorFlow, JAX), a CuPy limit, a PyTorch memory\n"
    "fraction: these fail without a driver call. When the process ended badly\n"
    "(a non-zero exit status, or no trailer: killed or crashed) while such a pool\n"
    "was loaded and nothing in the trace explains it, the verdict is oom-hidden.\n"
    "A framework error only PyTorch's observer saw, in a run that went on, was\n"
    "caught by the program (verdict caught when nothing else failed). Other failed\n"
    "calls are counted by API and result. Several traces: a section each, then the\n"
    "failures per process.\n";
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

static void size_json(FILE *f, const char *key, const struct fw_size *s)
{
	json_u(f, key, s->known, s->bytes);
}

static void fw_json(FILE *f, struct trace *t, const struct fwoom *w)
{
	static const char *const how[] = {"observer", "excepthook", "thread", "at-exit"};
	const struct trace_fwoom *r = w->raised ? w->raised : w->observer;
	fputs(",\n     \"framework\": {\"source\": ", f);
	cli_json_s(f, w->source);
	fputs(", \"type\": ", f);
	cli_json_s(f, w->type);
	fprintf(f, ", \"time_ns\": %" PRId64 ", \"observer\": %s, \"raised\": %s, \"how\": \"%s\"",
		trace_rel(t, w->time_ns), w->observer ? "true" : "false",
		w->raised ? "true" : "false",
		fwoom_from_history(w)		 ? (w->blocks ? "history-blocks" : "history")
		: r && r->how >= 0 && r->how < 4 ? how[r->how]
						 : "?");
	fprintf(f, ", \"caught\": %s, \"message_form\": \"%s\", \"message\": ",
		w->caught ? "true" : "false", fwmsg_form_name[w->msg.form]);
	cli_json_s(f, w->raised ? w->raised->message : "");
	fputs(",\n      \"figures\": {\"", f);
	fputs("unit\": \"bytes\"", f);
	size_json(f, "request_bytes", &w->request);
	size_json(f, "total_bytes", &w->total);
	size_json(f, "free_bytes", &w->free_bytes);
	size_json(f, "in_use_bytes", &w->in_use);
	size_json(f, "pool_bytes", &w->pool);
	size_json(f, "pool_free_bytes", &w->pool_free);
	size_json(f, "largest_free_block_bytes", &w->largest_free);
	size_json(f, "this_process_bytes", &w->self);
	size_json(f, "other_processes_bytes", &w->others);
	size_json(f, "limit_bytes", &w->limit.bytes);
	fputs(", \"limit\": ", f);
	if (w->limit.bytes.known)
		cli_json_s(f, w->limit.what);
	else
		fputs("null", f);
	fputs("}}", f);
}

static void oom_json(FILE *f, struct trace *t, const struct oom_failure *o, bool first)
{
	char site[512];
	const struct gmt_event *e = &o->e;
	fprintf(f, "%s\n    {\"time_ns\": %" PRId64 ", \"api\": ", first ? "" : ",",
		trace_rel(t, e->time_ns));
	if (o->fw_only) /* no call failed: the framework raised it */
		fprintf(f,
			"null, \"device\": %" PRId64 ", \"size\": %" PRIu64
			", \"result\": null, \"result_name\": null",
			e->device, e->size);
	else {
		cli_json_s(f, api_name(e->api));
		fprintf(f,
			", \"device\": %" PRId64 ", \"size\": %" PRIu64 ", \"result\": %" PRIu64
			", \"result_name\": ",
			e->device, e->size, e->result);
		cli_json_s(f, result_name(e->api, e->result));
	}
	fprintf(f, ", \"tid\": %" PRIu64 ", \"stack_id\": %" PRIu64 ", \"site\": ", e->tid,
		e->stack_id);
	cli_json_s(f, rb_site(t, e->stack_id, site, sizeof(site)));
	fprintf(f,
		",\n     \"error\": %" PRIu32 ", \"attempt\": %" PRIu32 ", \"attempts\": %" PRIu32
		", \"case\": ",
		o->error, o->attempt, o->attempts);
	cli_json_s(f, oom_case_name[o->kase]);
	fprintf(f, ", \"caught\": %s, \"explanation\": ", o->caught ? "true" : "false");
	cli_json_s(f, o->why);
	figures_json(f, t, o);
	if (o->fw)
		fw_json(f, t, o->fw);
	else
		fputs(",\n     \"framework\": null", f);
	fputs(",\n     \"by_library\": [", f);
	for (size_t i = 0; i < o->nlibs; i++) {
		fputs(i ? ", {\"library\": " : "{\"library\": ", f);
		cli_json_s(f, o->libs[i].name);
		fprintf(f, ", \"bytes\": %" PRIu64 ", \"allocations\": %" PRIu64 "}",
			o->libs[i].bytes, o->libs[i].count);
	}
	fputs("],\n     \"top_sites\": [", f);
	for (size_t i = 0; i < o->nsites; i++) {
		fprintf(f, "%s{\"stack_id\": %" PRIu64 ", \"site\": ", i ? ", " : "",
			o->sites[i].stack_id);
		cli_json_s(f, rb_site(t, o->sites[i].stack_id, site, sizeof(site)));
		fprintf(f, ", \"bytes\": %" PRIu64 ", \"allocations\": %" PRIu64 "}",
			o->sites[i].bytes, o->sites[i].count);
	}
	fputs("]}", f);
}

static void trace_json(FILE *f, struct trace *t, const struct oom_result *r, bool first)
{
	fprintf(f, "%s\n  {", first ? "" : ",");
	cli_json_head(f, t);
	fputs(", \"verdict\": ", f);
	cli_json_s(f, r->verdict);
	fprintf(f,
		", \"meminfo_records\": %zu, \"failed_allocations_total\": %" PRIu64
		", \"ooms_total\": %" PRIu64 ", \"oom_calls_total\": %" PRIu64
		", \"framework_errors_total\": %" PRIu64 ", \"framework_only_total\": %" PRIu64
		",\n   \"end\": {\"how\": \"%s\", "
		"\"exit_status\": ",
		t->nmeminfo, r->fails_total, r->ooms_total, r->oom_calls_total, r->fw.total,
		r->fw_only_total,
		r->end == OOM_END_OK	       ? "exit"
		: r->end == OOM_END_STATUS     ? "abnormal"
		: r->end == OOM_END_NO_TRAILER ? "no-trailer"
					       : "unknown");
	if (r->end == OOM_END_OK || r->end == OOM_END_STATUS)
		fprintf(f, "%" PRId64, r->exit_status);
	else
		fputs("null", f);
	fputs(", \"text\": ", f);
	cli_json_s(f, r->ending);
	fputs("}, \"hidden\": ", f);
	if (r->hidden) {
		fputs("{\"framework\": ", f);
		cli_json_s(f, r->pool_fw);
		fputs(", \"text\": ", f);
		cli_json_s(f, r->hidden_text);
		fputc('}', f);
	} else {
		fputs("null", f);
	}
	fputs(",\n   \"cases\": {", f);
	for (int c = 0; c < OOM_NCASES; c++)
		fprintf(f, "%s\"%s\": %" PRIu64, c ? ", " : "", oom_case_name[c], r->cases[c]);
	fputs("},\n   \"invisible\": [", f);
	for (size_t k = 0; k < r->nblind; k++) {
		fprintf(f,
			"%s{\"case\": \"invisible\", \"reason\": \"%s\", \"text\": ", k ? ", " : "",
			r->blind[k].key);
		cli_json_s(f, r->blind[k].text);
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
		cli_json_s(f, api_name(y->api));
		fprintf(f, ", \"result\": %" PRIu64 ", \"result_name\": ", y->result);
		cli_json_s(f, result_name(y->api, y->result));
		fprintf(f, ", \"count\": %" PRIu64 ", \"first_time_ns\": %" PRId64 "}", y->count,
			trace_rel(t, y->first_time));
	}
	fputs("]}", f);
}

/* The framework's error: what it was, whether it reached the top, its
 * message's first line and the figures it gave. */
static void fw_human(FILE *f, struct trace *t, const struct fwoom *w, int width)
{
	char line[900], b[6][32];
	const char *msg = w->raised ? w->raised->message : "";
	size_t n = strcspn(msg, "\n");
	snprintf(line, sizeof(line), "framework: %s%s%s, %s%s%.*s%s", fwoom_fw_name(w),
		 w->type[0] ? " " : "", w->type[0] ? w->type : " out-of-memory error",
		 w->raised ? "raised to the top of a thread"
		 : fwoom_from_history(w)
		     ? (w->caught ? "an oom entry of the allocator's history, which goes on after "
				    "it: the program caught it"
				  : "an oom entry of the allocator's history, which ends in it: "
				    "the run stopped there (or dumped its snapshot on it)")
		 : w->caught ? "seen by its observer only: the program caught it and went on"
			     : "seen by its observer only, and the process ended badly after it",
		 n ? ": " : "", (int)(n < 200 ? n : 200), msg, n > 200 ? "..." : "");
	cli_wrap(f, 2, width, line);
	size_t len =
	    (size_t)snprintf(line, sizeof(line), "its figures%s:",
			     w->blocks ? " (the cache: the blocks of the snapshot taken at "
					 "the OOM)"
				       : "");
	const struct {
		const char *label;
		const struct fw_size *s;
	} figs[] = {{"asked", &w->request},
		    {"device total", &w->total},
		    {"device free", &w->free_bytes},
		    {"in use", &w->in_use},
		    {"pool", &w->pool},
		    {"free inside", &w->pool_free},
		    {"largest free block", &w->largest_free},
		    {"limit", &w->limit.bytes}};
	int k = 0;
	for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]) && len < sizeof(line) - 64; i++)
		if (figs[i].s->known)
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s %s %s",
						k++ ? "," : "", figs[i].label,
						fmt_size(b[0], figs[i].s->bytes));
	if (w->limit.bytes.known && len < sizeof(line) - 140)
		snprintf(line + len, sizeof(line) - len, " (%s)", w->limit.what);
	if (k)
		cli_wrap(f, 2, width, line);
	(void)t;
}

/* An error of several failed calls: the allocator's retries of one request. */
static void attempts_human(FILE *f, struct trace *t, const struct oom_failure *o, int width)
{
	char line[700], b1[32], b2[32], b3[32], freed[96] = "";
	if (o->retry_freed_count)
		snprintf(freed, sizeof(freed), " after freeing %" PRIu64 " allocation%s (%s)",
			 o->retry_freed_count, o->retry_freed_count == 1 ? "" : "s",
			 fmt_size(b3, o->retry_freed));
	bool same = o->e.size == o->first_size;
	snprintf(line, sizeof(line),
		 "one error in %" PRIu32 " failed calls, the first at %s (%s): the allocator "
		 "asked again%s%s (%s); judged on this last call, the one the program's "
		 "exception reports",
		 o->attempts, rb_time(b1, trace_rel(t, o->first_ns)), fmt_size(b2, o->first_size),
		 freed, same ? " for the same size" : " for less",
		 same ? "PyTorch frees its unsplit cached segments and retries, frameworks.md "
			"§1.4; CuPy frees its pool's blocks and retries, §3"
		      : "BFC backs off by 0.9x and retries for up to 10 s, frameworks.md §2.4, "
			"§2.6");
	cli_wrap(f, 2, width, line);
}

static void oom_human(FILE *f, struct trace *t, const struct oom_failure *o, const char *next)
{
	char b1[32], b2[32], b3[32], site[512], ot[120];
	const struct gmt_event *e = &o->e;
	const char *rn = result_name(e->api, e->result);
	char cut[512];
	int width = cli_text_width(f);
	if (o->fw_only) {
		fputc('\n', f);
		cli_wrapf(f, 4,
			  "%s  %s raised an out-of-memory error for %s on device %" PRId64
			  " (no driver call failed)",
			  rb_time(b1, trace_rel(t, e->time_ns)), fwoom_fw_name(o->fw),
			  fmt_size(b2, e->size), e->device);
	} else {
		fputc('\n', f);
		cli_wrapf(f, 4, "%s  %s of %s on device %" PRId64 " failed: %s",
			  rb_time(b1, trace_rel(t, e->time_ns)),
			  api_name(site_api(t, e->stack_id, e->api)), fmt_size(b2, e->size),
			  e->device, rn ? rn : "?");
		fprintf(f, "  site: %s\n",
			cli_fit(rb_site(t, e->stack_id, site, sizeof(site)), width - 8, cut,
				sizeof(cut)));
	}
	if (o->attempts > 1)
		attempts_human(f, t, o, width);
	if (o->fw)
		fw_human(f, t, o->fw, width);
	if (o->device) {
		if (o->mi)
			fprintf(f, "  device memory then: %s free of %s (cuMemGetInfo at %s)\n",
				fmt_size(b1, o->mi->free_bytes), fmt_size(b2, o->mi->total_bytes),
				rb_time(b3, trace_rel(t, o->mi->time_ns)));
		else if (o->free_known && o->sample)
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
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "; %s",
				 oom_others_text(ot, sizeof(ot), o->others));
		cli_wrap(f, 2, width, line);
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
				cli_fit(rb_site(t, o->sites[i].stack_id, site, sizeof(site)),
					width - 24, cut, sizeof(cut)));
	}
	char line[800];
	snprintf(line, sizeof(line), "case: %s%s: %s", oom_case_name[o->kase],
		 o->caught ? " (caught)" : "", o->why);
	cli_wrap(f, 2, width, line);
	if (next && o->kase == OOM_THIS_PROCESS && !o->fw) /* its own figures decided it */
		cli_wrap(f, 2, width, next);
}

static void trace_human(FILE *f, struct trace *t, const struct oom_result *r, bool first)
{
	char b1[32];
	if (!first)
		fputc('\n', f);
	cli_human_head(f, t);
	if (!r->fails_total && !r->fw_only_total) {
		fprintf(f, "  no allocation failed\n");
	} else if (!r->fails_total) {
		cli_wrapf(f, 4,
			  "  no allocation call failed; the framework raised %" PRIu64
			  " out-of-memory error%s without one",
			  r->fw_only_total, r->fw_only_total == 1 ? "" : "s");
	} else {
		uint64_t errs = 0;
		for (int c = 0; c < OOM_NCASES; c++)
			errs += r->cases[c];
		char line[600];
		size_t o =
		    (size_t)snprintf(line, sizeof(line), "  %" PRIu64 " allocation call%s failed",
				     r->fails_total, r->fails_total == 1 ? "" : "s");
		if (errs < r->fails_total && o < sizeof(line)) /* retried calls: one error each */
			o += (size_t)snprintf(line + o, sizeof(line) - o,
					      ", as %" PRIu64
					      " error%s (an allocator's retries of one "
					      "request are one error)",
					      errs, errs == 1 ? "" : "s");
		if (o < sizeof(line))
			o += (size_t)snprintf(line + o, sizeof(line) - o, ":");
		for (int c = 0, n = 0; c < OOM_NCASES && o < sizeof(line); c++)
			if (r->cases[c])
				o += (size_t)snprintf(line + o, sizeof(line) - o,
						      "%s %" PRIu64 " %s", n++ ? "," : "",
						      r->cases[c], oom_case_name[c]);
		cli_wrapf(f, 4, "%s", line);
	}
	if (r->hidden) { /* in place of "verdict: none": what the trace cannot show */
		char line[900];
		snprintf(line, sizeof(line), "verdict: oom-hidden: %s", r->hidden_text);
		cli_wrap(f, 2, cli_text_width(f), line);
	} else {
		fprintf(f, "  verdict: %s\n", r->verdict);
	}
	if (r->end != OOM_END_UNKNOWN)
		fprintf(f, "  the process ended: %s\n", r->ending);
	for (size_t k = 0; k < r->nblind; k++) {
		char line[700];
		snprintf(line, sizeof(line), "not visible here: %s", r->blind[k].text);
		cli_wrap(f, 2, cli_text_width(f), line);
	}
	/* one block per error (its last attempt) and per other failure */
	size_t show = 0, end = 0;
	uint64_t listed = 0;
	for (; end < r->nfails && show < HUMAN_OOMS; end++)
		show += oom_final(&r->fails[end]);
	for (size_t k = 0; k < r->nfails; k++)
		listed += oom_final(&r->fails[k]);
	/* this process's own memory under a cache: what to do, from its mode */
	char nb[600];
	const char *next = NULL;
	for (size_t k = 0; k < end && !next; k++) {
		struct ex_recog rec;
		if (r->fails[k].kase != OOM_THIS_PROCESS)
			continue;
		if (explain_allocator(t, false, 0, &rec) < 0)
			next = explain_oom_next(&rec, nb, sizeof(nb));
		break;
	}
	for (size_t k = 0; k < end; k++)
		if (oom_final(&r->fails[k]))
			oom_human(f, t, &r->fails[k], next);
	uint64_t all = listed + (r->fails_total + r->fw_only_total - r->nfails);
	if (all > show)
		fprintf(f, "\n  ... %" PRIu64 " more (--json details up to %d calls)\n", all - show,
			OOM_MAX);
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
	int rc = cli_parse_open(&usage, opts, argc, argv, &opt, &sa, &ts);
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
		cli_json_s(f, verdict);
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
