/* The reconciliation as text and JSON (cli/accounting-print.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/accounting-print.h"
#include "cli/report-print.h"

static const char *reason_name(int r)
{
	static const char *const names[] = {"periodic", "peak", "oom", "start", "end"};
	return r >= 0 && r < 5 ? names[r] : "other";
}

/* "1.50 GiB" or "-200 MiB". */
static const char *fmt_signed(char *buf, int64_t v)
{
	char b[32];
	snprintf(buf, 40, "%s%s", v < 0 ? "-" : "",
		 fmt_size(b, v < 0 ? -(uint64_t)v : (uint64_t)v));
	return buf;
}

static bool dev_shown(const struct acct_dev *d, int64_t only)
{
	return only < 0 || d->ordinal == only;
}

static const char *ctx_text(const struct acct_dev *d, const struct acct_moment *m, char *buf)
{
	char b[32];
	if (!d->ctx_events)
		snprintf(buf, 96, "not traced");
	else if (m->contexts_unmeasured && !m->contexts)
		snprintf(buf, 96, "unmeasured (%" PRIu64 " live)", m->contexts_unmeasured);
	else if (m->contexts_unmeasured)
		snprintf(buf, 96, "%s + %" PRIu64 " unmeasured", fmt_size(b, m->contexts),
			 m->contexts_unmeasured);
	else
		snprintf(buf, 96, "%s", fmt_size(b, m->contexts));
	return buf;
}

static const char *unexplained_text(const struct acct_moment *m, char *buf)
{
	char b[48];
	if (!m->nvml) {
		snprintf(buf, 96, "-");
		return buf;
	}
	if (m->smi)
		snprintf(buf, 96, "%s (%.1f%%)%s", fmt_signed(b, m->unexplained),
			 100.0 * (double)m->unexplained / (double)m->smi,
			 m->flagged ? " LARGE" : "");
	else
		snprintf(buf, 96, "%s", fmt_signed(b, m->unexplained));
	return buf;
}

/* A row of the table: a label, then the peak's and the end's values, in
 * 80 columns; a value wider than its column takes from the label's
 * padding. */
static void acct_row(FILE *f, const char *label, const char *peak, const char *end)
{
	int over = 0, lw = (int)strlen(label);
	over += (int)strlen(peak) > 21 ? (int)strlen(peak) - 21 : 0;
	over += (int)strlen(end) > 21 ? (int)strlen(end) - 21 : 0;
	int pad = 34 - over < lw ? lw : 34 - over;
	if (pad > 34)
		pad = 34;
	fprintf(f, "  %-*.*s %21s %21s\n", pad, 34, label, peak, end);
}

/* A device whose NVML figures are not nvidia-smi's (acct_nvml_inconsistent). */
static void nvml_dropped_line(FILE *f, const struct acct_dev *d, int indent)
{
	char line[400], b1[32], b2[32];
	if (!d->peak.nvml_dropped)
		return;
	snprintf(line, sizeof(line),
		 "(NVML reported %s %s on a device of %s: more than the device has, so none of "
		 "its figures is nvidia-smi's and none is used, here, in oom and in check "
		 "--max-smi)",
		 fmt_size(b1, d->peak.nvml_dropped),
		 d->peak.nvml_process ? "for this process" : "in use", fmt_size(b2, d->total));
	cli_wrap(f, indent, cli_text_width(f), line);
}

/* The device line, the moments' times, nvidia-smi's figures and the samples used. */
static void print_dev_nvml(FILE *f, struct trace *t, const struct acct_dev *d)
{
	const struct acct_moment *pk = &d->peak, *en = &d->end;
	char b3[32];
	fprintf(f, "\ndevice %" PRId64, d->ordinal);
	if (d->name[0] || d->total)
		fprintf(f, " (%s%s%s)", d->name[0] ? d->name : "?", d->total ? ", " : "",
			d->total ? fmt_size(b3, d->total) : "");
	fputc('\n', f);
	char h1[48], h2[48];
	snprintf(h1, sizeof(h1), "at the peak %s",
		 pk->have ? trace_fmt_time(b3, trace_rel(t, pk->time_ns)) : "-");
	snprintf(h2, sizeof(h2), "at the end %s", trace_fmt_time(b3, trace_rel(t, en->time_ns)));
	acct_row(f, "", h1, h2);
	const struct acct_moment *ms[2] = {pk, en};
	char v[2][96];
	for (int k = 0; k < 2; k++)
		if (ms[k]->nvml)
			snprintf(v[k], 96, "%s", fmt_size(b3, ms[k]->smi));
		else
			snprintf(v[k], 96, "%s",
				 ms[k]->nvml_dropped ? "not used"
				 : ms[k]->unsampled  ? "unsampled"
						     : "-");
	acct_row(f,
		 pk->nvml && !pk->nvml_process ? "nvidia-smi (whole device)"
					       : "nvidia-smi (this process)",
		 v[0], v[1]);
	for (int k = 0; k < 2; k++)
		if (ms[k]->nvml)
			snprintf(v[k], 96, "%s %s", reason_name(ms[k]->sample_reason),
				 trace_fmt_time(b3, trace_rel(t, ms[k]->sample_time_ns)));
		else
			snprintf(v[k], 96, "-");
	acct_row(f, "  sample used", v[0], v[1]);
	if (pk->unsampled)
		cli_wrapf(f, 3,
			  "  (no NVML reading was taken while memory was at its peak (within 5%%): "
			  "that lasted less than the sampling period; GPUMEMTRACE_SAMPLE_MS lower "
			  "catches it)");
	nvml_dropped_line(f, d, 2);
}

/* The traced bytes, by kind and by library: those at the peak, then those
 * only at the end. */
static void print_dev_traced(FILE *f, const struct acct_dev *d)
{
	const struct acct_moment *pk = &d->peak, *en = &d->end;
	char b1[96], b2[96];
	acct_row(f, "traced allocations", fmt_size(b1, pk->traced), fmt_size(b2, en->traced));
	static const char *const kl[3] = {"  device (cudaMalloc, cuMemAlloc)",
					  "  stream-ordered (cudaMallocAsync)",
					  "  mapped memory (cuMemCreate)"};
	uint64_t kp[3] = {pk->device, pk->async, pk->vmm}, ke[3] = {en->device, en->async, en->vmm};
	for (int k = 0; k < 3; k++)
		if (kp[k] || ke[k])
			acct_row(f, kl[k], fmt_size(b1, kp[k]), fmt_size(b2, ke[k]));
	for (int pass = 0; pass < 2; pass++) {
		const struct acct_moment *m = pass ? en : pk, *o = pass ? pk : en;
		for (size_t k = 0; k < m->nlibs; k++) {
			uint64_t other = 0;
			bool in_other = false;
			for (size_t j = 0; j < o->nlibs; j++)
				if (strcmp(o->libs[j].library, m->libs[k].library) == 0) {
					other = o->libs[j].bytes;
					in_other = true;
				}
			if (pass && in_other)
				continue;
			char lab[64];
			snprintf(lab, sizeof(lab), "  from %s", m->libs[k].library);
			acct_row(f, lab, fmt_size(b1, pass ? other : m->libs[k].bytes),
				 fmt_size(b2, pass ? m->libs[k].bytes : other));
		}
	}
}

/* The framework's cache from its own counters: tensors and free space. */
static void print_dev_cache(FILE *f, const struct trace *t, const struct acct_dev *d)
{
	const struct acct_cache *pc = &d->peak.cache, *ec = &d->end.cache;
	const struct acct_cache *c = pc->known ? pc : ec;
	if (!c->known)
		return;
	char b1[96], b2[96];
	cli_wrapf(f, 4, "  framework's own counters: %s on %s (the readings nearest: %s, %s)",
		  c->api, c->device_name,
		  pc->known ? trace_fmt_time(b1, trace_rel(t, pc->time_ns)) : "-",
		  ec->known ? trace_fmt_time(b2, trace_rel(t, ec->time_ns)) : "-");
	if (c->has_reserved)
		acct_row(f, "  cache (reserved from the driver)",
			 pc->known ? fmt_size(b1, pc->reserved) : "-",
			 ec->known ? fmt_size(b2, ec->reserved) : "-");
	acct_row(f, "    tensors (allocated)", pc->known ? fmt_size(b1, pc->allocated) : "-",
		 ec->known ? fmt_size(b2, ec->allocated) : "-");
	if (c->has_reserved)
		acct_row(f, "    free in the cache",
			 pc->known ? fmt_size(b1, acct_cache_free(pc)) : "-",
			 ec->known ? fmt_size(b2, acct_cache_free(ec)) : "-");
	else
		cli_wrapf(f, 3,
			  "  (%s does not say what its cache holds: free space in it "
			  "is not known)",
			  c->api);
}

/* Contexts, the unexplained rest, the notes on it and its likely routes. */
/* A route's evidence lists libraries: prose, wrapped to the width. */
static void evidence(FILE *f, int width, const char *text)
{
	char *line = NULL;
	if (asprintf(&line, "evidence: %s", text) < 0)
		xalloc_failed();
	cli_wrap(f, 6, width, line);
	free(line);
}

static void print_dev_unexplained(FILE *f, const struct acct_dev *d)
{
	const struct acct_moment *pk = &d->peak, *en = &d->end;
	char b1[96], b2[96], b3[32];
	acct_row(f, "CUDA contexts + module code", ctx_text(d, pk, b1), ctx_text(d, en, b2));
	acct_row(f, "unexplained", unexplained_text(pk, b1), unexplained_text(en, b2));
	if (!pk->nvml && !en->nvml)
		cli_wrapf(f, 3, "  (no NVML sample for this device: nothing to reconcile)");
	if (!d->ctx_events)
		cli_wrapf(f, 4,
			  "  note: no context creation was traced on this device: the "
			  "unexplained share includes the context");
	else if (d->ctx_measured < d->ctx_events)
		cli_wrapf(f, 4,
			  "  note: %" PRIu64 " of %" PRIu64
			  " context creations were not measured (NVML missing then): their "
			  "cost is in the unexplained share",
			  d->ctx_events - d->ctx_measured, d->ctx_events);
	if ((pk->nvml && pk->unexplained < -(int64_t)ACCT_FLAG_BYTES) ||
	    (en->nvml && en->unexplained < -(int64_t)ACCT_FLAG_BYTES))
		cli_wrapf(f, 4,
			  "  negative: the trace holds more than nvidia-smi showed: the "
			  "sample lags the allocations, or memory was freed but the free "
			  "was not traced");
	if (!d->nroutes)
		return;
	const struct acct_moment *m = pk->flagged ? pk : en;
	int width = cli_text_width(f);
	cli_wrapf(f, 4, "  %s unexplained %s: likely %s", fmt_size(b3, (uint64_t)m->unexplained),
		  m == pk ? "at the peak" : "at the end", d->routes[0].text);
	evidence(f, width, d->routes[0].evidence);
	for (size_t k = 1; k < d->nroutes; k++) {
		cli_wrapf(f, 6, "    also possible: %s", d->routes[k].text);
		evidence(f, width, d->routes[k].evidence);
	}
}

void acct_print(FILE *f, const struct acct *a, int64_t only)
{
	if (a->nvml_why)
		cli_wrapf(f, 4, "  no nvidia-smi figures: %s; the traced figures follow",
			  a->nvml_why);
	bool any = false;
	for (size_t i = 0; i < a->ndevs; i++) {
		const struct acct_dev *d = &a->devs[i];
		if (!dev_shown(d, only))
			continue;
		any = true;
		print_dev_nvml(f, a->t, d);
		print_dev_traced(f, d);
		print_dev_cache(f, a->t, d);
		print_dev_unexplained(f, d);
	}
	if (!any)
		fprintf(f, "\n  no device memory was traced\n");
}

void acct_print_brief(FILE *f, const struct acct *a)
{
	char b[5][96];
	if (a->nvml_why) {
		if (a->t->nvml_missing)
			fprintf(
			    f,
			    "\nnvidia-smi reconciliation: NVML was not available (see gpumemtrace "
			    "accounting)\n");
		return;
	}
	fprintf(f, "\nnvidia-smi reconciliation (gpumemtrace accounting has the details)\n");
	fprintf(f, "  %-3s %-4s %10s %10s %22s %24s\n", "dev", "when", "nvidia-smi", "traced",
		"contexts", "unexplained");
	for (size_t i = 0; i < a->ndevs; i++) {
		const struct acct_dev *d = &a->devs[i];
		const struct acct_moment *ms[2] = {&d->peak, &d->end};
		for (int k = 0; k < 2; k++) {
			const struct acct_moment *m = ms[k];
			fprintf(f, "  %-3" PRId64 " %-4s %10s %10s %22s %24s\n", d->ordinal,
				k ? "end" : "peak",
				m->nvml		  ? fmt_size(b[0], m->smi)
				: m->nvml_dropped ? "not used"
				: m->unsampled	  ? "unsampled"
						  : "-",
				fmt_size(b[1], m->traced), ctx_text(d, m, b[2]),
				unexplained_text(m, b[3]));
		}
		if (d->nroutes)
			cli_wrapf(f, 10, "      likely: %s", d->routes[0].text);
		nvml_dropped_line(f, d, 7);
	}
}

static void json_moment(FILE *f, const struct acct_dev *d, const struct acct_moment *m,
			const struct trace *t)
{
	fprintf(f, "{\"time_ns\": %" PRId64 ", \"nvidia_smi_bytes\": ", trace_rel(t, m->time_ns));
	if (m->nvml)
		fprintf(f,
			"%" PRIu64 ", \"nvml_scope\": \"%s\", \"sample_time_ns\": %" PRId64
			", \"sample_reason\": \"%s\"",
			m->smi, m->nvml_process ? "process" : "device",
			trace_rel(t, m->sample_time_ns), reason_name(m->sample_reason));
	else
		fputs(
		    "null, \"nvml_scope\": null, \"sample_time_ns\": null, \"sample_reason\": null",
		    f);
	fprintf(f, ", \"unsampled\": %s", m->unsampled ? "true" : "false");
	if (m->nvml_dropped) /* only then: other outputs stay as they were */
		fprintf(f, ", \"nvml_inconsistent_bytes\": %" PRIu64, m->nvml_dropped);
	fprintf(f,
		",\n     \"traced_bytes\": %" PRIu64 ", \"by_kind\": {\"device\": %" PRIu64
		", \"stream_ordered\": %" PRIu64 ", \"vmm_physical\": %" PRIu64
		"}, \"by_library\": [",
		m->traced, m->device, m->async, m->vmm);
	for (size_t k = 0; k < m->nlibs; k++) {
		fprintf(f, "%s{\"library\": ", k ? ", " : "");
		json_str(f, m->libs[k].library, strlen(m->libs[k].library));
		fprintf(f, ", \"bytes\": %" PRIu64 ", \"allocations\": %" PRIu64 "}",
			m->libs[k].bytes, m->libs[k].count);
	}
	fprintf(f,
		"],\n     \"context_bytes\": %" PRIu64 ", \"contexts_live\": %" PRIu64
		", \"contexts_unmeasured\": %" PRIu64 ", \"contexts_traced\": %s"
		", \"rounding_bytes\": %" PRIu64 ", \"unexplained_bytes\": ",
		m->contexts, m->contexts_live, m->contexts_unmeasured,
		d->ctx_events ? "true" : "false", m->rounding);
	if (m->nvml)
		fprintf(f, "%" PRId64 ", \"unexplained_share\": %.4f", m->unexplained,
			m->smi ? (double)m->unexplained / (double)m->smi : 0.0);
	else
		fputs("null, \"unexplained_share\": null", f);
	fprintf(f, ", \"flagged\": %s", m->flagged ? "true" : "false");
	const struct acct_cache *c = &m->cache;
	if (c->known) { /* only in traces with counters: older outputs stay as they were */
		fprintf(f, ",\n     \"framework_cache\": {\"source\": ");
		json_cstr(f, c->api);
		fputs(", \"device\": ", f);
		json_cstr(f, c->device_name);
		fprintf(f, ", \"reading_time_ns\": %" PRId64 ", \"allocated_bytes\": %" PRIu64,
			trace_rel(t, c->time_ns), c->allocated);
		if (c->has_reserved)
			fprintf(f,
				", \"reserved_bytes\": %" PRIu64 ", \"free_bytes\": %" PRIu64 "}",
				c->reserved, acct_cache_free(c));
		else
			fputs(", \"reserved_bytes\": null, \"free_bytes\": null}", f);
	}
	fputc('}', f);
}

void acct_print_json(FILE *f, const struct acct *a, int64_t only)
{
	const struct trace *t = a->t;
	fprintf(f,
		"{\"nvml\": {\"available\": %s, \"samples\": %zu, \"missing_note\": %s, \"why\": ",
		a->nvml_why ? "false" : "true", t->nsamples, t->nvml_missing ? "true" : "false");
	if (a->nvml_why)
		json_str(f, a->nvml_why, strlen(a->nvml_why));
	else
		fputs("null", f);
	fprintf(f, "}, \"flag_share\": %.2f, \"flag_bytes\": %llu, \"devices\": [", ACCT_FLAG_SHARE,
		ACCT_FLAG_BYTES);
	bool first = true;
	for (size_t i = 0; i < a->ndevs; i++) {
		const struct acct_dev *d = &a->devs[i];
		if (!dev_shown(d, only))
			continue;
		fprintf(f, "%s\n   {\"index\": %" PRId64 ", \"name\": ", first ? "" : ",",
			d->ordinal);
		first = false;
		json_str(f, d->name, strlen(d->name));
		fprintf(f,
			", \"total_bytes\": %" PRIu64
			", \"samples\": %zu, \"context_creations\": %" PRIu64
			", \"context_creations_measured\": %" PRIu64 ",\n    \"at_peak\": ",
			d->total, d->nsamples, d->ctx_events, d->ctx_measured);
		json_moment(f, d, &d->peak, t);
		fputs(",\n    \"at_end\": ", f);
		json_moment(f, d, &d->end, t);
		fputs(",\n    \"likely_routes\": [", f);
		for (size_t k = 0; k < d->nroutes; k++) {
			fprintf(f, "%s{\"route\": \"%s\", \"text\": ", k ? ", " : "",
				d->routes[k].key);
			json_str(f, d->routes[k].text, strlen(d->routes[k].text));
			fputs(", \"evidence\": ", f);
			json_str(f, d->routes[k].evidence, strlen(d->routes[k].evidence));
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("]}", f);
}
