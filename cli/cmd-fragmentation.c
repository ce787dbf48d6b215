/* gpumemtrace fragmentation [--json] [--device N] TRACE...: the size
 * histogram; per device the address span of live device allocations against
 * the live bytes (over time, at the peak and at the end) with the free gaps
 * inside the span; rounding waste; VMM reserved/mapped/physical; stream-
 * ordered allocations against pools.
 * The figures are analysis/fragmentation.c's; this file parses and renders. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/fragmentation.h"
#include "analysis/report-base.h"
#include "analysis/trace.h"

static const char about[] =
    "Why an allocation can fail with memory free. Per device (device memory:\n"
    "cudaMalloc, cuMemAlloc, stream-ordered, cuMemCreate on a device):\n"
    "  - a histogram of allocation sizes in power-of-two buckets;\n"
    "  - the address span of the live allocations (highest end - lowest start)\n"
    "    against the bytes they cover; external fragmentation = free bytes inside\n"
    "    the span / span. Shown at 20 moments evenly spread over the run, at the\n"
    "    device's peak and at the end; at the peak and the end also the largest\n"
    "    free gap inside the span and the number of gaps;\n"
    "  - rounding waste: the requested size against the size rounded up to the\n"
    "    allocation granularity (2 MiB pages above 1 MiB, 512 B otherwise).\n"
    "Per process:\n"
    "  - VMM: reserved address space (cuMemAddressReserve) against mapped\n"
    "    (cuMemMap) against physical memory (cuMemCreate), peak and end;\n"
    "  - pools: outstanding stream-ordered allocations. A pool's reservation is\n"
    "    not in the trace (the tracer records no pool attributes): said so.\n"
    "Several traces: a section each, then the totals side by side.\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace fragmentation gpumemtrace.1234.gmt\n"
    "  gpumemtrace fragmentation --json --device 1 rank0.gmt rank1.gmt\n"
    "\n"
    "exit status: 0 ok, 2 usage, 3 cannot read a file, 4 not a trace or corrupt\n";
static const struct opt_usage usage = {
    .name = "fragmentation", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

static void snap_json(FILE *f, struct trace *t, const struct frag_snap *s)
{
	fprintf(f,
		"{\"time_ns\": %" PRId64 ", \"live_bytes\": %" PRIu64 ", \"allocations\": %" PRIu64
		", \"span_bytes\": %" PRIu64 ", \"free_in_span_bytes\": %" PRIu64
		", \"largest_gap_bytes\": %" PRIu64 ", \"gaps\": %" PRIu64
		", \"live_rounded_bytes\": %" PRIu64 ", \"external_fragmentation\": ",
		s->time_ns ? trace_rel(t, s->time_ns) : 0, s->live, s->count, s->span,
		s->free_in_span, s->largest_gap, s->gaps, s->live_rounded);
	rb_json_d(f, frag_ratio(s->free_in_span, s->span));
	fputc('}', f);
}

static void snap_human(FILE *f, struct trace *t, const char *what, const struct frag_snap *s)
{
	char b1[32], b2[32], b3[32], b4[32], b5[32];
	if (!s->count) {
		fprintf(f, "  %s: nothing live\n", what);
		return;
	}
	fprintf(f,
		"  %s (%s): %s live in %" PRIu64 " allocations over a span of %s;\n"
		"    %s free inside the span (%.1f%% external fragmentation) in %" PRIu64
		" gap%s, the largest %s\n",
		what, rb_time(b1, trace_rel(t, s->time_ns)), fmt_size(b2, s->live), s->count,
		fmt_size(b3, s->span), fmt_size(b4, s->free_in_span),
		100 * frag_ratio(s->free_in_span, s->span), s->gaps, s->gaps == 1 ? "" : "s",
		fmt_size(b5, s->largest_gap));
}

static const char *bucket_text(char *buf, int b)
{
	char x[32], y[32];
	if (b == 64)
		snprintf(buf, 64, "0 B");
	else
		snprintf(buf, 64, "[%s, %s)", fmt_size(x, 1ull << b),
			 b < 63 ? fmt_size(y, 1ull << (b + 1)) : "16 EiB");
	return buf;
}

static void dev_human(FILE *f, struct trace *t, const struct frag_dev *d)
{
	char b1[64], b2[32], b3[32];
	fprintf(f, "\ndevice %" PRId64 ": %" PRIu64 " allocations, peak %s\n", d->ordinal,
		d->allocs, fmt_size(b2, d->peak));
	fprintf(f, "  allocation sizes\n    %-24s %8s %11s\n", "size", "count", "bytes");
	for (int b = 64; b >= 0; b = b == 64 ? 0 : b + 1) {
		if (b == 64 && !d->hist_count[64])
			continue;
		if (d->hist_count[b])
			fprintf(f, "    %-24s %8" PRIu64 " %11s\n", bucket_text(b1, b),
				d->hist_count[b], fmt_size(b2, d->hist_bytes[b]));
		if (b == 63)
			break;
	}
	fprintf(f, "  rounding: requested %s, rounded to the granularity %s: %s wasted (%.1f%%)\n",
		fmt_size(b1, d->requested), fmt_size(b2, d->rounded),
		fmt_size(b3, d->rounded - d->requested),
		100 * frag_ratio(d->rounded - d->requested, d->rounded));
	snap_human(f, t, "at the peak", &d->at_peak);
	snap_human(f, t, "at the end", &d->at_end);
	if (d->nsamples) {
		fprintf(f, "  over time\n    %12s %11s %11s %8s\n", "time", "live", "span",
			"ext.frag");
		for (int i = 0; i < d->nsamples; i++) {
			const struct frag_snap *s = &d->samples[i];
			fprintf(f, "    %12s %11s %11s %7.1f%%\n",
				rb_time(b1, trace_rel(t, s->time_ns)), fmt_size(b2, s->live),
				fmt_size(b3, s->span), 100 * frag_ratio(s->free_in_span, s->span));
		}
	}
}

static void dev_json(FILE *f, struct trace *t, const struct frag_dev *d, bool first)
{
	fprintf(
	    f, "%s\n   {\"index\": %" PRId64 ", \"peak_bytes\": %" PRIu64 ", \"size_histogram\": [",
	    first ? "" : ",", d->ordinal, d->peak);
	int k = 0;
	for (int b = 64; b >= 0; b = b == 64 ? 0 : b + 1) {
		if (d->hist_count[b])
			fprintf(f,
				"%s{\"min_bytes\": %" PRIu64 ", \"max_bytes\": %" PRIu64
				", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
				k++ ? ", " : "", (uint64_t)(b == 64 ? 0 : 1ull << b),
				(uint64_t)(b == 64   ? 0
					   : b == 63 ? UINT64_MAX
						     : (1ull << (b + 1)) - 1),
				d->hist_count[b], d->hist_bytes[b]);
		if (b == 63)
			break;
	}
	fprintf(f,
		"],\n    \"allocations\": %" PRIu64 ", \"requested_bytes\": %" PRIu64
		", \"rounded_bytes\": %" PRIu64 ", \"rounding_waste_bytes\": %" PRIu64
		",\n    \"at_peak\": ",
		d->allocs, d->requested, d->rounded, d->rounded - d->requested);
	snap_json(f, t, &d->at_peak);
	fputs(",\n    \"at_end\": ", f);
	snap_json(f, t, &d->at_end);
	fputs(",\n    \"over_time\": [", f);
	for (int i = 0; i < d->nsamples; i++) {
		fputs(i ? ",\n     " : "\n     ", f);
		snap_json(f, t, &d->samples[i]);
	}
	fputs("]}", f);
}

static void frag_json(FILE *f, struct trace *t, const struct frag_result *g, int first)
{
	const struct frag_vmm *v = &g->vmm;
	fprintf(f, "%s\n  {", first ? "" : ",");
	rb_json_head(f, t);
	fputs(",\n   \"devices\": [", f);
	for (size_t k = 0; k < g->ndevs; k++)
		dev_json(f, t, &g->devs[k], k == 0);
	fprintf(f,
		"],\n   \"vmm\": {\"reserved_peak_bytes\": %" PRIu64
		", \"reserved_end_bytes\": %" PRIu64 ", \"mapped_peak_bytes\": %" PRIu64
		", \"mapped_end_bytes\": %" PRIu64 ", \"physical_peak_bytes\": %" PRIu64
		", \"physical_end_bytes\": %" PRIu64 "},\n",
		v->reserved_peak, v->reserved, v->mapped_peak, v->mapped, v->physical_peak,
		v->physical);
	fprintf(f,
		"   \"pools\": {\"pools_created\": %" PRIu64 ", \"trims\": %" PRIu64
		", \"stream_ordered_peak_bytes\": %" PRIu64
		", \"stream_ordered_end_bytes\": %" PRIu64 ", \"reservation_known\": false}}",
		g->pools_created, g->pool_trims, g->async_peak, g->async_live);
}

static void frag_human_vmm(FILE *f, const struct frag_vmm *v)
{
	char b1[32], b2[32];
	fprintf(f, "\nVMM (peak / end)\n  reserved VA %s / %s\n", fmt_size(b1, v->reserved_peak),
		fmt_size(b2, v->reserved));
	fprintf(f, "  mapped      %s / %s\n", fmt_size(b1, v->mapped_peak),
		fmt_size(b2, v->mapped));
	fprintf(f, "  physical    %s / %s\n", fmt_size(b1, v->physical_peak),
		fmt_size(b2, v->physical));
	if (v->reserved_peak > v->mapped_peak)
		fprintf(f,
			"  %s of reserved address space was never mapped at "
			"the peak (address space only: costs no memory)\n",
			fmt_size(b1, v->reserved_peak - v->mapped_peak));
}

static void frag_human(FILE *f, struct trace *t, const struct frag_result *g, int first)
{
	char b1[32], b2[32];
	if (!first)
		fputc('\n', f);
	rb_human_head(f, t);
	if (!g->ndevs)
		fprintf(f, "  no device memory was allocated\n");
	for (size_t k = 0; k < g->ndevs; k++)
		dev_human(f, t, &g->devs[k]);
	if (g->vmm.used)
		frag_human_vmm(f, &g->vmm);
	if (g->async_peak || g->pools_created)
		fprintf(f,
			"\npools: stream-ordered allocations peaked at %s (%s at the "
			"end); %" PRIu64 " pools created, %" PRIu64
			" trims; the pools' reservations are not in the trace, so "
			"memory a pool holds beyond its outstanding allocations is "
			"not visible\n",
			fmt_size(b1, g->async_peak), fmt_size(b2, g->async_live), g->pools_created,
			g->pool_trims);
}

static void totals_render(FILE *f, const struct rb_opts *o, const struct trace *ts,
			  const struct frag_total *tot)
{
	if (o->json) {
		fputs("],\n \"totals\": {\"processes\": ", f);
		uint64_t live = 0, fr = 0, waste = 0;
		double w = 0;
		for (int i = 0; i < o->npaths; i++) {
			live += tot[i].peak_live;
			fr += tot[i].peak_free;
			waste += tot[i].waste;
			w = tot[i].worst > w ? tot[i].worst : w;
		}
		fprintf(
		    f,
		    "%d, \"live_bytes_at_peaks\": %" PRIu64 ", \"free_in_span_at_peaks\": %" PRIu64
		    ", \"rounding_waste_bytes\": %" PRIu64 ", \"worst_external_fragmentation\": ",
		    o->npaths, live, fr, waste);
		rb_json_d(f, w);
		fputs("}}\n", f);
	} else if (o->npaths > 1) {
		char b1[32], b2[32], b3[32];
		fprintf(f, "\nper process (at each device's peak)\n  %-40s %11s %11s %11s %9s\n",
			"trace", "live", "free(span)", "waste", "ext.frag");
		for (int i = 0; i < o->npaths; i++)
			fprintf(f, "  %-40.40s %11s %11s %11s %8.1f%%\n", ts[i].path,
				fmt_size(b1, tot[i].peak_live), fmt_size(b2, tot[i].peak_free),
				fmt_size(b3, tot[i].waste), 100 * tot[i].worst);
	}
}

int cmd_fragmentation(int argc, char **argv)
{
	struct rb_opts o = {0};
	const struct option opts[] = {
	    OPT_RB_JSON(&o),
	    OPT_RB_DEVICE(&o),
	    OPT_END(),
	};
	struct trace *ts;
	int rc = rb_parse_open(&usage, opts, argc, argv, &o, NULL, &ts);
	if (rc >= 0)
		return rc;
	FILE *f = stdout;
	int worst = 0;
	struct frag_total *tot = xcalloc((size_t)o.npaths, sizeof(*tot));
	if (o.json)
		fputs("{\"traces\": [", f);
	for (int i = 0; i < o.npaths; i++) {
		struct frag_result g;
		int r = frag_compute(&ts[i], o.has_device, o.device, &g);
		if (r >= 0)
			worst = r > worst ? r : worst;
		frag_totals(&g, &tot[i]);
		if (o.json)
			frag_json(f, &ts[i], &g, i == 0);
		else
			frag_human(f, &ts[i], &g, i == 0);
		frag_free(&g);
	}
	totals_render(f, &o, ts, tot);
	free(tot);
	free(o.paths);
	return rb_finish_all(ts, o.npaths, worst);
}
