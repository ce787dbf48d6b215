/* gpumemtrace fragmentation [--json] [--device N] TRACE...: the size
 * histogram; per device the address span of live device allocations against
 * the live bytes (over time, at the peak and at the end) with the free gaps
 * inside the span; rounding waste; VMM reserved/mapped/physical; stream-
 * ordered allocations against pools.
 *
 * Two replays per trace: the first finds each device's peak and counts, the
 * second takes snapshots of the live set (evenly in time, at each peak, at
 * the end). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/report-base.h"
#include "analysis/trace.h"

#define NSAMPLES     20
#define LARGE_PAGE   (2ull << 20) /* granularity of allocations over 1 MiB */
#define SMALL_GRAIN  512ull
#define LARGE_CUTOFF (1ull << 20)

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

struct snap {
	bool taken;
	uint64_t time_ns, live, covered, count, span, free_in_span, largest_gap, gaps, live_rounded;
};

struct fdev {
	int64_t ordinal;
	uint64_t hist_count[65], hist_bytes[65];
	uint64_t allocs, requested, rounded;
	uint64_t peak, peak_seq;
	struct snap at_peak, at_end;
	struct snap samples[NSAMPLES];
	int nsamples;
};

struct vmm {
	uint64_t reserved, mapped, physical;
	uint64_t reserved_peak, mapped_peak, physical_peak;
	bool used;
};

struct frag {
	struct trace *t;
	const struct rb_opts *o;
	struct fdev *devs;
	size_t ndevs;
	int pass;
	struct replay rp;
	uint64_t t0, t1;
	int last_bucket;
	struct vmm vmm;
	uint64_t async_live, async_peak, pools_created, pool_trims;
	/* scratch for snapshots */
	struct range {
		uint64_t start, end;
	} * ranges;
	size_t ranges_cap;
};

static struct fdev *fdev_get(struct frag *g, int64_t ordinal)
{
	for (size_t i = 0; i < g->ndevs; i++)
		if (g->devs[i].ordinal == ordinal)
			return &g->devs[i];
	g->devs = xrealloc(g->devs, (g->ndevs + 1) * sizeof(*g->devs));
	struct fdev *d = &g->devs[g->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	return d;
}

static uint64_t rounded(uint64_t size)
{
	uint64_t g = size > LARGE_CUTOFF ? LARGE_PAGE : SMALL_GRAIN;
	return (size + g - 1) / g * g;
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* The live device allocations (addresses) of device `ord`, now. */
static void snapshot(struct frag *g, int64_t ord, uint64_t time, struct snap *s)
{
	size_t n = 0;
	memset(s, 0, sizeof(*s));
	s->taken = true;
	s->time_ns = time;
	struct rp_live *l, *tmp;
	RP_EACH(&g->rp, GMT_SPACE_ADDR, l, tmp)
	{
		if (l->bucket != BK_DEVICE || l->device != ord)
			continue;
		if (n == g->ranges_cap) {
			g->ranges_cap = g->ranges_cap ? 2 * g->ranges_cap : 256;
			g->ranges = xrealloc(g->ranges, g->ranges_cap * sizeof(*g->ranges));
		}
		uint64_t end = l->key + l->size < l->key ? UINT64_MAX : l->key + l->size;
		g->ranges[n++] = (struct range){l->key, end};
		s->live += l->size;
		s->live_rounded += rounded(l->size);
	}
	s->count = n;
	if (!n)
		return;
	if (n)
		qsort(g->ranges, n, sizeof(*g->ranges), range_cmp);
	uint64_t cur_end = g->ranges[0].end;
	s->covered = g->ranges[0].end - g->ranges[0].start;
	for (size_t i = 1; i < n; i++) {
		const struct range *r = &g->ranges[i];
		if (r->start > cur_end) {
			uint64_t gap = r->start - cur_end;
			s->gaps++;
			s->free_in_span += gap;
			if (gap > s->largest_gap)
				s->largest_gap = gap;
		}
		if (r->end > cur_end) {
			s->covered += r->end - (r->start > cur_end ? r->start : cur_end);
			cur_end = r->end;
		}
	}
	s->span = cur_end - g->ranges[0].start;
}

static bool selected(const struct frag *g, int64_t ord)
{
	return !g->o->has_device || g->o->device == ord;
}

static bool is_vmm(uint32_t api)
{
	return api >= GMT_API_cuMemCreate && api <= GMT_API_cuMemImportFromShareableHandle;
}

static void vmm_update(struct frag *g)
{
	struct vmm *v = &g->vmm;
	v->used = true;
	v->reserved = g->rp.buckets[BK_VA].bytes;
	v->mapped = 0;
	struct rp_map *m, *mt;
	HASH_ITER(hh, g->rp.maps, m, mt)
	{
		v->mapped += m->size;
	}
	v->physical = 0;
	struct rp_live *l, *lt;
	RP_EACH(&g->rp, GMT_SPACE_VMM_HANDLE, l, lt)
	{
		if (l->api == GMT_API_cuMemCreate)
			v->physical += l->size;
	}
	if (v->reserved > v->reserved_peak)
		v->reserved_peak = v->reserved;
	if (v->mapped > v->mapped_peak)
		v->mapped_peak = v->mapped;
	if (v->physical > v->physical_peak)
		v->physical_peak = v->physical;
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct frag *g = ctx;
	const struct api_info *a = api_lookup(e->api);
	bool ok = !gmt_failed(e->result, e->flags);
	if (g->pass == 1 && a && ok) {
		if (a->op == GMT_OP_FREE && a->space == GMT_SPACE_ADDR) {
			struct rp_live *l = replay_find(&g->rp, GMT_SPACE_ADDR, e->ptr);
			if (l && api_lookup(l->api) && api_lookup(l->api)->kind == GMT_KIND_ASYNC)
				g->async_live -= l->size < g->async_live ? l->size : g->async_live;
		}
		if (a->op == GMT_OP_ALLOC && a->kind == GMT_KIND_ASYNC) {
			g->async_live += e->size;
			if (g->async_live > g->async_peak)
				g->async_peak = g->async_live;
		}
		if (a->op == GMT_OP_ALLOC && a->kind == GMT_KIND_POOL)
			g->pools_created++;
		if (a->op == GMT_OP_POOL_TRIM)
			g->pool_trims++;
		bool dev = a->op == GMT_OP_ALLOC && gmt_device_memory(a->kind, e->aux);
		if (dev && selected(g, e->device)) {
			struct fdev *d = fdev_get(g, e->device);
			int b = 0;
			for (uint64_t s = e->size; s > 1; s >>= 1)
				b++;
			if (e->size == 0)
				b = 64; /* the zero-size bucket */
			d->hist_count[b]++;
			d->hist_bytes[b] += e->size;
			d->allocs++;
			d->requested += e->size;
			d->rounded += rounded(e->size);
		}
	}
	replay_apply(&g->rp, e);
	if (g->pass == 1) {
		if (a && is_vmm(e->api))
			vmm_update(g);
		return;
	}
	/* pass 2: snapshots */
	int bucket = 0;
	if (g->t1 > g->t0)
		bucket =
		    (int)((unsigned __int128)(e->time_ns - g->t0) * NSAMPLES / (g->t1 - g->t0 + 1));
	bool sample = bucket > g->last_bucket;
	if (sample)
		g->last_bucket = bucket;
	for (size_t i = 0; i < g->ndevs; i++) {
		struct fdev *d = &g->devs[i];
		if (d->peak_seq && g->rp.seq == d->peak_seq)
			snapshot(g, d->ordinal, e->time_ns, &d->at_peak);
		if (sample && d->nsamples < NSAMPLES)
			snapshot(g, d->ordinal, e->time_ns, &d->samples[d->nsamples++]);
	}
}

static int dev_cmp(const void *a, const void *b)
{
	const struct fdev *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

static void snap_json(FILE *f, struct trace *t, const struct snap *s)
{
	fprintf(f,
		"{\"time_ns\": %" PRId64 ", \"live_bytes\": %" PRIu64 ", \"allocations\": %" PRIu64
		", \"span_bytes\": %" PRIu64 ", \"free_in_span_bytes\": %" PRIu64
		", \"largest_gap_bytes\": %" PRIu64 ", \"gaps\": %" PRIu64
		", \"live_rounded_bytes\": %" PRIu64 ", \"external_fragmentation\": ",
		s->time_ns ? trace_rel(t, s->time_ns) : 0, s->live, s->count, s->span,
		s->free_in_span, s->largest_gap, s->gaps, s->live_rounded);
	rb_json_d(f, ratio(s->free_in_span, s->span));
	fputc('}', f);
}

static void snap_human(FILE *f, struct trace *t, const char *what, const struct snap *s)
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
		100 * ratio(s->free_in_span, s->span), s->gaps, s->gaps == 1 ? "" : "s",
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

struct ftot {
	uint64_t peak_live, peak_free, waste;
	double worst;
};

static void dev_human(FILE *f, struct frag *g, struct fdev *d)
{
	struct trace *t = g->t;
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
		100 * ratio(d->rounded - d->requested, d->rounded));
	snap_human(f, t, "at the peak", &d->at_peak);
	snap_human(f, t, "at the end", &d->at_end);
	if (d->nsamples) {
		fprintf(f, "  over time\n    %12s %11s %11s %8s\n", "time", "live", "span",
			"ext.frag");
		for (int i = 0; i < d->nsamples; i++) {
			const struct snap *s = &d->samples[i];
			fprintf(f, "    %12s %11s %11s %7.1f%%\n",
				rb_time(b1, trace_rel(t, s->time_ns)), fmt_size(b2, s->live),
				fmt_size(b3, s->span), 100 * ratio(s->free_in_span, s->span));
		}
	}
}

static void dev_json(FILE *f, struct frag *g, struct fdev *d, bool first)
{
	struct trace *t = g->t;
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

/* Two passes over one trace: the first finds each device's peak, the second
 * snapshots the address space there and at the end. Returns the trace's
 * exit code, or -1. */
static int frag_replay(struct frag *g, struct trace *t)
{
	int r = -1;
	for (g->pass = 1; g->pass <= 2; g->pass++) {
		replay_init(&g->rp);
		g->last_bucket = -1;
		r = trace_replay(t, NULL, on_event, g);
		for (size_t k = 0; k < g->ndevs; k++) {
			struct fdev *d = &g->devs[k];
			if (g->pass == 1) {
				struct rp_dev *rd = replay_dev(&g->rp, d->ordinal);
				d->peak = rd->lv.peak;
				d->peak_seq = rd->lv.peak_seq;
			} else {
				snapshot(g, d->ordinal, t->last_time_ns, &d->at_end);
			}
		}
		replay_free(&g->rp);
		if (r >= 0)
			break;
	}
	return r;
}

static void frag_total(const struct frag *g, struct ftot *tot)
{
	for (size_t k = 0; k < g->ndevs; k++) {
		const struct fdev *d = &g->devs[k];
		tot->peak_live += d->at_peak.live;
		tot->peak_free += d->at_peak.free_in_span;
		tot->waste += d->rounded - d->requested;
		double r = ratio(d->at_peak.free_in_span, d->at_peak.span);
		tot->worst = r > tot->worst ? r : tot->worst;
	}
}

static void frag_json(FILE *f, struct frag *g, int first)
{
	const struct vmm *v = &g->vmm;
	fprintf(f, "%s\n  {", first ? "" : ",");
	rb_json_head(f, g->t);
	fputs(",\n   \"devices\": [", f);
	for (size_t k = 0; k < g->ndevs; k++)
		dev_json(f, g, &g->devs[k], k == 0);
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

static void frag_human_vmm(FILE *f, const struct vmm *v)
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

static void frag_human(FILE *f, struct frag *g, int first)
{
	char b1[32], b2[32];
	if (!first)
		fputc('\n', f);
	rb_human_head(f, g->t);
	if (!g->ndevs)
		fprintf(f, "  no device memory was allocated\n");
	for (size_t k = 0; k < g->ndevs; k++)
		dev_human(f, g, &g->devs[k]);
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

static void frag_totals(FILE *f, const struct rb_opts *o, const struct trace *ts,
			const struct ftot *tot)
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
	const char *cmd = argv[0];
	struct rb_opts o = {0};
	const struct option opts[] = {
	    OPT_BOOL("json", &o.json, "one JSON object instead of text (keys: docs/cli.md)"),
	    OPT_INT("device", &o.device, "N", 0, INT32_MAX, "only device N",
		    .given = &o.has_device),
	    OPT_END(),
	};
	int rc = opt_parse(&usage, opts, argc, argv, &o.paths, &o.npaths);
	if (rc >= 0)
		return rc;
	struct trace *ts;
	rc = rb_open_all(cmd, &o, &ts);
	if (rc >= 0) {
		free(o.paths);
		return rc;
	}
	FILE *f = stdout;
	int worst = 0;
	struct ftot *tot = xcalloc((size_t)o.npaths, sizeof(*tot));
	if (o.json)
		fputs("{\"traces\": [", f);
	for (int i = 0; i < o.npaths; i++) {
		struct frag g = {.t = &ts[i], .o = &o};
		g.t0 = ts[i].events ? ts[i].first_time_ns : 0;
		g.t1 = ts[i].events ? ts[i].last_time_ns : 0;
		if (o.has_device)
			fdev_get(&g, o.device);
		int r = frag_replay(&g, &ts[i]);
		if (r >= 0)
			worst = r > worst ? r : worst;
		if (g.ndevs)
			qsort(g.devs, g.ndevs, sizeof(*g.devs), dev_cmp);
		frag_total(&g, &tot[i]);
		if (o.json)
			frag_json(f, &g, i == 0);
		else
			frag_human(f, &g, i == 0);
		free(g.devs);
		free(g.ranges);
	}
	frag_totals(f, &o, ts, tot);
	free(tot);
	free(o.paths);
	return rb_finish_all(ts, o.npaths, worst);
}
