/* gpumemtrace summary [--json] TRACE: peak device memory and when it
 * happened, what was live at the end, calls per API, failures, lost events,
 * and the allocation sites holding the most memory at each device's peak.
 * The figures are analysis/summary.c's; this file prints them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/hash.h"

#include "cli/accounting-print.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/report-print.h"
#include "cli/summary.h"
#include "analysis/fwhist.h"

static const char about[] =
    "Replays the trace's allocations and frees and reports, per device, the peak\n"
    "of device memory (cudaMalloc/cuMemAlloc, stream-ordered, and cuMemCreate on\n"
    "a device), when it happened (seconds since the trace start), what was still\n"
    "live at the end, and the allocation sites holding the most at the peak.\n"
    "Managed, pinned and registered host memory, VA reservations, arrays and IPC\n"
    "mappings are reported separately. Then calls per API (count, failed, bytes\n"
    "requested by successful calls), failed calls, and lost events.\n"
    "\n"
    "A trace with a torn tail (the process was killed) is summarized up to it,\n"
    "with a warning on stderr and \"complete\": false.\n"
    "\n"
    "Per device it also shows the memory by kind (device, stream-ordered\n"
    "(cudaMallocAsync), mapped memory (cuMemCreate: PyTorch's expandable\n"
    "segments, XLA, NCCL)) at the peak and at the end, and by library: the live bytes at\n"
    "the peak charged to the module of each allocation's site (the first frame\n"
    "outside the CUDA libraries): libnccl, libcublasLt, libtorch_cuda, the program.\n"
    "\n"
    "With several traces (one per rank or process): a row per process (peak, when,\n"
    "live at the end, failures), the totals, and the imbalance between them (the\n"
    "highest and lowest peak, which process, max/min); --json holds each trace's\n"
    "full summary under \"traces\".\n";
static const char more[] = "examples:\n"
			   "  gpumemtrace summary run.gmt\n"
			   "  gpumemtrace summary --json run.gmt | jq '.devices[0].by_library'\n"
			   "  gpumemtrace summary rank0.gmt rank1.gmt rank2.gmt rank3.gmt\n";
static const struct opt_usage usage = {
    .name = "summary", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

/* ---- output ---------------------------------------------------------- */

/* Nested phases share their parents' prefix ("NCCL: ncclCommInitRankConfig/
 * ...", "XlaCompile:#module=...#/pass"): a name too long for the column
 * keeps its tail, the most specific part, which tells the children apart. */
#define PHASE_COL_MIN 32
#define PHASE_COL_MAX 72
#define PHASES_SHOWN  24
static const char *fit_name(char *out, size_t outsz, const char *name, int width)
{
	size_t len = strlen(name);
	if (len <= (size_t)width || width < 16)
		return name;
	size_t tail = (size_t)width - 3;
	/* cut between UTF-8 characters, never inside one (NVTX names may be wide) */
	while (tail && ((unsigned char)name[len - tail] & 0xc0) == 0x80)
		tail--;
	snprintf(out, outsz, "...%s", name + len - tail);
	return out;
}

/* What the table's attribution leaned on: allocations inherited from
 * another thread's range, and ranges that never closed. */
static void print_phase_notes(FILE *f, struct summary *s, struct phase **ps, size_t n)
{
	char b1[32];
	uint64_t ia = 0, ib = 0;
	for (size_t i = 0; i < n; i++)
		ia += ps[i]->inherited_allocs, ib += ps[i]->inherited_bytes;
	if (ia)
		cli_wrapf(f, 3,
			  "  (%" PRIu64 " allocation%s, %s, came from threads with no range open, "
			  "such as PyTorch's autograd thread: each took the innermost range open "
			  "in the process; `--json` counts them as \"inherited\")",
			  ia, ia == 1 ? "" : "s", fmt_size(b1, ib));
	const struct phase_tracker *pt = &s->phases;
	if (!pt->nunclosed)
		return;
	cli_wrapf(f, 3,
		  "  %sstill open at the end of the trace%s (never popped or ended: lost, or the "
		  "program ended inside it); each keeps its own thread's later events, and no "
		  "other thread inherits it:",
		  cli_paint(f, C_WARN), cli_paint(f, C_RESET));
	for (size_t i = 0; i < pt->nunclosed && i < 8; i++) {
		const struct trace_range *r = pt->unclosed[i].r;
		char ts[32];
		cli_wrapf(f, 6, "    %s  opened at %s s on thread %" PRIu64,
			  pt->unclosed[i].ph ? pt->unclosed[i].ph->name : r->text,
			  fmt_reltime(ts, summary_rel(s, r->time_ns)), (uint64_t)r->tid);
	}
	if (pt->nunclosed > 8)
		fprintf(f, "    (%zu more: `summary --json` lists them)\n", pt->nunclosed - 8);
}

static void print_phases(FILE *f, struct summary *s)
{
	char b1[32], b2[32], b3[32], b4[32], nb[PHASE_COL_MAX + 1];
	size_t n;
	struct phase **ps = summary_phases(s, &n);
	int width;
	/* XLA names a range for every compiler pass (26 755 phases in one JAX
	 * run on an H100): past PHASES_SHOWN rows the table keeps "(no phase)",
	 * then the phases that moved the most memory, then the first others;
	 * each in its place. */
	bool *keep = xcalloc(n ? n : 1, sizeof(*keep));
	size_t kept = 0, moved_hidden = 0, idle = 0;
	for (size_t i = 0; i < n; i++)
		if (ps[i] == s->phases.none && kept < PHASES_SHOWN)
			keep[i] = true, kept++;
	while (kept < PHASES_SHOWN) { /* the largest mover not yet kept */
		size_t best = n;
		for (size_t i = 0; i < n; i++)
			if (!keep[i] && (ps[i]->allocs || ps[i]->frees) &&
			    (best == n || ps[i]->bytes_allocated + ps[i]->bytes_freed >
					      ps[best]->bytes_allocated + ps[best]->bytes_freed))
				best = i;
		if (best == n)
			break;
		keep[best] = true;
		kept++;
	}
	/* a phase that neither allocated nor freed is not shown: only counted */
	for (size_t i = 0; i < n; i++) {
		moved_hidden += !keep[i] && (ps[i]->allocs || ps[i]->frees);
		idle += !keep[i] && !ps[i]->allocs && !ps[i]->frees;
	}
	width = PHASE_COL_MIN;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(ps[i]->name);
		if (keep[i] && len > (size_t)width)
			width = len > PHASE_COL_MAX ? PHASE_COL_MAX : (int)len;
	}
	/* 2 + width + 57 columns: a narrow report gives the name what is left */
	if (width + 59 > cli_text_width(f))
		width = cli_text_width(f) - 59 < 12 ? 12 : cli_text_width(f) - 59;
	fputc('\n', f);
	cli_wrapf(f, 2,
		  "phases (device memory; an allocation's phase is the innermost range open on its "
		  "thread, else in the process;\n  \"freed\" and \"still live\" count the phase's "
		  "own allocations)");
	fprintf(f, "  %-*s %7s %10s %10s %10s %15s\n", width, "phase", "allocs", "allocated",
		"freed", "still live", "peak while open");
	for (size_t i = 0; i < n; i++) {
		const struct phase *ph = ps[i];
		if (!keep[i])
			continue;
		fprintf(f, "  %-*s %7" PRIu64 " %10s %10s %10s %15s\n", width,
			fit_name(nb, sizeof nb, ph->name, width), ph->allocs,
			fmt_size(b1, ph->bytes_allocated), fmt_size(b2, ph->bytes_freed),
			fmt_size(b3, ph->bytes_allocated - ph->bytes_freed),
			fmt_size(b4, ph->peak));
	}
	static const char rest[] =
	    "`summary --json` lists every phase, `top --by range` ranks them)";
	if (moved_hidden)
		cli_wrapf(f, 3, "  (%zu more phases with allocations or frees, %zu without: %s",
			  moved_hidden, idle, rest);
	else if (idle)
		cli_wrapf(f, 3, "  (%zu more phases without allocations or frees: %s", idle, rest);
	free(keep);
	print_phase_notes(f, s, ps, n);
	if (s->phases.unmatched_pops || s->phases.unmatched_ends)
		fprintf(f, "  (%" PRIu64 " pops and %" PRIu64 " ends matched no open range)\n",
			s->phases.unmatched_pops, s->phases.unmatched_ends);
	free(ps);
}

static void print_head(FILE *f, const struct summary *s, const struct gmt_read_info *in)
{
	const struct trace *t = &s->t;
	char b1[32];
	char *head = NULL;
	if (asprintf(&head, "%strace%s     %s (format %u, %s%s%s)", cli_paint(f, C_BOLD),
		     cli_paint(f, C_RESET), s->path, (unsigned)s->hdr->version,
		     cli_paint(f, in->complete ? C_RESET : C_WARN),
		     in->complete		    ? "complete"
		     : in->damage		    ? "INCOMPLETE: damaged"
		     : in->stop == GMT_STOP_TORN    ? "INCOMPLETE: torn tail"
		     : in->stop == GMT_STOP_CORRUPT ? "INCOMPLETE: corrupt"
						    : "INCOMPLETE: no trailer",
		     cli_paint(f, C_RESET)) < 0)
		xalloc_failed();
	cli_wrap_hang(f, 10, cli_text_width(f), head); /* the path may be long */
	free(head);
	char *proc = NULL;
	int pn = t->has_process
		     ? asprintf(&proc, "process   pid %" PRIu64 " (ppid %" PRIu64 "): %s", t->pid,
				t->ppid, t->command ? t->command : "")
		     : asprintf(&proc, "process   pid %" PRIu64, (uint64_t)s->hdr->pid);
	if (pn < 0)
		xalloc_failed();
	cli_wrap_hang(f, 10, cli_text_width(f), proc); /* a command line may be long */
	free(proc);
	fprintf(f, "duration  %s s%s, %" PRIu64 " events, %" PRIu64 " lost\n",
		fmt_reltime(b1, trace_duration_ns(t)) + 1,
		t->events || t->has_trailer ? "" : " (no event was written)", t->events, t->lost);
}

/* The device table, then each device's kinds where more than plain
 * cudaMalloc memory is in play. */
static void print_devices(FILE *f, const struct summary *s)
{
	char b1[32], b2[32], b3[32], b4[32];
	fprintf(
	    f,
	    "\ndevice memory (cudaMalloc, cuMemAlloc, stream-ordered, cuMemCreate on a device)\n");
	/* 101 columns; narrower, the name takes what the figures leave */
	int nw = cli_text_width(f) >= 101 ? 28 : cli_text_width(f) - 63;
	char nb[128];
	if (nw < 10)
		nw = 10;
	bool wide = nw == 28;
	fprintf(f,
		wide ? "  %-4s %-*s %10s %10s %16s %12s %13s\n"
		     : "  %-3s %-*s %9s %9s %12s %11s %11s\n",
		"dev", nw, "name", "total", "peak", "peak at (s)", "live at end", "live allocs");
	if (!s->ndevs)
		fprintf(f, "  (no devices)\n");
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct summary_dev *d = &s->devs[i];
		fprintf(f,
			wide ? "  %-4" PRId64 " %-*s %10s %10s %16s %12s %13" PRIu64 "\n"
			     : "  %-3" PRId64 " %-*s %9s %9s %12s %11s %11" PRIu64 "\n",
			d->ordinal, nw, cli_fit(d->name[0] ? d->name : "?", nw, nb, sizeof(nb)),
			d->total ? fmt_size(b1, d->total) : "?", fmt_size(b2, d->lv.peak),
			d->lv.peak_seq ? fmt_reltime(b3, summary_rel(s, d->lv.peak_time_ns)) + 1
				       : "-",
			fmt_size(b4, d->lv.bytes), d->lv.count);
	}
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct summary_dev *d = &s->devs[i];
		bool mixed = false;
		for (size_t k = 1; k < NKINDS; k++)
			mixed |= d->kind_peak[summary_kinds[k].kind] ||
				 d->kind_end[summary_kinds[k].kind];
		if (!mixed)
			continue;
		fprintf(f, "\ndevice %" PRId64 " memory by kind\n  %-34s %12s %12s\n", d->ordinal,
			"kind", "at the peak", "live at end");
		for (size_t k = 0; k < NKINDS; k++)
			fprintf(f, "  %-34s %12s %12s\n", summary_kinds[k].label,
				fmt_size(b1, d->kind_peak[summary_kinds[k].kind]),
				fmt_size(b2, d->kind_end[summary_kinds[k].kind]));
	}
}

static void print_other_memory(FILE *f, const struct summary *s)
{
	char b1[32], b2[32], b3[32];
	bool other = false;
	for (int b = BK_MANAGED; b < BK_COUNT; b++)
		other |= s->rp.buckets[b].peak > 0 || s->rp.buckets[b].count > 0;
	if (!other)
		return;
	fprintf(f, "\nother memory\n  %-20s %10s %16s %12s %13s\n", "kind", "peak", "peak at (s)",
		"live at end", "live allocs");
	for (int b = BK_MANAGED; b < BK_COUNT; b++) {
		const struct rp_level *lv = &s->rp.buckets[b];
		if (!lv->peak && !lv->count && !lv->peak_seq)
			continue;
		fprintf(f, "  %-20s %10s %16s %12s %13" PRIu64 "\n", bucket_label[b],
			fmt_size(b1, lv->peak),
			lv->peak_seq ? fmt_reltime(b3, summary_rel(s, lv->peak_time_ns)) + 1 : "-",
			fmt_size(b2, lv->bytes), lv->count);
	}
}

/* The failed calls, each with oom's case: two failed cudaMalloc that the
 * framework's retry recovered are no failure of the program. */
static void print_failures(FILE *f, struct summary *s)
{
	char b1[32], b2[32];
	const char **kase = xcalloc(s->nfailures_kept + 1, sizeof(*kase));
	bool any, recovered;
	summary_failure_cases(s, kase, &any, &recovered);
	fprintf(f, "\nfailed calls (%" PRIu64 ")\n", s->nfailures);
	size_t show = s->nfailures_kept < 20 ? s->nfailures_kept : 20;
	for (size_t i = 0; i < show; i++) {
		const struct summary_failure *x = &s->failures[i];
		const char *rn = summary_failure_result(x);
		if (cli_text_width(f) >= 116)
			fprintf(f,
				"  %16s  %-28s dev %-3" PRId64 " size %-10s %s (%" PRIu64 ")%s%s\n",
				fmt_reltime(b1, summary_rel(s, x->time_ns)) + 1, api_name(x->api),
				x->device, fmt_size(b2, x->size), rn ? rn : "?", x->result,
				kase[i] ? "  " : "", kase[i] ? kase[i] : "");
		else /* the result and the case under the call */
			cli_wrapf(f, 16,
				  "  %12s  %-23s dev %" PRId64 "  size %-9s  %s (%" PRIu64 ")%s%s",
				  fmt_reltime(b1, summary_rel(s, x->time_ns)) + 1, api_name(x->api),
				  x->device, fmt_size(b2, x->size), rn ? rn : "?", x->result,
				  kase[i] ? "  " : "", kase[i] ? kase[i] : "");
	}
	if (s->nfailures > show)
		fprintf(f, "  ... %" PRIu64 " more (--json lists up to %d)\n", s->nfailures - show,
			SUMMARY_MAX_FAILURES);
	if (any)
		cli_wrapf(f, 4,
			  "  the cases are oom's%s: `gpumemtrace oom` gives each one's figures",
			  recovered ? " (recovered-by-retry: the framework freed "
				      "memory and the same request then succeeded)"
				    : "");
	free(kase);
}

static void print_calls(FILE *f, struct summary *s)
{
	char b1[32];
	fprintf(f, "\ncalls\n  %-32s %10s %8s %12s\n", "api", "calls", "failed", "bytes");
	struct summary_call *c, *ct;
	HASH_ITER(hh, s->calls, c, ct)
	{
		fprintf(f, "  %-32s %10" PRIu64 " %8" PRIu64 " %12s\n", api_name(c->api), c->count,
			c->failed, fmt_size(b1, c->bytes));
	}
	if (!s->calls)
		fprintf(f, "  (none)\n");
	if (s->nfailures)
		print_failures(f, s);
}

/* The top sites and the libraries at one device's peak. */
static void print_peak_sites(FILE *f, struct summary *s, struct summary_dev *d)
{
	char b1[32], b2[32];
	fprintf(f, "\ntop allocation sites at the device %" PRId64 " peak (%s at %s s)\n",
		d->ordinal, fmt_size(b1, d->lv.peak),
		fmt_reltime(b2, summary_rel(s, d->lv.peak_time_ns)) + 1);
	fprintf(f, "  %10s %8s %8s  %s\n", "bytes", "allocs", "stack", "site");
	if (!d->rows)
		summary_site_rows(s, d);
	int width = cli_text_width(f);
	for (size_t k = 0; k < d->nrows; k++) {
		const struct summary_row *r = &d->rows[k];
		char extra[48] = "";
		const char *tails[2] = {extra, ""};
		if (r->stacks > 1)
			snprintf(extra, sizeof(extra), "  (%zu stacks)", r->stacks);
		/* the figures are 32 columns: the site gets the rest, 40 at least */
		fprintf(f, "  %10s %8" PRIu64 " %8" PRIu64 "  ", fmt_size(b1, r->bytes), r->count,
			r->stack_id);
		cli_site_line(f, r->text, width - 32, tails, 2);
	}
	if (d->distinct_rows > d->nrows)
		fprintf(f, "  ... %zu more sites\n", d->distinct_rows - d->nrows);
	fprintf(f, "\nby library at the device %" PRId64 " peak\n  %10s %6s %8s  %s\n", d->ordinal,
		"bytes", "share", "allocs", "library");
	for (size_t k = 0; k < d->nlibs; k++)
		fprintf(f, "  %10s %5.1f%% %8" PRIu64 "  %s\n", fmt_size(b1, d->libs[k].bytes),
			d->lv.peak ? 100.0 * (double)d->libs[k].bytes / (double)d->lv.peak : 0.0,
			d->libs[k].count, d->libs[k].library);
}

/* The framework's own view (run --framework-history): per device, what
 * its segments held at the device's peak, its own peaks, the end. */
static void print_fwhist(FILE *f, struct summary *s)
{
	if (!s->has_fw)
		return;
	const struct fwhist *h = s->t.fw;
	char b1[32], b2[32], b3[32], b4[32], line[640];
	size_t gaps = 0;
	for (size_t i = 0; i < h->nsnaps; i++)
		gaps += h->snaps[i].gap;
	snprintf(line, sizeof(line),
		 "PyTorch's allocator history (%zu snapshot%s, %" PRIu64 " entries%s; top, "
		 "flamegraph --tensors show the tensors' lines)",
		 h->nsnaps, h->nsnaps == 1 ? "" : "s", h->entries,
		 gaps ? "; entries before a window dropped: what was live then is rebuilt from the "
			"segments"
		      : "");
	fputc('\n', f);
	cli_wrap_hang(f, 0, cli_text_width(f), line);
	for (size_t i = 0; i < s->fwt.n; i++) {
		const struct fwt_dev *d = &s->fwt.devs[i];
		if (!d->seen && !d->nsegs)
			continue;
		const struct summary_dev *di = NULL;
		for (size_t k = 0; k < s->ndevs; k++)
			if (s->devs[k].ordinal == d->device)
				di = &s->devs[k];
		if (di && di->lv.peak_seq) {
			snprintf(
			    line, sizeof(line),
			    "device %" PRId64
			    " at its peak (%s): %s in %zu tensors (as requested), "
			    "%s of PyTorch's cache beyond them: free blocks and rounding (segments "
			    "%s)%s",
			    d->device, fmt_size(b1, di->lv.peak), fmt_size(b2, d->bytes), d->n,
			    fmt_size(b3, d->reserved > d->bytes ? d->reserved - d->bytes : 0),
			    fmt_size(b4, d->reserved),
			    d->early ? "; the history begins after the peak: as it begins" : "");
			cli_wrap(f, 2, cli_text_width(f), line);
		}
		snprintf(
		    line, sizeof(line),
		    "device %" PRId64 " tensors: peak %s at %s s, reserved peak %s; at the end "
		    "%s in %" PRIu64 " tensors",
		    d->device, fmt_size(b1, d->peak_allocated),
		    fmt_reltime(b2, summary_rel(s, d->peak_allocated_ns)) + 1,
		    fmt_size(b3, d->peak_reserved), fmt_size(b4, d->end_allocated), d->end_tensors);
		cli_wrap(f, 2, cli_text_width(f), line);
	}
}

/* The frameworks' own counters (run --framework-counters), per framework
 * and device. */
static void print_counters(FILE *f, const struct counters_set *cs)
{
	if (!cs->n)
		return;
	char b1[32], b2[32], b3[32], line[512];
	fprintf(f, "\nframework counters (the frameworks' own; fragmentation and accounting "
		   "use them)\n");
	for (size_t i = 0; i < cs->n; i++) {
		const struct counters_series *c = &cs->s[i];
		size_t n = 0;
#define ADD(...)                                                                                   \
	n += (size_t)snprintf(line + n, n < sizeof(line) ? sizeof(line) - n : 0, __VA_ARGS__)
		ADD("%s %s (%s, %zu reading%s", c->source, c->device_name, c->api, c->n,
		    c->n == 1 ? "" : "s");
		if (c->oom_readings)
			ADD(", %zu at an OOM", c->oom_readings);
		ADD("): peak allocated %s", fmt_size(b1, c->peak_allocated));
		if (c->has & CNT_RESERVED)
			ADD(", peak reserved %s, most free in the cache %s",
			    fmt_size(b2, c->peak_reserved), fmt_size(b3, c->max_cache_free));
		if (c->has & CNT_RETRIES)
			ADD("; %" PRIu64 " allocation%s retried after freeing the cache",
			    c->alloc_retries, c->alloc_retries == 1 ? "" : "s");
		if (c->has & CNT_OOMS)
			ADD(", %" PRIu64 " OOM%s", c->ooms, c->ooms == 1 ? "" : "s");
#undef ADD
		cli_wrap(f, 2, cli_text_width(f), line);
	}
}

static void print_human(struct summary *s, const struct gmt_read_info *in)
{
	FILE *f = stdout;
	const struct trace *t = &s->t;
	print_head(f, s, in);
	print_devices(f, s);
	if (s->has_acct)
		acct_print_brief(f, &s->acct);
	print_counters(f, &s->counters);
	print_fwhist(f, s);
	print_other_memory(f, s);
	if (s->has_phases)
		print_phases(f, s);
	print_calls(f, s);
	if (t->lost && t->lost_in_children >= t->lost)
		fprintf(f,
			"\nlost events: %" PRIu64 ", all of child processes made without fork "
			"handlers (_Fork, a raw clone), which are not traced: this process's "
			"totals above are complete\n",
			t->lost);
	else if (t->lost)
		fprintf(f,
			"\nlost events: %" PRIu64 " (%" PRIu64 " in LOST records, %" PRIu64
			" in the trailer): the totals above undercount\n",
			t->lost, t->lost_in_records, t->trailer_lost);
	if (s->rp.unmatched_frees)
		fprintf(f, "\nfrees of addresses not live: %" PRIu64 "\n", s->rp.unmatched_frees);
	for (size_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].nsites)
			print_peak_sites(f, s, &s->devs[i]);
	/* What the library could not see or record (a DEEPBIND library, an
	 * unknown lookup result): the totals above may undercount. */
	if (t->nnotes)
		fprintf(f, "\nnotes from the tracer\n");
	for (size_t i = 0; i < t->nnotes; i++)
		fprintf(f, "  %s\n", t->notes[i]);
}

static int summary_many(const char *const *paths, int n, bool json, const struct site_opts *sopts)
{
	struct summary *all = xrealloc(NULL, (size_t)n * sizeof(*all));
	struct trace **ts = xrealloc(NULL, (size_t)n * sizeof(*ts));
	uint64_t *peaks = xrealloc(NULL, (size_t)n * sizeof(*peaks));
	uint64_t *ends = xrealloc(NULL, (size_t)n * sizeof(*ends));
	struct summary_proc *rows = xrealloc(NULL, (size_t)n * sizeof(*rows));
	int rc = -1, opened = 0;
	for (int i = 0; i < n && rc < 0; i++) {
		rc = summary_read(&all[i], "summary", paths[i], sopts, !json);
		opened = i + 1;
		if (rc < 0) {
			rows[i] = summary_proc_row(&all[i]);
			ts[i] = &all[i].t;
			peaks[i] = rows[i].peak;
			ends[i] = rows[i].live_end;
		}
	}
	if (rc >= 0) {
		for (int i = 0; i < opened; i++)
			summary_free(&all[i]);
		free(all), free(ts), free(peaks), free(ends), free(rows);
		return rc;
	}
	FILE *f = stdout;
	struct summary_proc tot = summary_proc_total(rows, n);
	if (json) {
		summary_print_many_json(all, ts, rows, &tot, peaks, ends, n);
	} else {
		char b1[32], b2[32], b3[32], lb[64];
		fprintf(f, "%d traces (one per process)\n\n", n);
		/* 90 columns and the path; narrower, the path under its row */
		size_t longest = 0;
		for (int i = 0; i < n; i++)
			if (strlen(all[i].path) + (rows[i].complete ? 0 : 13) > longest)
				longest = strlen(all[i].path) + (rows[i].complete ? 0 : 13);
		bool narrow = 92 + (int)longest > cli_text_width(f);
		int w[7] = {3, 24, 10, 12, 12, 13, 8};
		if (narrow)
			memcpy(w, (int[7]){3, 20, 9, 10, 11, 11, 6}, sizeof(w));
		fprintf(f, "  %-*s %-*s %*s %*s %*s %*s %*s%s\n", w[0], "#", w[1], "process", w[2],
			"peak", w[3], "peak at", w[4], "live at end", w[5], "live allocs", w[6],
			"failed", narrow ? "\n      trace" : "  trace");
		for (int i = 0; i < n; i++)
			fprintf(f, "  %-*d %-*.*s %*s %*s %*s %*" PRIu64 " %*" PRIu64 "%s%s%s\n",
				w[0], i, w[1], w[1], trace_label(ts[i], lb, sizeof(lb)), w[2],
				fmt_size(b1, rows[i].peak), w[3],
				rows[i].peak ? trace_fmt_time(b2, rows[i].peak_time) : "-", w[4],
				fmt_size(b3, rows[i].live_end), w[5], rows[i].allocs_end, w[6],
				rows[i].failures, narrow ? "\n      " : "  ", all[i].path,
				rows[i].complete ? "" : " (INCOMPLETE)");
		fprintf(f, "  %-*s %-*s %*s %*s %*s %*" PRIu64 " %*" PRIu64 "\n", w[0], "", w[1],
			"total", w[2], fmt_size(b1, tot.peak), w[3], "", w[4],
			fmt_size(b3, tot.live_end), w[5], tot.allocs_end, w[6], tot.failures);
		fputs("\n(the total of the peaks: the processes may not have peaked at once)\n"
		      "imbalance\n",
		      f);
		trace_imbalance_text(f, "peak", peaks, ts, (size_t)n);
		trace_imbalance_text(f, "live at end", ends, ts, (size_t)n);
	}
	fflush(stdout);
	rc = 0;
	for (int i = 0; i < n; i++) {
		int r = trace_finish(&all[i].t);
		if (r > rc)
			rc = r;
		summary_free(&all[i]);
	}
	free(all), free(ts), free(peaks), free(ends), free(rows);
	return rc;
}

int cmd_summary(int argc, char **argv)
{
	bool json = false;
	struct site_args sa = {0};
	const struct option opts[] = {
	    OPT_BOOL("json", &json, "one JSON object instead of tables (keys: docs/cli.md)"),
	    OPT_SITES(&sa),
	    OPT_END(),
	};
	const char **paths;
	int npaths;
	int rc = opt_parse_sites(&usage, opts, argc, argv, &paths, &npaths, &sa);
	if (rc >= 0)
		return rc;
	if (npaths > 1) {
		rc = summary_many(paths, npaths, json, &sa.opts);
		free(paths);
		site_args_done(usage.name, &sa);
		return rc;
	}
	struct summary s;
	rc = summary_read(&s, "summary", paths[0], &sa.opts, !json);
	free(paths);
	if (rc >= 0) {
		summary_free(&s);
		return rc;
	}
	if (json) {
		summary_print_json(&s, &s.t.info);
		fputc('\n', stdout);
	} else {
		print_human(&s, &s.t.info);
	}
	fflush(stdout);
	rc = trace_finish(&s.t);
	summary_free(&s);
	site_args_done(usage.name, &sa);
	return rc;
}
