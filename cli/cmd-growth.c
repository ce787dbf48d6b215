/* gpumemtrace growth [--json] [--device N] [--width COLS] TRACE...: how
 * device memory grew: every new high-water mark, the sizes of the chunks it
 * grew in, when growth stopped (end of warm-up), whether live memory keeps
 * creeping afterwards (least-squares slope, "likely leak"), and a chart of
 * live bytes over time.
 *
 * Two replays per trace: the first finds the steps, the final peak and the
 * chart; the second fits the slope over the samples after the warm-up. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/gfo-names.h"
#include "analysis/trace.h"

#define MAX_STEPS      100000 /* kept for the output; all are counted */
#define HUMAN_STEPS    40
#define HUMAN_CHUNKS   15
#define WARMUP_STEP    0.05 /* warm-up ends at the last step of 5% or more of the peak it made */
#define SHORT_WINDOW   0.25 /* a post-warm-up window under 25% of the run: use the 2nd half */
#define LEAK_MIN_BYTES (1ull << 20)
#define LEAK_PEAK_FRAC 0.01
#define CHART_HEIGHT   8
#define CHART_LABEL_W  11

static const char about[] =
    "How device memory grew (cudaMalloc, cuMemAlloc, stream-ordered, cuMemCreate on\n"
    "a device), per device:\n"
    "  - every step of the high-water mark: when (time since the trace start), the\n"
    "    new peak, the step, the allocation that raised it and its site;\n"
    "  - the sizes of the allocations that raised the peak (a histogram of exact\n"
    "    sizes): it shows the allocator's growth policy (doubling, 2/20 MiB blocks,\n"
    "    one big preallocation);\n"
    "  - the end of warm-up: the last step of the high-water mark that was 5% or\n"
    "    more of the peak it made (later, smaller steps are creep, not warm-up);\n"
    "  - the slope of live bytes after the warm-up, in bytes/s: a least-squares\n"
    "    line through the highest live bytes in each of 16 equal slices of the\n"
    "    window, which runs from the warm-up end to the last moment live bytes\n"
    "    were still at their warm-up level (so the frees at exit do not hide a\n"
    "    leak). When that window is under 25% of the run, growth did not stop and\n"
    "    the second half of the run is used. \"likely leak\" when the line rises\n"
    "    over its window by at least 1 MiB and at least 1% of the peak;\n"
    "  - a chart of live bytes over time (the highest value in each column).\n"
    "Several traces (one per rank or process): a section each, then the peaks side\n"
    "by side with the imbalance (largest peak / mean).\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace growth gpumemtrace.1234.gmt\n"
    "  gpumemtrace growth --device 0 --width 120 run.gmt\n"
    "  gpumemtrace growth --json rank0.gmt rank1.gmt rank2.gmt rank3.gmt\n"
    "\n"
    "exit status: 0 ok, 2 usage, 3 cannot read a file, 4 not a trace or corrupt\n";
static const struct opt_usage usage = {
    .name = "growth", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

struct step {
	uint64_t time_ns, peak, step, size, stack_id;
	uint32_t api;
};

struct chunk {
	UT_hash_handle hh;
	uint64_t size, count;
};

#define SLICES 16

struct gdev {
	int64_t ordinal;
	uint64_t peak, peak_time, last_bytes;
	struct step *steps;
	size_t nsteps, steps_cap;
	uint64_t steps_total;
	struct chunk *chunks;
	/* chart */
	uint64_t *cols;
	int last_col;
	/* warm-up and slope */
	uint64_t warmup_end, window_start;
	bool has_warmup, growth_stopped;
	/* The window ends at the last sample at or above warmup_level, before
	 * the teardown at exit drags the line down; n counts its samples. */
	uint64_t warmup_level, window_end;
	uint64_t n, n_seen;
	/* The highest live bytes in each of SLICES equal slices of the window:
	 * the slope is fitted through these, since a fit through every sample
	 * of a sawtooth (allocate, free, repeat) leans with where it is cut. */
	uint64_t slice_max[SLICES], slice_time[SLICES];
	bool slice_has[SLICES];
	int points; /* slices the line went through: a slope needs 3 */
	double slope, rise;
	bool leak;
	uint64_t *mk_live; /* live bytes at each iteration boundary (markers) */
};

/* Iteration boundaries from markers: the MARKs of the most frequent text,
 * else the starts of the most frequent top-level range (plus the last one's
 * end). MARKER_MIN occurrences at least. */
#define MARKER_MIN 3
struct markers {
	const char *source, *name;
	uint64_t *times;
	size_t n, next;
};

struct growth {
	struct trace *t;
	const struct gfo_opts *o;
	struct gdev *devs;
	size_t ndevs;
	int ncols;
	uint64_t t0, t1;
	int pass;
	struct replay rp;
	uint64_t process_peak; /* all selected devices together */
	uint64_t process_live;
	struct markers mk;
};

static struct gdev *gdev_get(struct growth *g, int64_t ordinal)
{
	for (size_t i = 0; i < g->ndevs; i++)
		if (g->devs[i].ordinal == ordinal)
			return &g->devs[i];
	g->devs = xrealloc(g->devs, (g->ndevs + 1) * sizeof(*g->devs));
	struct gdev *d = &g->devs[g->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	d->cols = xrealloc(NULL, (size_t)g->ncols * sizeof(*d->cols));
	memset(d->cols, 0, (size_t)g->ncols * sizeof(*d->cols));
	d->last_col = -1;
	return d;
}

static int column(const struct growth *g, uint64_t time)
{
	if (time <= g->t0 || g->t1 <= g->t0)
		return 0;
	unsigned __int128 x = (unsigned __int128)(time - g->t0) * (unsigned)g->ncols;
	uint64_t c = (uint64_t)(x / (g->t1 - g->t0 + 1));
	return c >= (uint64_t)g->ncols ? g->ncols - 1 : (int)c;
}

static void chart_fill(struct growth *g, struct gdev *d, int upto)
{
	while (d->last_col < upto) {
		d->last_col++;
		d->cols[d->last_col] = d->last_bytes;
	}
}

static void boundary(struct growth *g, size_t k)
{
	for (size_t i = 0; i < g->rp.ndevs; i++) {
		const struct rp_dev *rd = &g->rp.devs[i];
		if (g->o->has_device && rd->ordinal != g->o->device)
			continue;
		struct gdev *d = gdev_get(g, rd->ordinal);
		if (!d->mk_live)
			d->mk_live = xcalloc(g->mk.n, sizeof(*d->mk_live));
		d->mk_live[k] = rd->lv.bytes;
	}
}

/* Boundaries up to time (all with time UINT64_MAX): events at a boundary's
 * time count before it. */
static void boundaries_before(struct growth *g, uint64_t time)
{
	while (g->pass == 1 && g->mk.next < g->mk.n && g->mk.times[g->mk.next] < time)
		boundary(g, g->mk.next++);
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct growth *g = ctx;
	boundaries_before(g, e->time_ns);
	replay_apply(&g->rp, e);
	uint64_t total = 0;
	for (size_t i = 0; i < g->rp.ndevs; i++) {
		const struct rp_dev *rd = &g->rp.devs[i];
		if (g->o->has_device && rd->ordinal != g->o->device)
			continue;
		total += rd->lv.bytes;
		struct gdev *d = gdev_get(g, rd->ordinal);
		if (rd->lv.bytes == d->last_bytes && (rd->lv.peak == d->peak || g->pass == 2))
			continue;
		if (g->pass == 1) {
			int c = column(g, e->time_ns);
			chart_fill(g, d, c);
			if (rd->lv.bytes > d->cols[c])
				d->cols[c] = rd->lv.bytes;
			if (rd->lv.peak > d->peak) {
				d->steps_total++;
				if (d->nsteps < MAX_STEPS) {
					if (d->nsteps == d->steps_cap) {
						d->steps_cap = d->steps_cap ? 2 * d->steps_cap : 64;
						d->steps = xrealloc(
						    d->steps, d->steps_cap * sizeof(*d->steps));
					}
					d->steps[d->nsteps++] = (struct step){
					    e->time_ns, rd->lv.peak, rd->lv.peak - d->peak,
					    e->size,	e->stack_id, e->api};
				}
				struct chunk *ch;
				HASH_FIND(hh, d->chunks, &e->size, sizeof(e->size), ch);
				if (!ch) {
					ch = xrealloc(NULL, sizeof(*ch));
					memset(ch, 0, sizeof(*ch));
					ch->size = e->size;
					HASH_ADD(hh, d->chunks, size, sizeof(ch->size), ch);
				}
				ch->count++;
				d->peak = rd->lv.peak;
				d->peak_time = e->time_ns;
			}
		} else if (e->time_ns >= d->window_start && d->has_warmup) {
			d->n_seen++;
			uint64_t span = g->t1 > d->window_start ? g->t1 - d->window_start + 1 : 1;
			size_t k = (size_t)((e->time_ns - d->window_start) *
					    (unsigned __int128)SLICES / span);
			if (k < SLICES && (!d->slice_has[k] || rd->lv.bytes >= d->slice_max[k])) {
				d->slice_has[k] = true;
				d->slice_max[k] = rd->lv.bytes;
				d->slice_time[k] = e->time_ns;
			}
			if (rd->lv.bytes >= d->warmup_level) {
				d->n = d->n_seen;
				d->window_end = e->time_ns;
			}
		}
		d->last_bytes = rd->lv.bytes;
	}
	if (g->pass == 1) {
		g->process_live = total;
		if (total > g->process_peak)
			g->process_peak = total;
	}
}

struct text_at {
	const char *text;
	size_t at; /* first seen first */
};

static int text_at_cmp(const void *a, const void *b)
{
	const struct text_at *x = a, *y = b;
	int c = strcmp(x->text, y->text);
	return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The most frequent of n texts, with at least MARKER_MIN; ties: the one
 * seen first. Sorted, not compared pairwise: a run with a range per step
 * has as many texts as steps (50,000 took 5 s pairwise). */
static const char *most_frequent(const char **texts, size_t n, size_t *count)
{
	const char *best = NULL;
	size_t best_at = 0;
	*count = 0;
	struct text_at *v = xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = (struct text_at){texts[i], i};
	if (n > 1)
		qsort(v, n, sizeof(*v), text_at_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(v[j].text, v[i].text); j++)
			;
		size_t c = j - i;
		if (c > *count || (c == *count && v[i].at < best_at)) {
			*count = c;
			best = v[i].text;
			best_at = v[i].at;
		}
	}
	free(v);
	return *count >= MARKER_MIN ? best : NULL;
}

static void plan_markers(struct trace *t, struct markers *mk)
{
	memset(mk, 0, sizeof(*mk));
	const char **texts = xcalloc(t->nranges, sizeof(*texts));
	size_t n = 0, count;
	for (size_t i = 0; i < t->nranges; i++)
		if (t->ranges[i].op == GMT_RANGE_MARK)
			texts[n++] = t->ranges[i].text;
	const char *name = most_frequent(texts, n, &count);
	if (name) {
		mk->source = "mark";
		mk->name = name;
		mk->times = xcalloc(count, sizeof(*mk->times));
		for (size_t i = 0; i < t->nranges; i++)
			if (t->ranges[i].op == GMT_RANGE_MARK && !strcmp(t->ranges[i].text, name))
				mk->times[mk->n++] = t->ranges[i].time_ns;
		free(texts);
		return;
	}
	/* top-level ranges: pushes at depth 0 on their thread, and starts */
	struct {
		int tid;
		size_t depth;
	} *th = xcalloc(t->nranges + 1, sizeof(*th));
	size_t nth = 0;
	n = 0;
	for (size_t i = 0; i < t->nranges; i++) {
		const struct trace_range *r = &t->ranges[i];
		size_t k = 0;
		while (k < nth && th[k].tid != r->tid)
			k++;
		if (k == nth)
			th[nth++].tid = r->tid;
		if (r->op == GMT_RANGE_PUSH && th[k].depth++ == 0)
			texts[n++] = r->text;
		else if (r->op == GMT_RANGE_POP && th[k].depth)
			th[k].depth--;
		else if (r->op == GMT_RANGE_START)
			texts[n++] = r->text;
	}
	name = most_frequent(texts, n, &count);
	free(texts);
	if (!name) {
		free(th);
		return;
	}
	mk->source = "range";
	mk->name = name;
	mk->times = xcalloc(count + 1, sizeof(*mk->times));
	/* the starts, then the end of the last one */
	uint64_t last_id = 0;
	int last_tid = 0;
	bool last_push = false;
	nth = 0;
	uint64_t end = 0;
	for (size_t i = 0; i < t->nranges; i++) {
		const struct trace_range *r = &t->ranges[i];
		size_t k = 0;
		while (k < nth && th[k].tid != r->tid)
			k++;
		if (k == nth) {
			th[nth].tid = r->tid;
			th[nth++].depth = 0;
		}
		if (r->op == GMT_RANGE_PUSH) {
			if (th[k].depth++ == 0 && !strcmp(r->text, name)) {
				mk->times[mk->n++] = r->time_ns;
				last_push = true;
				last_tid = r->tid;
				end = 0;
			}
		} else if (r->op == GMT_RANGE_POP && th[k].depth) {
			if (--th[k].depth == 0 && last_push && r->tid == last_tid && !end)
				end = r->time_ns;
		} else if (r->op == GMT_RANGE_START && !strcmp(r->text, name)) {
			mk->times[mk->n++] = r->time_ns;
			last_push = false;
			last_id = r->id;
			end = 0;
		} else if (r->op == GMT_RANGE_END && !last_push && r->id == last_id && !end) {
			end = r->time_ns;
		}
	}
	if (end)
		mk->times[mk->n++] = end;
	free(th);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The median of the growth between boundaries: a warm-up iteration or one
 * odd step does not move it, a steady leak does. */
static int64_t median_growth(const struct markers *mk, const struct gdev *d)
{
	size_t n = mk->n - 1;
	int64_t *v = xcalloc(n, sizeof(*v));
	uint64_t *sorted = xcalloc(n, sizeof(*sorted));
	for (size_t i = 0; i < n; i++) {
		v[i] = (int64_t)(d->mk_live[i + 1] - d->mk_live[i]);
		sorted[i] = (uint64_t)v[i] ^ (1ull << 63); /* signed order as unsigned */
	}
	qsort(sorted, n, sizeof(*sorted), u64_cmp);
	int64_t lo = (int64_t)(sorted[(n - 1) / 2] ^ (1ull << 63));
	int64_t hi = (int64_t)(sorted[n / 2] ^ (1ull << 63));
	free(v);
	free(sorted);
	return lo / 2 + hi / 2 + (lo % 2 + hi % 2) / 2;
}

static bool has_markers(const struct growth *g, const struct gdev *d)
{
	return g->mk.n >= 2 && d->mk_live;
}

static void print_markers_human(FILE *f, struct growth *g, struct gdev *d)
{
	if (!has_markers(g, d))
		return;
	char b1[32], b2[32];
	size_t n = g->mk.n - 1, grew = 0;
	int64_t med = median_growth(&g->mk, d);
	for (size_t i = 0; i < n; i++)
		grew += d->mk_live[i + 1] > d->mk_live[i];
	int64_t total = (int64_t)(d->mk_live[n] - d->mk_live[0]);
	fprintf(f,
		"  per iteration (%s \"%s\", %zu iterations): %s%s per iteration (median), "
		"%s%s over all; grew in %zu of %zu",
		g->mk.source, g->mk.name, n, med < 0 ? "-" : "+",
		fmt_size(b1, med < 0 ? -(uint64_t)med : (uint64_t)med), total < 0 ? "-" : "+",
		fmt_size(b2, total < 0 ? -(uint64_t)total : (uint64_t)total), grew, n);
	size_t shown = 0;
	for (size_t i = 0; i < n && shown < 20; i++)
		if (d->mk_live[i + 1] > d->mk_live[i])
			fprintf(f, "%s%zu", shown++ ? ", " : ": ", i + 1);
	if (grew > shown)
		fprintf(f, ", ...");
	fputc('\n', f);
}

static void print_markers_json(FILE *f, struct growth *g, struct gdev *d)
{
	if (!has_markers(g, d)) {
		fputs("null", f);
		return;
	}
	size_t n = g->mk.n - 1;
	fprintf(f, "{\"source\": \"%s\", \"name\": ", g->mk.source);
	gfo_json_s(f, g->mk.name);
	fprintf(f,
		", \"iterations\": %zu, \"growth_per_iteration_bytes\": %" PRId64
		", \"boundaries\": [",
		n, median_growth(&g->mk, d));
	for (size_t i = 0; i <= n; i++)
		fprintf(f, "%s{\"time_ns\": %" PRId64 ", \"live_bytes\": %" PRIu64 "}",
			i ? ", " : "", trace_rel(g->t, g->mk.times[i]), d->mk_live[i]);
	fputs("], \"growth_bytes\": [", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%" PRId64, i ? ", " : "",
			(int64_t)(d->mk_live[i + 1] - d->mk_live[i]));
	fputs("], \"grew\": [", f);
	for (size_t i = 0, k = 0; i < n; i++)
		if (d->mk_live[i + 1] > d->mk_live[i])
			fprintf(f, "%s%zu", k++ ? ", " : "", i + 1);
	fputs("]}", f);
}

static int chunk_cmp(struct chunk *a, struct chunk *b)
{
	uint64_t ba = a->size * a->count, bb = b->size * b->count;
	if (ba != bb)
		return ba > bb ? -1 : 1;
	return a->size < b->size ? -1 : a->size > b->size;
}

static int dev_cmp(const void *a, const void *b)
{
	const struct gdev *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/* After pass 1: the warm-up end and the slope window. */
static void plan_window(struct growth *g, struct gdev *d)
{
	if (!d->nsteps)
		return;
	/* Not "95% of the final peak": a leak keeps raising the final peak and
	 * would push the warm-up end late. Big steps are warm-up, small ones
	 * after the last big step are creep. */
	d->warmup_end = d->steps[0].time_ns;
	d->warmup_level = d->steps[0].peak;
	for (size_t i = 0; i < d->nsteps; i++)
		if ((double)d->steps[i].step >= WARMUP_STEP * (double)d->steps[i].peak) {
			d->warmup_end = d->steps[i].time_ns;
			d->warmup_level = d->steps[i].peak;
		}
	d->has_warmup = true;
	uint64_t run = g->t1 - g->t0;
	d->growth_stopped = (double)(g->t1 - d->warmup_end) >= SHORT_WINDOW * (double)run;
	d->window_start = d->growth_stopped ? d->warmup_end : g->t0 + run / 2;
	if (!d->growth_stopped)
		d->warmup_level = 0; /* no warm-up to measure against: fit to the end */
}

/* Least squares through the slices' highs up to the window's end. */
static void finish_slope(struct gdev *d)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	int m = 0;
	for (int k = 0; k < SLICES; k++) {
		if (!d->slice_has[k] || d->slice_time[k] > d->window_end)
			continue;
		double x = (double)(d->slice_time[k] - d->window_start) / 1e9;
		double y = (double)d->slice_max[k];
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		m++;
	}
	double den = m * sxx - sx * sx;
	d->points = m;
	d->slope = m >= 3 && den > 0 ? (m * sxy - sx * sy) / den : 0;
}

/* The allocator's growth policy, guessed from the steps: "doubling" (three
 * steps in a row each twice the one before), "preallocation" (one
 * allocation of half the device or more), "fixed blocks" (one size makes
 * 80% or more of at least 3 steps), else "mixed" ("" without steps). */
static const char *pattern(const struct gdev *d, uint64_t total, uint64_t *block)
{
	*block = 0;
	if (!d->nsteps)
		return "";
	int run = 0;
	for (size_t i = 1; i < d->nsteps; i++) {
		run =
		    d->steps[i].size && d->steps[i].size == 2 * d->steps[i - 1].size ? run + 1 : 0;
		if (run >= 2)
			return "doubling";
	}
	struct chunk *ch, *ct, *top = NULL;
	HASH_ITER(hh, d->chunks, ch, ct)
	{
		if (total && ch->size * 2 >= total) {
			*block = ch->size;
			return "preallocation";
		}
		if (!top || ch->count > top->count)
			top = ch;
	}
	if (top && d->steps_total >= 3 && (double)top->count >= 0.8 * (double)d->steps_total) {
		*block = top->size;
		return "fixed blocks";
	}
	return "mixed";
}

static void print_chart(FILE *f, struct growth *g, struct gdev *d)
{
	if (!d->peak)
		return;
	bool u = gfo_utf8();
	static const char *blocks[9] = {" ",	  "\u2581", "\u2582", "\u2583", "\u2584",
					"\u2585", "\u2586", "\u2587", "\u2588"};
	char b[32];
	fprintf(f, "  live bytes over time\n");
	for (int r = CHART_HEIGHT - 1; r >= 0; r--) {
		if (r == CHART_HEIGHT - 1)
			fprintf(f, "  %*s |", CHART_LABEL_W - 2, fmt_size(b, d->peak));
		else if (r == 0)
			fprintf(f, "  %*s |", CHART_LABEL_W - 2, "0 B");
		else
			fprintf(f, "  %*s |", CHART_LABEL_W - 2, "");
		for (int c = 0; c < g->ncols; c++) {
			uint64_t v = d->cols[c];
			int eighths = (int)((unsigned __int128)v * CHART_HEIGHT * 8 / d->peak);
			int fill = eighths - r * 8;
			fill = fill < 0 ? 0 : fill > 8 ? 8 : fill;
			if (u)
				fputs(blocks[fill], f);
			else
				fputc(fill == 8 ? '#' : fill > 0 ? '.' : ' ', f);
		}
		fputc('\n', f);
	}
	char b2[32];
	fprintf(f, "  %*s  %-*s%s\n", CHART_LABEL_W - 2, "", g->ncols / 2,
		gfo_time(b, trace_rel(g->t, g->t0)), gfo_time(b2, trace_rel(g->t, g->t1)));
}

static void print_dev_human(FILE *f, struct growth *g, struct gdev *d)
{
	struct trace *t = g->t;
	char b1[32], b2[32], b3[32], b4[32], site[512];
	uint64_t total = gfo_dev_total(t, d->ordinal);
	fprintf(f, "\ndevice %" PRId64, d->ordinal);
	if (total)
		fprintf(f, " (%s)", fmt_size(b1, total));
	fprintf(f, ": peak %s at %s in %" PRIu64 " steps; live at the end %s\n",
		fmt_size(b2, d->peak), gfo_time(b3, trace_rel(t, d->peak_time)), d->steps_total,
		fmt_size(b4, d->last_bytes));
	if (!d->steps_total)
		return;
	fprintf(f, "  high-water mark steps\n  %12s %11s %11s %11s  %-22s %s\n", "time", "new peak",
		"step", "allocation", "api", "site");
	size_t show = d->nsteps < HUMAN_STEPS ? d->nsteps : HUMAN_STEPS;
	for (size_t i = 0; i < show; i++) {
		const struct step *s = &d->steps[i];
		fprintf(f, "  %12s %11s %11s %11s  %-22s %s\n",
			gfo_time(b1, trace_rel(t, s->time_ns)), fmt_size(b2, s->peak),
			fmt_size(b3, s->step), fmt_size(b4, s->size), api_name(s->api),
			gfo_site(t, s->stack_id, site, sizeof(site)));
	}
	if (d->steps_total > show)
		fprintf(f, "  ... %" PRIu64 " more steps (--json lists up to %d)\n",
			d->steps_total - show, MAX_STEPS);

	fprintf(f, "  sizes of the allocations that raised the peak\n  %11s %8s %11s\n", "size",
		"count", "bytes");
	int k = 0;
	struct chunk *ch, *ct;
	HASH_ITER(hh, d->chunks, ch, ct)
	{
		if (k++ == HUMAN_CHUNKS) {
			fprintf(f, "  ... %u more sizes\n", HASH_COUNT(d->chunks) - HUMAN_CHUNKS);
			break;
		}
		fprintf(f, "  %11s %8" PRIu64 " %11s", fmt_size(b1, ch->size), ch->count,
			fmt_size(b2, ch->size * ch->count));
		if (total && ch->size * 2 >= total)
			fprintf(f, "  (%.0f%% of the device in one allocation: a preallocation)",
				100.0 * (double)ch->size / (double)total);
		fputc('\n', f);
	}

	uint64_t block;
	const char *pat = pattern(d, total, &block);
	fprintf(f, "  growth pattern: %s", pat);
	if (block)
		fprintf(f, " (%s)", fmt_size(b1, block));
	fputc('\n', f);
	fprintf(f, "  warm-up ends at %s (the last step of 5%% or more, to %s)\n",
		gfo_time(b1, trace_rel(t, d->warmup_end)), fmt_size(b2, d->warmup_level));
	if (!d->growth_stopped)
		fprintf(f,
			"  growth did not stop: the warm-up ends in the last 25%% of the run, so "
			"the slope covers the second half\n");
	if (d->points >= 3) {
		fprintf(f, "  after %s: live bytes %s%s/s (%s%s over %s, %" PRIu64 " samples)%s\n",
			gfo_time(b1, trace_rel(t, d->window_start)), d->slope <= -0.5 ? "-" : "+",
			fmt_size(b2, (uint64_t)(d->slope < 0 ? -d->slope : d->slope)),
			d->rise <= -0.5 ? "-" : "+",
			fmt_size(b3, (uint64_t)(d->rise < 0 ? -d->rise : d->rise)),
			gfo_dur(b4, (int64_t)(d->window_end - d->window_start)), d->n,
			d->leak ? ": LIKELY LEAK" : ": no leak");
	} else {
		fprintf(f, "  after %s: too few samples (%" PRIu64 ") for a slope\n",
			gfo_time(b1, trace_rel(t, d->window_start)), d->n);
	}
	print_markers_human(f, g, d);
	print_chart(f, g, d);
}

static int64_t iround(double v)
{
	return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

static void print_dev_json(FILE *f, struct growth *g, struct gdev *d, bool first)
{
	struct trace *t = g->t;
	char site[512];
	fprintf(f,
		"%s\n   {\"index\": %" PRId64 ", \"total_bytes\": %" PRIu64
		", \"peak_bytes\": %" PRIu64 ", \"peak_time_ns\": %" PRId64
		", \"live_bytes_at_end\": %" PRIu64 ", \"steps_total\": %" PRIu64 ", \"steps\": [",
		first ? "" : ",", d->ordinal, gfo_dev_total(t, d->ordinal), d->peak,
		d->steps_total ? trace_rel(t, d->peak_time) : 0, d->last_bytes, d->steps_total);
	for (size_t i = 0; i < d->nsteps; i++) {
		const struct step *s = &d->steps[i];
		fprintf(f,
			"%s\n    {\"time_ns\": %" PRId64 ", \"peak_bytes\": %" PRIu64
			", \"step_bytes\": %" PRIu64 ", \"size\": %" PRIu64 ", \"api\": ",
			i ? "," : "", trace_rel(t, s->time_ns), s->peak, s->step, s->size);
		gfo_json_s(f, api_name(s->api));
		fprintf(f, ", \"stack_id\": %" PRIu64 ", \"site\": ", s->stack_id);
		gfo_json_s(f, gfo_site(t, s->stack_id, site, sizeof(site)));
		fputc('}', f);
	}
	fputs("],\n    \"chunk_sizes\": [", f);
	struct chunk *ch, *ct;
	int k = 0;
	HASH_ITER(hh, d->chunks, ch, ct)
	{
		fprintf(f,
			"%s{\"size\": %" PRIu64 ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			k++ ? ", " : "", ch->size, ch->count, ch->size * ch->count);
	}
	uint64_t block;
	fputs("],\n    \"pattern\": ", f);
	gfo_json_s(f, pattern(d, gfo_dev_total(t, d->ordinal), &block));
	fprintf(f, ", \"pattern_block_bytes\": %" PRIu64, block);
	fprintf(f,
		",\n    \"warmup_end_ns\": %" PRId64 ", \"growth_stopped\": %s"
		", \"slope_window_start_ns\": %" PRId64 ", \"slope_window_end_ns\": %" PRId64
		", \"slope_samples\": %" PRIu64 ", \"slope_bytes_per_s\": ",
		d->has_warmup ? trace_rel(t, d->warmup_end) : 0,
		d->growth_stopped ? "true" : "false",
		d->has_warmup ? trace_rel(t, d->window_start) : 0,
		d->has_warmup && d->n ? trace_rel(t, d->window_end) : 0, d->n);
	fprintf(f, "%" PRId64 ", \"rise_bytes\": %" PRId64, iround(d->slope), iround(d->rise));
	fprintf(f, ", \"likely_leak\": %s, \"markers\": ", d->leak ? "true" : "false");
	print_markers_json(f, g, d);
	fprintf(f,
		",\n    \"chart\": {\"start_ns\": %" PRId64 ", \"end_ns\": %" PRId64
		", \"max_bytes\": [",
		trace_rel(t, g->t0), trace_rel(t, g->t1));
	for (int c = 0; c < g->ncols; c++)
		fprintf(f, "%s%" PRIu64, c ? ", " : "", d->cols[c]);
	fputs("]}}", f);
}

static void gdev_free(struct gdev *d)
{
	free(d->steps);
	free(d->cols);
	free(d->mk_live);
	struct chunk *ch, *ct;
	HASH_ITER(hh, d->chunks, ch, ct)
	{
		HASH_DEL(d->chunks, ch);
		free(ch);
	}
}

struct proc {
	uint64_t peak, live_end;
};

/* Two passes over one trace: the first fills the chart and plans the
 * window, the second measures inside it. Returns the read's exit code, or -1. */
static int growth_replay(struct growth *g, struct trace *t)
{
	int r = -1;
	for (g->pass = 1; g->pass <= 2; g->pass++) {
		replay_init(&g->rp);
		for (size_t k = 0; k < g->ndevs; k++)
			g->devs[k].last_bytes = 0;
		r = trace_replay(t, NULL, on_event, g);
		boundaries_before(g, UINT64_MAX);
		if (g->pass == 1)
			for (size_t k = 0; k < g->ndevs; k++) {
				chart_fill(g, &g->devs[k], g->ncols - 1);
				plan_window(g, &g->devs[k]);
			}
		replay_free(&g->rp);
		if (r >= 0)
			break; /* a read error: report what pass 1 found */
	}
	return r;
}

/* Each device's slope over its window, and the verdict from it. */
static void growth_verdicts(struct growth *g)
{
	for (size_t k = 0; k < g->ndevs; k++) {
		struct gdev *d = &g->devs[k];
		finish_slope(d);
		d->rise = d->slope * (double)(d->window_end - d->window_start) / 1e9;
		double thr = LEAK_PEAK_FRAC * (double)d->peak;
		if (thr < (double)LEAK_MIN_BYTES)
			thr = (double)LEAK_MIN_BYTES;
		d->leak = d->points >= 3 && d->rise >= thr;
		HASH_SORT(d->chunks, chunk_cmp);
	}
}

static void growth_print(FILE *f, struct growth *g, int first)
{
	if (g->o->json) {
		fprintf(f, "%s\n  {", first ? "" : ",");
		gfo_json_head(f, g->t);
		fprintf(f,
			", \"peak_bytes\": %" PRIu64 ", \"live_bytes_at_end\": %" PRIu64
			",\n   \"devices\": [",
			g->process_peak, g->process_live);
		for (size_t k = 0; k < g->ndevs; k++)
			print_dev_json(f, g, &g->devs[k], k == 0);
		fputs("]}", f);
	} else {
		if (!first)
			fputc('\n', f);
		gfo_human_head(f, g->t);
		if (!g->ndevs)
			fprintf(f, "  no device memory was allocated\n");
		for (size_t k = 0; k < g->ndevs; k++)
			print_dev_human(f, g, &g->devs[k]);
	}
}

static void growth_totals(FILE *f, const struct gfo_opts *o, struct trace *ts,
			  const struct proc *procs)
{
	uint64_t sum = 0, *peaks = xrealloc(NULL, (size_t)o->npaths * sizeof(*peaks));
	struct trace **tps = xrealloc(NULL, (size_t)o->npaths * sizeof(*tps));
	for (int i = 0; i < o->npaths; i++) {
		sum += procs[i].peak;
		peaks[i] = procs[i].peak;
		tps[i] = &ts[i];
	}
	if (o->json) {
		fprintf(f,
			"],\n \"totals\": {\"processes\": %d, \"peak_bytes_sum\": %" PRIu64
			", \"imbalance\": ",
			o->npaths, sum);
		trace_imbalance_json(f, peaks, (size_t)o->npaths);
		fputs("}}\n", f);
	} else if (o->npaths > 1) {
		char b1[32], b2[32], lab[128];
		fprintf(f, "\npeaks per process (device memory)\n  %-40s %11s %11s\n", "process",
			"peak", "at end");
		for (int i = 0; i < o->npaths; i++)
			fprintf(f, "  %-40.40s %11s %11s\n", trace_label(&ts[i], lab, sizeof(lab)),
				fmt_size(b1, procs[i].peak), fmt_size(b2, procs[i].live_end));
		fprintf(f, "  %-40s %11s\n", "total", fmt_size(b1, sum));
		trace_imbalance_text(f, "peak", peaks, tps, (size_t)o->npaths);
	}
	free(peaks);
	free(tps);
}

int cmd_growth(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct gfo_opts o = {0};
	int64_t width = 0;
	const struct option opts[] = {
	    OPT_BOOL("json", &o.json, "one JSON object instead of text (keys: docs/cli.md)"),
	    OPT_INT("device", &o.device, "N", 0, INT32_MAX, "only device N",
		    .given = &o.has_device),
	    OPT_INT("width", &width, "COLS", 10, 1000,
		    "chart width in columns, 10..1000 (default: $COLUMNS, else 80)"),
	    OPT_END(),
	};
	int rc = opt_parse(&usage, opts, argc, argv, &o.paths, &o.npaths);
	if (rc >= 0)
		return rc;
	o.width = (int)width;
	if (!width) {
		const char *c = getenv("COLUMNS");
		width = c && atoi(c) >= 10 && atoi(c) <= 1000 ? atoi(c) : 80;
	}
	struct trace *ts;
	rc = gfo_open_all(cmd, &o, &ts);
	if (rc >= 0) {
		free(o.paths);
		return rc;
	}
	FILE *f = stdout;
	struct proc *procs = xrealloc(NULL, (size_t)o.npaths * sizeof(*procs));
	int worst = 0;
	if (o.json)
		fputs("{\"traces\": [", f);
	for (int i = 0; i < o.npaths; i++) {
		struct growth g = {.t = &ts[i], .o = &o};
		g.ncols = width - CHART_LABEL_W - 3;
		if (g.ncols < 8)
			g.ncols = 8;
		g.t0 = ts[i].events ? ts[i].first_time_ns : 0;
		g.t1 = ts[i].events ? ts[i].last_time_ns : 0;
		plan_markers(&ts[i], &g.mk);
		if (o.has_device)
			gdev_get(&g, o.device);
		int r = growth_replay(&g, &ts[i]);
		if (r > worst)
			worst = r;
		if (g.ndevs)
			qsort(g.devs, g.ndevs, sizeof(*g.devs), dev_cmp);
		growth_verdicts(&g);
		procs[i] = (struct proc){g.process_peak, g.process_live};
		growth_print(f, &g, i == 0);
		for (size_t k = 0; k < g.ndevs; k++)
			gdev_free(&g.devs[k]);
		free(g.devs);
		free(g.mk.times);
	}
	growth_totals(f, &o, ts, procs);
	free(procs);
	free(o.paths);
	return gfo_finish_all(ts, o.npaths, worst);
}
