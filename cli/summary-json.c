/* summary --json: the keys are documented in docs/cli.md. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/report-print.h"
#include "analysis/fwhist.h"
#include "cli/summary.h"
#include "cli/accounting-print.h"

static const char *json_bool(bool b)
{
	return b ? "true" : "false";
}

static void json_level(FILE *f, const struct summary *s, const struct rp_level *lv)
{
	fprintf(f,
		"\"peak_bytes\": %" PRIu64 ", \"peak_time_ns\": %" PRId64
		", \"live_bytes_at_end\": %" PRIu64 ", \"live_allocations_at_end\": %" PRIu64,
		lv->peak, lv->peak_seq ? summary_rel(s, lv->peak_time_ns) : 0, lv->bytes,
		lv->count);
}

static void json_kinds(FILE *f, const uint64_t *kinds)
{
	fputc('{', f);
	for (size_t k = 0; k < NKINDS; k++)
		fprintf(f, "%s\"%s\": %" PRIu64, k ? ", " : "", summary_kinds[k].key,
			kinds[summary_kinds[k].kind]);
	fputc('}', f);
}

/* The read, the process and the event counts. */
static void json_head(FILE *f, const struct summary *s, const struct gmt_read_info *in)
{
	const struct trace *t = &s->t;
	fprintf(f,
		"{\"format_version\": %u, \"complete\": %s, \"torn_tail\": %s, \"corrupt\": %s, "
		"\"unreadable_bytes\": %" PRIu64 ",\n",
		(unsigned)s->hdr->version, json_bool(in->complete),
		json_bool(in->stop == GMT_STOP_TORN), json_bool(in->stop == GMT_STOP_CORRUPT),
		in->unreadable);
	if (in->damage) {
		char why[256];
		fprintf(f, " \"damaged\": ");
		json_cstr0(f, gmt_read_damage_text(in, why, sizeof(why)));
		fputs(",\n", f);
	}
	fprintf(f, " \"path\": ");
	json_cstr0(f, s->path);
	fputs(", \"rank\": ", f);
	if (trace_rank(t) >= 0)
		fprintf(f, "%" PRId64, trace_rank(t));
	else
		fputs("null", f);
	fprintf(f, ", \"process\": {\"pid\": %" PRIu64 ", \"ppid\": %" PRIu64 ", \"command\": ",
		t->has_process ? t->pid : (uint64_t)s->hdr->pid, t->ppid);
	json_cstr0(f, t->command ? t->command : "");
	fputs(", \"exe\": ", f);
	json_cstr0(f, t->exe ? t->exe : "");
	fputs(", \"hostname\": ", f);
	json_cstr0(f, t->host ? t->host : "");
	fprintf(f, "},\n \"start_wall_ns\": %" PRIu64 ", \"duration_ns\": %" PRId64 ",\n",
		s->hdr->start_wall_ns, trace_duration_ns(t));
	fprintf(f,
		" \"events\": %" PRIu64 ", \"lost_events\": %" PRIu64
		", \"lost_in_records\": %" PRIu64 ", \"lost_in_trailer\": %" PRIu64
		", \"unmatched_frees\": %" PRIu64 ",\n",
		t->events, t->lost, t->lost_in_records, t->trailer_lost, s->rp.unmatched_frees);
}

static void json_site(FILE *f, struct summary *s, const struct summary_site *st, bool first)
{
	const struct trace_frame *fr = &st->frame;
	fprintf(f,
		"%s\n    {\"stack_id\": %" PRIu64 ", \"bytes\": %" PRIu64
		", \"allocations\": %" PRIu64,
		first ? "" : ",", st->stack_id, st->bytes, st->count);
	if (st->has_frame) {
		fprintf(f, ", \"address\": %" PRIu64 ", \"function\": ", fr->ip);
		json_cstr0(f, fr->function ? fr->function : "");
		fputs(", \"file\": ", f);
		json_cstr0(f, fr->file ? fr->file : "");
		fprintf(f, ", \"line\": %" PRIu64 ", \"module\": ", fr->line);
		json_cstr0(f, fr->module ? fr->module->path : "");
		fprintf(f, ", \"module_offset\": %" PRIu64 ", \"in_cuda_libraries\": %s",
			fr->module ? fr->ip - fr->module->bias : 0, json_bool(fr->in_cuda));
	}
	fputs(", \"library\": ", f);
	json_cstr0(f, trace_library(&s->t, st->stack_id));
	if (st->stack_id)
		cli_json_stack(f, &s->t, st->stack_id);
	fputc('}', f);
}

static void json_device(FILE *f, struct summary *s, const struct summary_dev *d, bool first)
{
	fprintf(f, "%s\n  {\"index\": %" PRId64 ", \"name\": ", first ? "" : ",", d->ordinal);
	json_cstr0(f, d->name);
	fprintf(f, ", \"total_bytes\": %" PRIu64 ", ", d->total);
	json_level(f, s, &d->lv);
	fputs(",\n   \"by_kind_at_peak\": ", f);
	json_kinds(f, d->kind_peak);
	fputs(", \"by_kind_at_end\": ", f);
	json_kinds(f, d->kind_end);
	fputs(",\n   \"by_library\": [", f);
	for (size_t k = 0; k < d->nlibs; k++) {
		fprintf(f, "%s{\"library\": ", k ? ", " : "");
		json_cstr0(f, d->libs[k].library);
		fprintf(f, ", \"bytes\": %" PRIu64 ", \"allocations\": %" PRIu64 "}",
			d->libs[k].bytes, d->libs[k].count);
	}
	fprintf(f, "],\n   \"distinct_sites_at_peak\": %zu, \"peak_sites\": [", d->distinct_sites);
	for (size_t k = 0; k < d->nsites; k++)
		json_site(f, s, &d->sites[k], k == 0);
	fputs("]}", f);
}

static void json_calls(FILE *f, const struct summary *s)
{
	fputs("},\n \"calls\": {", f);
	struct summary_call *c, *ct;
	int first = 1;
	HASH_ITER(hh, s->calls, c, ct)
	{
		fprintf(f, "%s\n  ", first ? "" : ",");
		json_cstr0(f, api_name(c->api));
		fprintf(f,
			": {\"count\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"bytes\": %" PRIu64
			"}",
			c->count, c->failed, c->bytes);
		first = 0;
	}
}

static void json_failures(FILE *f, const struct summary *s)
{
	fprintf(f, "},\n \"failures_total\": %" PRIu64 ", \"failures\": [", s->nfailures);
	for (size_t i = 0; i < s->nfailures_kept; i++) {
		const struct summary_failure *x = &s->failures[i];
		const char *rn = summary_failure_result(x);
		fprintf(f, "%s\n  {\"time_ns\": %" PRId64 ", \"api\": ", i ? "," : "",
			summary_rel(s, x->time_ns));
		json_cstr0(f, api_name(x->api));
		fprintf(f,
			", \"device\": %" PRId64 ", \"size\": %" PRIu64 ", \"result\": %" PRIu64
			", \"result_name\": ",
			x->device, x->size, x->result);
		json_cstr0(f, rn ? rn : "");
		fputc('}', f);
	}
}

static void json_phases(FILE *f, struct summary *s)
{
	if (!s->has_phases) {
		fputs("null", f);
		return;
	}
	size_t n;
	struct phase **ps = summary_phases(s, &n);
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
		json_cstr0(f, ps[i]->name);
		fprintf(f,
			", \"allocations\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64
			", \"frees\": %" PRIu64 ", \"bytes_freed\": %" PRIu64
			", \"net_bytes\": %" PRId64 ", \"peak_bytes\": %" PRIu64
			", \"inherited_allocations\": %" PRIu64 ", \"inherited_bytes\": %" PRIu64
			"}",
			ps[i]->allocs, ps[i]->bytes_allocated, ps[i]->frees, ps[i]->bytes_freed,
			(int64_t)(ps[i]->bytes_allocated - ps[i]->bytes_freed), ps[i]->peak,
			ps[i]->inherited_allocs, ps[i]->inherited_bytes);
	}
	fputc(']', f);
	free(ps);
}

/* Ranges never closed in the trace (phase.h): each one's phase and opening. */
static void json_unclosed(FILE *f, struct summary *s)
{
	const struct phase_tracker *pt = &s->phases;
	if (!s->has_phases) {
		fputs("null", f);
		return;
	}
	fputc('[', f);
	for (size_t i = 0; i < pt->nunclosed; i++) {
		const struct trace_range *r = pt->unclosed[i].r;
		fprintf(f, "%s{\"name\": ", i ? ", " : "");
		json_cstr0(f, pt->unclosed[i].ph ? pt->unclosed[i].ph->name : r->text);
		fprintf(f, ", \"time_ns\": %" PRId64 ", \"tid\": %" PRIu64 "}",
			summary_rel(s, r->time_ns), (uint64_t)r->tid);
	}
	fputc(']', f);
}

/* The trailer and the tracer's notes, each only when there is one. */
/* Only in traces with counters: older outputs stay as they were. */
static void json_counters(FILE *f, const struct summary *s)
{
	const struct counters_set *cs = &s->counters;
	if (!cs->n)
		return;
	fputs(",\n \"framework_counters\": [", f);
	for (size_t i = 0; i < cs->n; i++) {
		const struct counters_series *c = &cs->s[i];
		fprintf(f, "%s\n  {\"source\": ", i ? "," : "");
		json_cstr0(f, c->source);
		fputs(", \"api\": ", f);
		json_cstr0(f, c->api);
		fputs(", \"device\": ", f);
		json_cstr0(f, c->device_name);
		fprintf(f,
			", \"ordinal\": %" PRId64 ", \"readings\": %zu, \"oom_readings\": %zu"
			", \"peak_allocated_bytes\": %" PRIu64,
			c->device, c->n, c->oom_readings, c->peak_allocated);
		if (c->has & CNT_RESERVED)
			fprintf(f,
				", \"peak_reserved_bytes\": %" PRIu64
				", \"max_cache_free_bytes\": %" PRIu64,
				c->peak_reserved, c->max_cache_free);
		else
			fputs(", \"peak_reserved_bytes\": null, \"max_cache_free_bytes\": null", f);
		if (c->has & CNT_RETRIES)
			fprintf(f, ", \"alloc_retries\": %" PRIu64, c->alloc_retries);
		else
			fputs(", \"alloc_retries\": null", f);
		if (c->has & CNT_OOMS)
			fprintf(f, ", \"ooms\": %" PRIu64 "}", c->ooms);
		else
			fputs(", \"ooms\": null}", f);
	}
	fputs("]", f);
}

/* Only in traces with the framework's history. */
static void json_fwhist(FILE *f, const struct summary *s)
{
	if (!s->has_fw)
		return;
	const struct fwhist *h = s->t.fw;
	size_t gaps = 0;
	for (size_t i = 0; i < h->nsnaps; i++)
		gaps += h->snaps[i].gap;
	fprintf(f,
		",\n \"framework_history\": {\"source\": \"torch\", \"snapshots\": %zu, "
		"\"entries\": %" PRIu64 ", \"windows_with_gap\": %zu, \"devices\": [",
		h->nsnaps, h->entries, gaps);
	bool first = true;
	for (size_t i = 0; i < s->fwt.n; i++) {
		const struct fwt_dev *d = &s->fwt.devs[i];
		if (!d->seen && !d->nsegs)
			continue;
		fprintf(f,
			"%s\n  {\"index\": %" PRId64 ", \"at_peak\": {\"tensor_bytes\": %" PRIu64
			", \"tensors\": %zu, \"reserved_bytes\": %" PRIu64
			", \"unrequested_bytes\": %" PRIu64 ", \"before_history\": %s}, "
			"\"tensor_peak_bytes\": %" PRIu64 ", \"tensor_peak_time_ns\": %" PRId64
			", \"reserved_peak_bytes\": %" PRIu64 ", \"end_tensor_bytes\": %" PRIu64
			", \"end_tensors\": %" PRIu64 "}",
			first ? "" : ",", d->device, d->bytes, d->n, d->reserved,
			d->reserved > d->bytes ? d->reserved - d->bytes : 0,
			d->early ? "true" : "false", d->peak_allocated,
			summary_rel(s, d->peak_allocated_ns), d->peak_reserved, d->end_allocated,
			d->end_tensors);
		first = false;
	}
	fputs("]}", f);
}

static void json_tail(FILE *f, const struct summary *s)
{
	const struct trace *t = &s->t;
	json_counters(f, s);
	json_fwhist(f, s);
	if (t->has_trailer)
		fprintf(f,
			",\n \"trailer\": {\"end_time_ns\": %" PRId64 ", \"events\": %" PRIu64
			", \"lost\": %" PRIu64 ", \"reason\": %" PRIu64 "}",
			summary_rel(s, t->trailer_end_ns), t->trailer_events, t->trailer_lost,
			t->trailer_reason);
	if (t->nnotes) {
		fputs(",\n \"notes\": [", f);
		for (size_t i = 0; i < t->nnotes; i++) {
			fputs(i ? ", " : "", f);
			json_cstr0(f, t->notes[i]);
		}
		fputs("]", f);
	}
}

void summary_print_json(struct summary *s, const struct gmt_read_info *in)
{
	FILE *f = stdout;
	json_head(f, s, in);
	fputs(" \"devices\": [", f);
	for (size_t i = 0; i < s->ndevs; i++)
		json_device(f, s, &s->devs[i], i == 0);
	fputs("],\n \"memory\": {", f);
	for (int b = 0; b < BK_COUNT; b++) {
		fprintf(f, "%s\n  \"%s\": {", b ? "," : "", bucket_key[b]);
		json_level(f, s, &s->rp.buckets[b]);
		fputc('}', f);
	}
	json_calls(f, s);
	json_failures(f, s);
	fputs("],\n \"accounting\": ", f);
	if (s->has_acct)
		acct_print_json(f, &s->acct, -1);
	else
		fputs("null", f);
	fputs(",\n \"phases\": ", f);
	json_phases(f, s);
	fputs(",\n \"phases_open_at_end\": ", f);
	json_unclosed(f, s);
	json_tail(f, s);
	fputs("}", f);
}

void summary_print_many_json(struct summary *all, struct trace **ts,
			     const struct summary_proc *rows, const struct summary_proc *tot,
			     const uint64_t *peaks, const uint64_t *ends, int n)
{
	FILE *f = stdout;
	fputs("{\"traces\": [\n", f);
	for (int i = 0; i < n; i++) {
		summary_print_json(&all[i], &all[i].t.info);
		fputs(i + 1 < n ? ",\n" : "\n", f);
	}
	fprintf(f, "],\n \"processes\": [");
	for (int i = 0; i < n; i++) {
		char lb[64];
		fprintf(f, "%s\n  {\"trace\": %d, \"label\": ", i ? "," : "", i);
		json_cstr0(f, trace_label(ts[i], lb, sizeof(lb)));
		fprintf(f,
			", \"peak_bytes\": %" PRIu64 ", \"peak_time_ns\": %" PRId64
			", \"live_bytes_at_end\": %" PRIu64
			", \"live_allocations_at_end\": %" PRIu64 ", \"failures\": %" PRIu64
			", \"complete\": %s}",
			rows[i].peak, rows[i].peak_time, rows[i].live_end, rows[i].allocs_end,
			rows[i].failures, json_bool(rows[i].complete));
	}
	fprintf(f,
		"],\n \"totals\": {\"traces\": %d, \"peak_bytes_sum\": %" PRIu64
		", \"live_bytes_at_end\": %" PRIu64 ", \"live_allocations_at_end\": %" PRIu64
		", \"failures\": %" PRIu64 ", \"events\": %" PRIu64 ", \"complete\": %s},\n",
		n, tot->peak, tot->live_end, tot->allocs_end, tot->failures, tot->events,
		json_bool(tot->complete));
	fputs(" \"imbalance\": {\"peak_bytes\": ", f);
	trace_imbalance_json(f, peaks, (size_t)n);
	fputs(", \"live_bytes_at_end\": ", f);
	trace_imbalance_json(f, ends, (size_t)n);
	fputs("}}\n", f);
}
