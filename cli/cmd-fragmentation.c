/* gpumemtrace fragmentation [--json] [--device N] TRACE...: what a
 * driver-level trace can say about memory held but not used: the size
 * histogram, requested against granted, the segment inventory of a caching
 * allocator (at the peak, the end, the first OOM), VMM reserved/mapped/
 * physical, stream-ordered allocations against pools, and, plainly, what
 * it cannot see (free space inside a framework's cache).
 * The figures are analysis/fragmentation.c's; this file parses and renders. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/explain.h"
#include "analysis/fragmentation.h"
#include "analysis/report-base.h"
#include "analysis/trace.h"

static const char about[] =
    "Memory held but not used, as far as driver calls show it. Per device\n"
    "(device memory: cudaMalloc, cuMemAlloc, stream-ordered, cuMemCreate on a\n"
    "device):\n"
    "  - a histogram of allocation sizes in power-of-two buckets;\n"
    "  - requested against granted: pitched allocations (width * rows asked,\n"
    "    pitch * rows granted); other allocations rounded to the driver's pages\n"
    "    (2 MiB above 1 MiB, 512 B below: an estimate, the driver does not say);\n"
    "    cuMemCreate handles (granted as created; what the caller uses inside is\n"
    "    not visible); stream-ordered requests (the pool's grant is not visible);\n"
    "  - segments: the device allocations that are not stream-ordered, which is\n"
    "    what a caching allocator (PyTorch, CuPy, TF/XLA BFC) holds from the\n"
    "    driver, used or not: count, bytes, size classes (2 MiB, 20 MiB, other\n"
    "    multiples of 2 MiB, other sizes: PyTorch's segment sizes), oldest and\n"
    "    median age; at the device's peak, at the end and at its first\n"
    "    out-of-memory failure, with what the failing thread freed next;\n"
    "  - free space inside a framework's cache: not visible from driver calls\n"
    "    (under a caching allocator a tensor's free makes none; under a\n"
    "    stream-ordered pool each is a cudaFreeAsync, but the pool keeps the\n"
    "    memory); the framework's own counters (gpumemtrace run\n"
    "    --framework-counters) show it: reserved - allocated of the reading at\n"
    "    the peak (PyTorch also: inactive split bytes), and the most over the\n"
    "    readings.\n"
    "Per process:\n"
    "  - VMM: reserved address space (cuMemAddressReserve; never memory) against\n"
    "    mapped (cuMemMap) against physical memory (cuMemCreate), peak and end;\n"
    "  - pools: outstanding stream-ordered allocations; a pool's reserve is not\n"
    "    in the trace (accounting compares nvidia-smi with what is traced).\n"
    "Device addresses are virtual and sparse: no figure is taken from them.\n"
    "Several traces: a section each, then the totals side by side.\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace fragmentation gpumemtrace.1234.gmt\n"
    "  gpumemtrace fragmentation --json --device 1 rank0.gmt rank1.gmt\n"
    "\n"
    "exit status: 0 ok, 2 usage, 3 cannot read a file, 4 not a trace or corrupt\n";
static const struct opt_usage usage = {
    .name = "fragmentation", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

static const char *const class_text[FRAG_NCLASSES] = {"2 MiB", "20 MiB", "other multiples of 2 MiB",
						      "other sizes"};

static void segs_json(FILE *f, struct trace *t, const struct frag_segs *s)
{
	if (!s->taken) {
		fputs("null", f);
		return;
	}
	fprintf(f,
		"{\"time_ns\": %" PRId64 ", \"segments\": %" PRIu64 ", \"bytes\": %" PRIu64
		", \"oldest_age_ns\": %" PRIu64 ", \"median_age_ns\": %" PRIu64 ", \"classes\": {",
		s->time_ns ? trace_rel(t, s->time_ns) : 0, s->count, s->bytes, s->oldest_ns,
		s->median_age_ns);
	for (int c = 0; c < FRAG_NCLASSES; c++)
		fprintf(f, "%s\"%s\": {\"segments\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			c ? ", " : "", frag_class_key[c], s->class_count[c], s->class_bytes[c]);
	fprintf(f, "}, \"pytorch_like\": %s}", frag_pytorch_like(s) ? "true" : "false");
}

/* at: the time shown (the trace's end for "at the end", as summary's). */
static void segs_human(FILE *f, const char *what, int64_t at, const struct frag_segs *s)
{
	char b1[32], b2[32], b3[32], b4[32];
	if (!s->count) {
		fprintf(f, "    %s: none\n", what);
		return;
	}
	cli_wrapf(f, 6, "    %s (%s): %" PRIu64 " segment%s, %s; oldest %s, median age %s", what,
		  rb_time(b1, at), s->count, s->count == 1 ? "" : "s", fmt_size(b2, s->bytes),
		  rb_dur(b3, (int64_t)s->oldest_ns), rb_dur(b4, (int64_t)s->median_age_ns));
	char line[512];
	size_t o = 0;
	for (int c = 0, n = 0; c < FRAG_NCLASSES && o < sizeof(line); c++)
		if (s->class_count[c])
			o += (size_t)snprintf(
			    line + o, sizeof(line) - o, "%s%" PRIu64 " of %s (%s)", n++ ? ", " : "",
			    s->class_count[c], class_text[c], fmt_size(b1, s->class_bytes[c]));
	cli_wrapf(f, 8, "      %s", line);
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

static void grants_human(FILE *f, const struct frag_dev *d)
{
	char b1[32], b2[32], b3[32];
	const struct frag_grant *p = &d->pitched, *g = &d->pages;
	fprintf(f, "  requested against granted\n");
	if (p->count)
		cli_wrapf(f, 6, "    pitched: %" PRIu64 " asked %s, granted %s: %s of row padding",
			  p->count, fmt_size(b1, p->requested), fmt_size(b2, p->granted),
			  fmt_size(b3, p->granted - p->requested));
	if (g->count)
		cli_wrapf(f, 6,
			  "    driver pages (an estimate): %" PRIu64 " asked %s, %s in 2 MiB pages "
			  "above 1 MiB and 512 B grains below: %s (%.1f%%)",
			  g->count, fmt_size(b1, g->requested), fmt_size(b2, g->granted),
			  fmt_size(b3, g->granted - g->requested),
			  100 * frag_ratio(g->granted - g->requested, g->granted));
	if (d->handles.count)
		cli_wrapf(f, 6,
			  "    cuMemCreate: %" PRIu64 " handle%s, %s, %" PRIu64
			  " of them 2 MiB multiples; what the caller uses inside is not visible",
			  d->handles.count, d->handles.count == 1 ? "" : "s",
			  fmt_size(b1, d->handles.granted), d->handles_2m);
	if (d->async.count)
		cli_wrapf(f, 6,
			  "    stream-ordered: %" PRIu64
			  " asked %s; what the pool reserved for them "
			  "is not visible",
			  d->async.count, fmt_size(b1, d->async.requested));
}

static void counters_free_human(FILE *f, struct trace *t, const struct frag_counters *c)
{
	char b1[32], b2[32], b3[32], b4[32], tb[32];
	cli_wrapf(f, 4,
		  "  free inside the cache: %s (%s on %s, the reading nearest the peak, at %s: "
		  "reserved %s - allocated %s)",
		  fmt_size(b1, c->reserved - c->allocated), c->source, c->device_name,
		  trace_fmt_time(tb, trace_rel(t, c->time_ns)), fmt_size(b2, c->reserved),
		  fmt_size(b3, c->allocated));
	if (c->has_split)
		cli_wrapf(f, 6, "    of which in split blocks (inactive_split_bytes): %s",
			  fmt_size(b4, c->inactive_split));
	fprintf(f, "    the most over %zu reading%s: %s\n", c->readings,
		c->readings == 1 ? "" : "s", fmt_size(b4, c->max_free));
}

/* Free space inside the cache, or why it cannot be seen: it depends on
 * whether a tensor's free reaches the driver in the allocator's mode. */
static void cache_free_human(FILE *f, struct trace *t, const struct frag_dev *d,
			     const struct ex_recog *rec)
{
	char line[600];
	if (d->counters.known) {
		counters_free_human(f, t, &d->counters);
		return;
	}
	if (d->blocks_oom.known || d->blocks_last.known) {
		/* the history's snapshot shows it: no rerun to ask for */
		fprintf(f, "  free inside the cache: in PyTorch's own blocks, below\n");
		return;
	}
	const char *why;
	switch (rec->mode) {
	case MODE_PT_ASYNC:
	case MODE_TF_ASYNC:
	case MODE_ASYNC_POOL:
		why = "every free is a cudaFreeAsync, but the pool keeps the memory up to its "
		      "release threshold";
		break;
	case MODE_PT_NOCACHE:
	case MODE_XLA_PLATFORM:
		snprintf(line, sizeof(line),
			 "free inside the cache: little or none: under %s's %s every tensor's free "
			 "is a driver call",
			 rec->fw_name, rec->mode_name);
		cli_wrap(f, 2, cli_text_width(f), line);
		return;
	default:
		/* no framework named: the pattern alone does not say whose cache */
		why = rec->fw == FW_NONE ? "under a cache, freeing a tensor makes none" : NULL;
	}
	if (why)
		snprintf(line, sizeof(line),
			 "free inside the cache: not visible from driver calls (%s); the "
			 "framework's own counters (gpumemtrace run --framework-counters) show it",
			 why);
	else
		snprintf(line, sizeof(line),
			 "free inside the cache: not visible from driver calls (under %s%s%s, a "
			 "tensor's free makes none); the framework's own counters (gpumemtrace run "
			 "--framework-counters) show it",
			 rec->fw_name, "'s ", rec->mode_name);
	cli_wrap(f, 2, cli_text_width(f), line);
}

/* The framework's own blocks at one of its snapshots. */
static void blocks_human(FILE *f, struct trace *t, const struct frag_blocks *b)
{
	static const char *const at[] = {"when asked", "at its OOM", "at exit",
					 "before the program changed the recording", "imported"};
	char b1[32], b2[32], b3[32], b4[32], tb[32], line[700];
	const struct fw_blocks_fig *x = &b->fig;
	int w = cli_text_width(f);
	snprintf(line, sizeof(line),
		 "PyTorch's blocks (its own snapshot %s, %s): reserved %s in %" PRIu64
		 " segments, tensors' blocks %s (asked %s)%s%s",
		 b->reason >= 0 && b->reason <= 4 ? at[b->reason] : "",
		 trace_fmt_time(tb, trace_rel(t, b->time_ns)), fmt_size(b1, x->reserved),
		 x->segments, fmt_size(b2, x->allocated), fmt_size(b3, x->requested),
		 x->pending ? ", waiting for their streams " : "",
		 x->pending ? fmt_size(b4, x->pending) : "");
	cli_wrap(f, 2, w, line);
	/* top --tensors' cache row counts what no tensor asked for: the
	 * rounding inside the tensors' blocks too */
	uint64_t unasked = x->reserved > x->requested ? x->reserved - x->requested : 0;
	char with[160] = "";
	if (unasked != x->inactive)
		snprintf(with, sizeof(with),
			 " (%s no tensor asked for, with the rounding inside their blocks: top "
			 "--tensors' cache row)",
			 fmt_size(b4, unasked));
	snprintf(line, sizeof(line),
		 "free in the cache %s in free blocks%s: %s inside segments that hold a tensor "
		 "(inactive split: they stay reserved until the tensors go), %s in %" PRIu64
		 " empty segment%s (empty_cache() returns them)",
		 fmt_size(b1, x->inactive), with, fmt_size(b2, x->inactive_split),
		 fmt_size(b3, x->empty_bytes), x->empty_segments,
		 x->empty_segments == 1 ? "" : "s");
	cli_wrap(f, 4, w, line);
	if (!x->inactive)
		return;
	size_t n = snprintf(line, sizeof(line),
			    "largest free block %s (small pool %s, large pool %s): a request above "
			    "it needs a new segment",
			    fmt_size(b1, x->largest_free), fmt_size(b2, x->largest_free_small),
			    fmt_size(b3, x->largest_free_large));
	if (x->streams_total > 1) {
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      "; per stream (a block serves only its own):");
		for (size_t i = 0; i < x->nstreams && n < sizeof(line); i++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%s 0x%" PRIx64 " %s",
					      i ? "," : "", x->streams[i].stream,
					      fmt_size(b4, x->streams[i].largest_free));
	}
	cli_wrap(f, 4, w, line);
}

static void dev_human(FILE *f, struct trace *t, const struct frag_dev *d,
		      const struct ex_recog *rec)
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
	grants_human(f, d);
	cli_wrapf(f, 4,
		  "  segments (device allocations not stream-ordered: under a caching "
		  "allocator, what it holds from the driver)");
	segs_human(f, "at the peak", trace_rel(t, d->at_peak.time_ns), &d->at_peak);
	segs_human(f, "at the end", trace_duration_ns(t), &d->at_end);
	if (d->at_oom.taken) {
		segs_human(f, "at the first OOM", trace_rel(t, d->at_oom.time_ns), &d->at_oom);
		cli_wrapf(f, 8,
			  "      then the failing thread freed %" PRIu64 " of them (%s) before its "
			  "next device allocation",
			  d->oom_frees, fmt_size(b3, d->oom_freed));
	}
	if (frag_pytorch_like(&d->at_peak))
		cli_wrapf(f, 6,
			  "    the sizes match PyTorch's caching allocator's segments (2 MiB, 20 "
			  "MiB, 2 MiB multiples): a cache may hold free space inside them");
	cache_free_human(f, t, d, rec);
	if (d->blocks_oom.known)
		blocks_human(f, t, &d->blocks_oom);
	if (d->blocks_last.known && d->blocks_last.seq != d->blocks_oom.seq)
		blocks_human(f, t, &d->blocks_last);
}

static void grant_json(FILE *f, const char *key, const struct frag_grant *g, bool granted)
{
	fprintf(f, "\"%s\": {\"count\": %" PRIu64 ", \"requested_bytes\": %" PRIu64, key, g->count,
		g->requested);
	if (granted)
		fprintf(f, ", \"granted_bytes\": %" PRIu64 "}", g->granted);
	else
		fputs(", \"granted_bytes\": null}", f);
}

static void blocks_json(FILE *f, struct trace *t, const char *key, const struct frag_blocks *b)
{
	static const char *const why[] = {"requested", "oom", "exit", "change", "import"};
	const struct fw_blocks_fig *x = &b->fig;
	fprintf(f, "\"%s\": ", key);
	if (!b->known) {
		fputs("null", f);
		return;
	}
	fprintf(f,
		"{\"time_ns\": %" PRId64 ", \"reason\": \"%s\", \"reserved_bytes\": %" PRIu64
		", \"segments\": %" PRIu64 ", \"blocks\": %" PRIu64
		", \"allocated_bytes\": %" PRIu64 ", \"requested_bytes\": %" PRIu64
		", \"pending_free_bytes\": %" PRIu64 ", \"free_bytes\": %" PRIu64
		", \"unrequested_bytes\": %" PRIu64 ", \"inactive_split_bytes\": %" PRIu64
		", \"empty_segments\": %" PRIu64 ", \"empty_segment_bytes\": %" PRIu64
		", \"largest_free_block\": %" PRIu64 ", \"largest_free_small\": %" PRIu64
		", \"largest_free_large\": %" PRIu64 ", \"streams\": [",
		trace_rel(t, b->time_ns), b->reason >= 0 && b->reason <= 4 ? why[b->reason] : "?",
		x->reserved, x->segments, x->blocks, x->allocated, x->requested, x->pending,
		x->inactive, x->reserved > x->requested ? x->reserved - x->requested : 0,
		x->inactive_split, x->empty_segments, x->empty_bytes, x->largest_free,
		x->largest_free_small, x->largest_free_large);
	for (size_t i = 0; i < x->nstreams; i++)
		fprintf(f,
			"%s{\"stream\": %" PRIu64 ", \"free_bytes\": %" PRIu64
			", \"largest_free_block\": %" PRIu64 "}",
			i ? ", " : "", x->streams[i].stream, x->streams[i].free,
			x->streams[i].largest_free);
	fputs("]}", f);
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
	fprintf(f, "],\n    \"allocations\": %" PRIu64 ", \"rounding_waste_bytes\": %" PRIu64,
		d->allocs, frag_waste(d));
	fputs(",\n    \"granted\": {", f);
	grant_json(f, "pitched", &d->pitched, true);
	fputs(", ", f);
	grant_json(f, "driver_pages_estimated", &d->pages, true);
	fputs(", ", f);
	grant_json(f, "vmm_handles", &d->handles, true);
	fprintf(f, ", \"vmm_handles_2MiB_multiples\": %" PRIu64 ", ", d->handles_2m);
	grant_json(f, "stream_ordered", &d->async, false);
	fputs("},\n    \"segments_at_peak\": ", f);
	segs_json(f, t, &d->at_peak);
	fputs(",\n    \"segments_at_end\": ", f);
	segs_json(f, t, &d->at_end);
	fputs(",\n    \"segments_at_first_oom\": ", f);
	segs_json(f, t, &d->at_oom);
	fprintf(f, ", \"freed_after_first_oom\": {\"frees\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
		d->oom_frees, d->oom_freed);
	const struct frag_counters *c = &d->counters;
	if (c->known) {
		fprintf(f,
			",\n    \"cache_free\": {\"known\": true, \"bytes\": %" PRIu64
			", \"source\": \"%s\", \"device\": ",
			c->reserved - c->allocated, c->source);
		json_cstr(f, c->device_name);
		fprintf(f,
			", \"time_ns\": %" PRId64 ", \"reserved_bytes\": %" PRIu64
			", \"allocated_bytes\": %" PRIu64 ", \"inactive_split_bytes\": ",
			trace_rel(t, c->time_ns), c->reserved, c->allocated);
		if (c->has_split)
			fprintf(f, "%" PRIu64, c->inactive_split);
		else
			fputs("null", f);
		fprintf(f, ", \"max_bytes\": %" PRIu64 ", \"readings\": %zu}", c->max_free,
			c->readings);
	} else
		fputs(
		    ",\n    \"cache_free\": {\"known\": false, \"bytes\": null, \"source\": null}",
		    f);
	if (d->blocks_last.known) { /* only with the history: older outputs stay */
		fputs(",\n    \"framework_blocks\": {", f);
		blocks_json(f, t, "at_first_oom", &d->blocks_oom);
		fputs(", ", f);
		blocks_json(f, t, "last", &d->blocks_last);
		fputc('}', f);
	}
	fputc('}', f);
}

static void frag_json(FILE *f, struct trace *t, const struct frag_result *g, int first)
{
	const struct frag_vmm *v = &g->vmm;
	fprintf(f, "%s\n  {", first ? "" : ",");
	cli_json_head(f, t);
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
	/* in the user's words; the driver's terms in parentheses and --json */
	fprintf(f, "\nmapped memory (cuMemCreate: expandable segments, XLA, NCCL), peak / end\n");
	fprintf(f, "  address space reserved (VA)     %s / %s\n", fmt_size(b1, v->reserved_peak),
		fmt_size(b2, v->reserved));
	fprintf(f, "  of it mapped to memory          %s / %s\n", fmt_size(b1, v->mapped_peak),
		fmt_size(b2, v->mapped));
	fprintf(f, "  memory created (physical)       %s / %s\n", fmt_size(b1, v->physical_peak),
		fmt_size(b2, v->physical));
	if (v->reserved_peak > v->mapped_peak)
		cli_wrapf(f, 4,
			  "  %s of reserved address space was never mapped at "
			  "the peak (address space only: costs no memory)",
			  fmt_size(b1, v->reserved_peak - v->mapped_peak));
}

static void frag_human(FILE *f, struct trace *t, const struct frag_result *g, int first,
		       const struct ex_recog *rec)
{
	char b1[32], b2[32];
	if (!first)
		fputc('\n', f);
	cli_human_head(f, t);
	if (!g->ndevs)
		fprintf(f, "  no device memory was allocated\n");
	for (size_t k = 0; k < g->ndevs; k++)
		dev_human(f, t, &g->devs[k], rec);
	if (g->vmm.used)
		frag_human_vmm(f, &g->vmm);
	if (g->async_peak || g->pools_created) {
		char line[600];
		snprintf(line, sizeof(line),
			 "pools: stream-ordered allocations peaked at %s (%s at the "
			 "end); %" PRIu64 " pools created, %" PRIu64
			 " trims; the pools' reservations are not in the trace, so "
			 "memory a pool holds beyond its outstanding allocations is "
			 "not visible here (accounting compares nvidia-smi with the trace)",
			 fmt_size(b1, g->async_peak), fmt_size(b2, g->async_live), g->pools_created,
			 g->pool_trims);
		fputc('\n', f);
		cli_wrap(f, 0, cli_text_width(f), line);
	}
}

static void totals_render(FILE *f, const struct rb_opts *o, const struct trace *ts,
			  const struct frag_total *tot)
{
	if (o->json) {
		uint64_t live = 0, waste = 0, segs = 0, sbytes = 0;
		for (int i = 0; i < o->npaths; i++) {
			live += tot[i].peak_live;
			waste += tot[i].waste;
			segs += tot[i].segments;
			sbytes += tot[i].segment_bytes;
		}
		fprintf(f,
			"],\n \"totals\": {\"processes\": %d, \"live_bytes_at_peaks\": %" PRIu64
			", \"rounding_waste_bytes\": %" PRIu64 ", \"segments_at_peaks\": %" PRIu64
			", \"segment_bytes_at_peaks\": %" PRIu64 "}}\n",
			o->npaths, live, waste, segs, sbytes);
	} else if (o->npaths > 1) {
		char b1[32], b2[32], b3[32];
		/* 88 columns; narrower, the path's column gives what is missing; a
		 * longer path takes a line of its own, above its figures */
		int pw = cli_text_width(f) < 88 ? 32 : 40;
		fprintf(f, "\nper process (at each device's peak)\n  %-*s %11s %9s %11s %11s\n", pw,
			"trace", "live", "segments", "seg. bytes", "waste");
		for (int i = 0; i < o->npaths; i++)
			fprintf(f, "  %s%s%-*s %11s %9" PRIu64 " %11s %11s\n",
				(int)strlen(ts[i].path) > pw ? ts[i].path : "",
				(int)strlen(ts[i].path) > pw ? "\n  " : "", pw,
				(int)strlen(ts[i].path) > pw ? "" : ts[i].path,
				fmt_size(b1, tot[i].peak_live), tot[i].segments,
				fmt_size(b2, tot[i].segment_bytes), fmt_size(b3, tot[i].waste));
	}
}

int cmd_fragmentation(int argc, char **argv)
{
	struct rb_opts o = {0};
	struct trace *ts;
	int rc = cli_parse_open_plain(&usage, argc, argv, &o, &ts);
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
		else {
			struct ex_recog rec;
			if (explain_allocator(&ts[i], o.has_device, o.device, &rec) >= 0)
				memset(&rec, 0, sizeof(rec)); /* unread: no mode, as direct */
			frag_human(f, &ts[i], &g, i == 0, &rec);
		}
		frag_free(&g);
	}
	totals_render(f, &o, ts, tot);
	free(tot);
	free(o.paths);
	return rb_finish_all(ts, o.npaths, worst);
}
