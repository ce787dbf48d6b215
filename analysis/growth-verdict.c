/* growth's verdict: leak, no leak, or undetermined (see growth.h).
 *
 * The rules, on the rises of a level over positions (iterations, or ns):
 *  - rises closer than `merge` make one step (a warm-up's burst, a segment
 *    and its neighbour);
 *  - a ramp: the last step spans min_steady or more up to the last
 *    activity (within merge): growing, its rate over the ramp's second
 *    half (so a warm-up at its start does not count); or rises in each of
 *    the last 3 stretches of min_steady (a ramp with pauses);
 *  - a staircase: the last 4 (else 3) steps start at regular intervals
 *    (the longest at most twice the shortest; the steps before them that
 *    keep it count too), or their bytes last as long at one rate (a pool
 *    that doubles), over min_steady or more, and the last activity came
 *    within two intervals of the last: growing, its rate from the first of
 *    those steps to the last;
 *  - steady: flat to the end for min_steady, for two intervals of a
 *    staircase, and for as long as the growth before it lasted;
 *  - growing and not steady: a leak. Steady: no leak (growth stopped and
 *    a steady state followed, however late). Else undetermined: the run
 *    ended too soon after the last rise.
 *  - growing up to the last driver call, then steady to the exit without
 *    one: no leak after a few steps (a warm-up's batch shapes), else
 *    undetermined (a leak the end of the run cut short looks the same).
 * With iterations the last activity is the last iteration, so growth that
 * reaches it is never steady; without, it is the last driver call, and
 * the process may run on to its exit without one (a settled cache). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/growth.h"
#include "analysis/report-base.h"
#include "reader/xalloc.h"

#define MERGE_ITERS	   2  /* rises within 2 iterations are one step */
#define STEADY_ITERS	   8  /* 8 iterations without a rise: a steady state */
#define MERGE_RUN_PERCENT  2  /* without iterations: 2% of the active run */
#define STEADY_RUN_PERCENT 10 /* and 10% of it */
#define CUT_STEPS	   5  /* steps to the last call, then none: a leak cut short? */
#define GAP_FACTOR	   2  /* steady: flat for twice the longest gap between steps */

struct cluster {
	uint64_t start, end;
	size_t last;	/* index of its last rise */
	uint64_t bytes; /* what it raised the level by */
};

static void leak(struct growth_verdict *v, enum growth_shape shape, uint64_t fx, uint64_t fl,
		 uint64_t tx, uint64_t tl)
{
	v->kind = GV_LEAK;
	v->shape = shape;
	v->from_x = fx;
	v->from_level = fl;
	v->to_x = tx;
	v->to_level = tl;
	v->rate = tx > fx ? (double)(tl - fl) / (double)(tx - fx) : 0;
}

/* Whether steps c[k - m .. k - 1] start at regular intervals (the longest
 * at most twice the shortest); *period: the mean interval. */
static bool regular(const struct cluster *c, size_t k, size_t m, uint64_t *period)
{
	uint64_t gmin = UINT64_MAX, gmax = 0;
	for (size_t i = k - m + 1; i < k; i++) {
		uint64_t g = c[i].start - c[i - 1].start;
		gmin = g < gmin ? g : gmin;
		gmax = g > gmax ? g : gmax;
	}
	uint64_t span = c[k - 1].start - c[k - m].start;
	*period = span / (m - 1);
	return gmax <= 2 * gmin;
}

/* The start of the staircase: back from the last step while the intervals
 * stay within a factor of 2 of period. */
static size_t stairs_start(const struct cluster *c, size_t k, uint64_t period)
{
	size_t i = k - 1;
	while (i > 0) {
		uint64_t g = c[i].start - c[i - 1].start;
		if (g > 2 * period || 2 * g < period)
			break;
		i--;
	}
	return i;
}

/* A ramp: the last step spans min_steady or more and runs to the last
 * activity (act after it, within merge). Its rate over its second half. */
static bool ramp(const struct growth_series *s, const struct cluster *cl, uint64_t act,
		 struct growth_verdict *v)
{
	if (cl->end - cl->start < s->min_steady || act > s->merge)
		return false;
	size_t first = cl->last;
	while (first > 0 && s->rises[first - 1].x >= cl->start)
		first--;
	uint64_t mid = cl->start + (cl->end - cl->start) / 2;
	size_t j = first;
	while (j < cl->last && s->rises[j + 1].x <= mid)
		j++;
	leak(v, GV_RAMP, s->rises[j].x, s->rises[j].level, cl->end, v->level);
	v->start_x = cl->start;
	v->grew_for = cl->end - cl->start;
	v->grew_steps = cl->last - first + 1;
	return true;
}

/* Dense growth: a rise in each of the last 3 stretches of min_steady before
 * the last rise, which runs to the last activity (within merge): a ramp
 * with pauses (a loaded machine). Its rate over those 3 stretches; it grew
 * for as long as every stretch before them had a rise too. */
static bool dense(const struct growth_series *s, uint64_t act, struct growth_verdict *v)
{
	uint64_t w = s->min_steady, last = s->rises[s->n - 1].x;
	if (act > s->merge || !w || last - s->x0 < 3 * w)
		return false;
	size_t j = s->n, k = 0; /* k: stretches back from `last` with a rise */
	while (j > 0) {
		uint64_t back = (last - s->rises[j - 1].x) / w;
		if (back > k)
			break; /* a stretch without a rise */
		if (back == k)
			k++;
		j--;
		if (k == 3 && (j == 0 || (last - s->rises[j - 1].x) / w >= 3))
			leak(v, GV_RAMP, last - 3 * w, j ? s->rises[j - 1].level : s->base, last,
			     v->level);
	}
	if (k < 3)
		return false;
	v->start_x = s->rises[j].x;
	v->grew_for = last - s->rises[j].x;
	v->grew_steps = s->n - j;
	return true;
}

/* Whether steps c[k - m .. k - 2] hold their memory for as long as one
 * another at one rate (bytes over the time to the next step, the fastest
 * at most twice the slowest): a doubling pool (TF's BFC) keeping a leak.
 * *period: the time the last step's bytes would last at the mean rate. */
static bool regular_rate(const struct growth_series *s, const struct cluster *c, size_t k, size_t m,
			 uint64_t *period)
{
	double rmin = 0, rmax = 0, bytes = 0;
	for (size_t i = k - m; i + 1 < k; i++) {
		double b = (double)c[i].bytes, r = b / (double)(c[i + 1].start - c[i].start);
		rmin = i == k - m || r < rmin ? r : rmin;
		rmax = i == k - m || r > rmax ? r : rmax;
		bytes += b;
	}
	double rate = bytes / (double)(c[k - 1].start - c[k - m].start);
	*period = (uint64_t)((double)c[k - 1].bytes / rate);
	return rmax <= 2 * rmin;
}

/* A staircase: the last 4 (else 3) steps regular, in interval or in rate,
 * running to the last activity (act after the last, within two
 * intervals). v->grew_for: how long it kept its interval, even when it
 * did not reach the end. */
static bool stairs(const struct growth_series *s, const struct cluster *c, size_t k, uint64_t act,
		   struct growth_verdict *v)
{
	/* by interval (4 steps, then 3), then by rate (4, then 3) */
	for (size_t pass = 0; pass < 4; pass++) {
		size_t m = (pass % 2 ? 3 : 4) > k ? k : (pass % 2 ? 3 : 4);
		uint64_t period;
		const struct cluster *f = &c[k - m], *cl = &c[k - 1];
		size_t i = k - m;
		if (m < 3)
			break;
		if (pass < 2 && regular(c, k, m, &period))
			i = stairs_start(c, k, period);
		else if (pass < 2 || !regular_rate(s, c, k, m, &period))
			continue;
		/* kept so for min_steady at least */
		if (cl->start - c[i].start < s->min_steady)
			continue;
		v->period = period;
		v->grew_for = cl->start - c[i].start;
		v->grew_steps = k - i;
		if (act > 2 * period) {
			v->shape = GV_STOPPED;
			return false;
		}
		leak(v, GV_STAIRS, f->start, s->rises[f->last].level, cl->start, v->level);
		v->start_x = f->start;
		return true;
	}
	return false;
}

void growth_decide(const struct growth_series *s, struct growth_verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->level = s->n ? s->rises[s->n - 1].level : s->base;
	v->last_rise = s->x0;
	v->steady = s->xend - s->x0;
	v->shape = GV_FLAT;
	if (!s->n) {
		v->kind = v->steady >= s->min_steady ? GV_NO_LEAK : GV_UNDETERMINED;
		return;
	}
	struct cluster *c = xcalloc(s->n, sizeof(*c));
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t x = s->rises[i].x;
		uint64_t up = s->rises[i].level - (i ? s->rises[i - 1].level : s->base);
		if (k && x - c[k - 1].end <= s->merge) {
			c[k - 1].end = x;
			c[k - 1].last = i;
			c[k - 1].bytes += up;
		} else {
			c[k++] = (struct cluster){x, x, i, up};
		}
	}
	v->steps = k;
	/* the longest quiet stretch between steps: a steady state must be
	 * clearly longer, or the next step may just not have come yet */
	for (size_t i = 1; i < k; i++)
		if (c[i].start - c[i - 1].end > v->max_gap)
			v->max_gap = c[i].start - c[i - 1].end;
	v->last_rise = c[k - 1].end;
	v->steady = s->xend - c[k - 1].end;
	uint64_t act = s->xlast > c[k - 1].end ? s->xlast - c[k - 1].end : 0;
	bool growing = ramp(s, &c[k - 1], act, v) || stairs(s, c, k, act, v) || dense(s, act, v);
	/* Flat for min_steady, two intervals of a staircase, and as long as
	 * it grew: it stopped. */
	v->need = s->min_steady;
	if (GAP_FACTOR * v->max_gap > v->need)
		v->need = GAP_FACTOR * v->max_gap;
	bool steady = v->steady >= s->min_steady && v->steady > 2 * v->period &&
		      v->steady >= v->grew_for && v->steady >= GAP_FACTOR * v->max_gap;
	/* It grew up to the last call, then ran on without one for longer:
	 * a warm-up's few steps (a batch shape each) settled; many could as
	 * well be a leak cut short by the end of the run, unless the process
	 * ran on twice as long as it grew without a call: a leak's loop would
	 * have had to end right at its last rise (a settled cache makes no
	 * call, and this keeps the verdict off the run's timing). */
	if (growing && steady) {
		v->shape =
		    v->grew_steps >= CUT_STEPS && v->steady < 2 * v->grew_for ? GV_CUT : GV_STOPPED;
		steady = v->shape == GV_STOPPED;
		growing = false;
	}
	if (!growing) {
		v->kind = steady ? GV_NO_LEAK : GV_UNDETERMINED;
		v->rate = 0;
		if (v->shape != GV_STOPPED && v->shape != GV_CUT)
			v->shape = steady ? GV_SETTLED : GV_SHORT;
	}
	free(c);
}

const char *growth_kind_name(enum growth_kind k)
{
	return k == GV_LEAK ? "leak" : k == GV_NO_LEAK ? "no-leak" : "undetermined";
}

size_t growth_iterations(const struct growth_result *g)
{
	return g->mk.n >= 2 ? g->mk.n - 1 : 0;
}

const char *growth_iteration_source(const struct growth_result *g)
{
	if (!growth_iterations(g))
		return "none";
	return !strcmp(g->mk.source, "pattern") ? "pattern" : "ranges";
}

uint64_t growth_x_time(const struct growth_result *g, uint64_t x)
{
	return growth_iterations(g) ? g->mk.times[x] : x;
}

bool growth_rate_per_step(const struct growth_result *g, const struct growth_dev *d, double *rate)
{
	*rate = d->v.kind == GV_LEAK && !d->v.rate_hidden ? d->v.rate : 0;
	return growth_iterations(g) > 0 && !d->v.rate_hidden;
}

double growth_rate_per_s(const struct growth_result *g, const struct growth_dev *d)
{
	if (d->v.kind != GV_LEAK || d->v.rate_hidden)
		return 0;
	uint64_t t0 = growth_x_time(g, d->v.from_x), t1 = growth_x_time(g, d->v.to_x);
	return t1 > t0 ? (double)(d->v.to_level - d->v.from_level) * 1e9 / (double)(t1 - t0) : 0;
}

/* " (peak within a step X)" when the peak is above the level between
 * iterations (the level is the least live inside each), else "". */
static const char *peak_within(const struct growth_dev *d, char *buf, size_t size)
{
	char b[32];
	buf[0] = 0;
	if (d->peak > d->v.level)
		snprintf(buf, size, " (peak within a step %s)", fmt_size(b, d->peak));
	return buf;
}

/* The reason with iterations: positions are iteration indices. */
static void reason_iters(const struct growth_result *g, const struct growth_dev *d, char *buf,
			 size_t size)
{
	const struct growth_verdict *v = &d->v;
	uint64_t n = growth_iterations(g);
	char b[32], pk[64];
	if (v->kind == GV_LEAK && v->shape == GV_RAMP)
		snprintf(buf, size,
			 "grew in every iteration from %" PRIu64 " to %" PRIu64 " of %" PRIu64,
			 v->start_x + 1, v->to_x + 1, n);
	else if (v->kind == GV_LEAK)
		snprintf(buf, size,
			 "grew in steps every ~%" PRIu64 " iterations up to iteration %" PRIu64
			 " of %" PRIu64,
			 v->period, v->to_x + 1, n);
	else if (v->shape == GV_FLAT && v->kind == GV_NO_LEAK)
		snprintf(buf, size,
			 "flat between iterations at %s%s across all %" PRIu64 " iterations",
			 fmt_size(b, v->level), peak_within(d, pk, sizeof(pk)), n);
	else if (v->kind == GV_NO_LEAK)
		snprintf(buf, size,
			 "%ssteady between iterations at %s%s for the last %" PRIu64 " of %" PRIu64
			 " iterations (the last rise was in iteration %" PRIu64 ")",
			 v->shape == GV_STOPPED ? "grew in regular steps, then stopped: " : "",
			 fmt_size(b, v->level), peak_within(d, pk, sizeof(pk)), v->steady, n,
			 v->last_rise + 1);
	else if (v->shape == GV_FLAT)
		snprintf(buf, size,
			 "only %" PRIu64 " iterations: %d without a rise are needed to call it "
			 "a steady state",
			 n, STEADY_ITERS);
	else if (v->shape == GV_STOPPED)
		snprintf(buf, size,
			 "grew in regular steps every ~%" PRIu64 " iterations for %" PRIu64
			 ", then flat for the last %" PRIu64
			 ": too short to tell whether it stopped",
			 v->period, v->grew_for, v->steady);
	else if (!v->steady)
		snprintf(buf, size,
			 "memory still rose in the last iteration (%" PRIu64 " of %" PRIu64
			 "): too soon to tell a leak from a warm-up",
			 v->last_rise + 1, n);
	else if (v->max_gap * GAP_FACTOR > STEADY_ITERS)
		snprintf(buf, size,
			 "the run ended %" PRIu64
			 " iterations after memory last rose (iteration %" PRIu64 " of %" PRIu64
			 "): too soon to tell a leak from a warm-up (it went %" PRIu64
			 " iterations between rises before, so %" PRIu64 " without one are needed)",
			 v->steady, v->last_rise + 1, n, v->max_gap, v->need);
	else
		snprintf(buf, size,
			 "the run ended %" PRIu64
			 " iterations after memory last rose (iteration %" PRIu64 " of %" PRIu64
			 "): too soon to tell a leak from a warm-up (%d are needed)",
			 v->steady, v->last_rise + 1, n, STEADY_ITERS);
}

/* Without iterations, where the run ends: the process's exit (the
 * sampler's reading at exit, else the trailer's time), else the last
 * event. */
static uint64_t growth_time_end(const struct growth_result *g)
{
	/* the sampler's last reading, at exit, before the tracer's own
	 * flush; else the trailer */
	uint64_t end = trace_end_ns(g->t);
	for (size_t i = g->t->nsamples; i-- > 0;)
		if (g->t->samples[i].reason == GMT_SAMPLE_WHY_END) {
			end = g->t->samples[i].time_ns;
			break;
		}
	return end > g->t1 ? end : g->t1;
}

/* What that end is: "the process's exit", "the end of the trace", "the
 * trace's cut" or "the last driver call". */
static const char *growth_end_name(const struct growth_result *g)
{
	for (size_t i = g->t->nsamples; i-- > 0;)
		if (g->t->samples[i].reason == GMT_SAMPLE_WHY_END)
			return growth_time_end(g) == g->t->samples[i].time_ns
				   ? "the process's exit"
				   : "the last driver call";
	if (!g->t->has_trailer)
		return growth_time_end(g) > g->t1 ? "the trace's cut" : "the last driver call";
	return growth_time_end(g) > g->t1 ? "the end of the trace" : "the last driver call";
}

/* The reason without iterations: positions are times. */
static void reason_time(const struct growth_result *g, const struct growth_dev *d, char *buf,
			size_t size)
{
	const struct growth_verdict *v = &d->v;
	char b1[32], b2[32], b3[32], b4[32];
	if (v->kind == GV_LEAK && v->shape == GV_RAMP)
		snprintf(buf, size, "kept rising from %s to %s (%s), with no steady stretch",
			 rb_time(b1, trace_rel(g->t, v->start_x)), growth_end_name(g),
			 rb_time(b2, trace_rel(g->t, growth_time_end(g))));
	else if (v->kind == GV_LEAK)
		snprintf(buf, size, "grew in steps every ~%s up to %s, %s before %s (%s)",
			 rb_dur(b1, (int64_t)v->period), rb_time(b2, trace_rel(g->t, v->to_x)),
			 rb_dur(b3, (int64_t)v->steady), growth_end_name(g),
			 rb_time(b4, trace_rel(g->t, growth_time_end(g))));
	else if (v->shape == GV_FLAT && v->kind == GV_NO_LEAK)
		snprintf(buf, size, "flat at %s over the whole run", fmt_size(b1, v->level));
	else if (v->kind == GV_NO_LEAK)
		snprintf(buf, size,
			 "%sno new high-water mark for %s, from its last rise at %s (to %s) to %s "
			 "(%s)",
			 v->shape == GV_STOPPED ? "grew in regular steps, then stopped: " : "",
			 rb_dur(b1, (int64_t)v->steady), rb_time(b2, trace_rel(g->t, v->last_rise)),
			 fmt_size(b3, v->level), growth_end_name(g),
			 rb_time(b4, trace_rel(g->t, growth_time_end(g))));
	else if (v->shape == GV_CUT) /* the peak line's figures: every step, first to peak */
		snprintf(buf, size,
			 "grew in %" PRIu64 " rises over %s up to the last driver call (%s), then "
			 "the process ran %s more without one: a leak cut short by the end of the "
			 "run, or a cache that settled (NVTX ranges would decide)",
			 d->steps_total,
			 rb_dur(b1, (int64_t)(d->nsteps ? d->peak_time - d->steps[0].time_ns : 0)),
			 rb_time(b2, trace_rel(g->t, v->last_rise)),
			 rb_dur(b3, (int64_t)v->steady));
	else if (v->shape == GV_STOPPED)
		snprintf(buf, size,
			 "grew in regular steps every ~%s for %s, then no new high-water mark for "
			 "the last %s: too short to tell whether it stopped (mark the iterations "
			 "with NVTX ranges to decide)",
			 rb_dur(b1, (int64_t)v->period), rb_dur(b2, (int64_t)v->grew_for),
			 rb_dur(b3, (int64_t)v->steady));
	else if (v->need > v->max_gap * GAP_FACTOR)
		snprintf(
		    buf, size,
		    "the run ended %s after memory last rose (at %s): with no iterations to "
		    "count, a steady state needs %d%% of the time from the first allocation to the "
		    "last driver call without a rise",
		    rb_dur(b1, (int64_t)v->steady), rb_time(b2, trace_rel(g->t, v->last_rise)),
		    STEADY_RUN_PERCENT);
	else
		snprintf(buf, size,
			 "%s without a new high-water mark after the last rise (at %s), but it "
			 "went %s between rises before: too soon to tell a leak from a warm-up "
			 "(%s without one are needed)",
			 rb_dur(b1, (int64_t)v->steady), rb_time(b2, trace_rel(g->t, v->last_rise)),
			 rb_dur(b3, (int64_t)v->max_gap), rb_dur(b4, (int64_t)v->need));
}

/* The reason a leak's shape was not called a leak (doubt()). */
static void reason_doubt(const struct growth_result *g, const struct growth_dev *d, char *buf,
			 size_t size)
{
	/* under 200 characters: explain keeps the reason in 200 */
	const struct growth_verdict *v = &d->v;
	char b1[32], b2[32], b3[32];
	if (v->shape == GV_OOM)
		snprintf(buf, size,
			 "memory grew to %s, then an out-of-memory failure at %s: growth before "
			 "an OOM is the working set as much as memory kept (gpumemtrace oom says "
			 "why it failed)",
			 fmt_size(b1, v->level), rb_time(b2, trace_rel(g->t, g->last_oom)));
	else if (v->shape == GV_FELL)
		snprintf(buf, size,
			 "memory grew to %s, but only %s was live at the end: it was given back, "
			 "so the growth was not kept",
			 fmt_size(b1, v->level), fmt_size(b2, d->last_bytes));
	else if (v->shape == GV_CUTOFF)
		snprintf(buf, size,
			 "memory rose up to where the trace was cut (%s, no trailer): too soon to "
			 "tell a leak from a warm-up",
			 rb_time(b1, trace_rel(g->t, growth_time_end(g))));
	else
		snprintf(
		    buf, size,
		    "the pool doubles its regions: the run ended %s after the last, under the "
		    "%s a steady state needs (twice the longest gap between rises, %s): a leak "
		    "and a warm-up look alike",
		    rb_dur(b1, (int64_t)v->steady), rb_dur(b2, (int64_t)v->need),
		    rb_dur(b3, (int64_t)v->max_gap));
}

const char *growth_reason(const struct growth_result *g, const struct growth_dev *d, char *buf,
			  size_t size)
{
	uint64_t total = rb_dev_total(g->t, d->ordinal);
	if (!d->steps_total && !growth_iterations(g))
		snprintf(buf, size, "no device memory was allocated");
	else if (d->v.shape == GV_BLIND)
		snprintf(buf, size,
			 "one allocation holds %.0f%% of the device (a preallocated pool, as TF "
			 "and JAX make): what happens inside it makes no driver call, so a leak "
			 "in it cannot be seen",
			 total ? 100.0 * (double)d->prealloc / (double)total : 0.0);
	else if (d->v.shape >= GV_OOM)
		reason_doubt(g, d, buf, size);
	else if (growth_iterations(g))
		reason_iters(g, d, buf, size);
	else
		reason_time(g, d, buf, size);
	return buf;
}

static int held_cmp(const void *a, const void *b)
{
	const struct growth_held *x = a, *y = b;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* A leak's site: of the allocations made from `from` to before `to` and
 * still live at the window's end, the site holding the most bytes. */
static void leak_site(struct growth_dev *d, uint64_t from, uint64_t to)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nheld; i++)
		if (d->held[i].time_ns >= from && d->held[i].time_ns < to)
			d->held[n++] = d->held[i];
	if (n > 1)
		qsort(d->held, n, sizeof(*d->held), held_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t bytes = 0;
		for (j = i; j < n && d->held[j].stack_id == d->held[i].stack_id; j++)
			bytes += d->held[j].size;
		if (bytes > d->site_bytes) {
			d->site_bytes = bytes;
			d->site_count = j - i;
			d->site_stack = d->held[i].stack_id;
		}
	}
}

/* The level per iteration: the running maximum of the iterations' floors. */
static size_t iteration_rises(const struct growth_dev *d, size_t n, struct growth_rise *r)
{
	size_t k = 0;
	uint64_t level = d->floor[0];
	for (size_t i = 1; i < n; i++)
		if (d->floor[i] > level) {
			level = d->floor[i];
			r[k++] = (struct growth_rise){i, level};
		}
	return k;
}

/* Without iterations: the high-water mark's steps, from the first to the
 * end of the trace (the process's exit: a caching allocator makes no
 * driver call once it has settled, so the last call is not the end). */
static void series_time(const struct growth_result *g, const struct growth_dev *d,
			struct growth_rise *r, struct growth_series *s)
{
	size_t m = 0;
	for (size_t i = 0; i < d->nsteps; i++)
		r[m++] = (struct growth_rise){d->steps[i].time_ns, d->steps[i].peak};
	if (d->steps_total > d->nsteps) /* the last of those not kept */
		r[m++] = (struct growth_rise){d->peak_time, d->peak};
	/* thresholds from the active run, to the last call: the time the
	 * process takes to exit must not move them */
	uint64_t x0 = m ? r[0].x : g->t0, end = growth_time_end(g);
	uint64_t run = g->t1 > x0 ? g->t1 - x0 : end - x0;
	*s = (struct growth_series){r,
				    m,
				    x0,
				    end,
				    g->t1,
				    0,
				    run * MERGE_RUN_PERCENT / 100,
				    run * STEADY_RUN_PERCENT / 100 + 1};
}

/* A verdict that the run's end makes doubtful: after an out-of-memory
 * failure without iterations (the growth before it is the working set as
 * much as what is kept; a flat end may be a program that gave up); a
 * leak's shape without iterations whose live bytes at the end fell below
 * half the high-water mark (not kept; with iterations, the floors saw it
 * kept, and the end may be a teardown freeing the model), that reaches a
 * trace's cut, or that a pool doubling its regions makes (its steps come
 * ever further apart: a run ending between two is normal). */
static void doubt(const struct growth_result *g, struct growth_dev *d, bool doubling, size_t n)
{
	struct growth_verdict *v = &d->v;
	/* a ramp's rises are the bytes kept; a doubling pool's steps are not */
	v->rate_hidden = doubling && v->shape != GV_RAMP;
	if (g->ooms && !n && v->kind != GV_UNDETERMINED)
		v->shape = GV_OOM; /* flat after an OOM is a program that stopped, too */
	else if (v->kind != GV_LEAK)
		return;
	else if (2 * d->last_bytes < v->level && !n) /* iterations: a teardown's frees */
		v->shape = GV_FELL;
	else if (!g->t->has_trailer && !n)
		v->shape = GV_CUTOFF;
	else if (doubling && !n)
		v->shape = GV_DOUBLING;
	else
		return;
	v->kind = GV_UNDETERMINED;
	v->rate = 0;
}

void growth_verdicts(struct growth_result *g)
{
	size_t n = growth_iterations(g);
	for (size_t k = 0; k < g->ndevs; k++) {
		struct growth_dev *d = &g->devs[k];
		struct growth_series s = {0};
		struct growth_rise *r = xcalloc((n > d->nsteps ? n : d->nsteps) + 1, sizeof(*r));
		if (n && d->floor)
			s = (struct growth_series){.rises = r,
						   .n = iteration_rises(d, n, r),
						   .xend = n - 1,
						   .xlast = n - 1,
						   .base = d->floor[0],
						   .merge = MERGE_ITERS,
						   .min_steady = STEADY_ITERS};
		else
			series_time(g, d, r, &s);
		growth_decide(&s, &d->v);
		free(r);
		uint64_t block;
		const char *pat = growth_pattern(d, rb_dev_total(g->t, d->ordinal), &block);
		if (d->v.kind == GV_NO_LEAK && !strcmp(pat, "preallocation")) {
			d->v.kind = GV_UNDETERMINED;
			d->v.shape = GV_BLIND;
			d->prealloc = block;
		}
		doubt(g, d, !strcmp(pat, "doubling"), n);
		if (d->v.kind == GV_LEAK) {
			uint64_t from =
			    growth_x_time(g, n && d->v.start_x ? d->v.start_x - 1 : d->v.start_x);
			leak_site(d, from, n ? g->mk.times[n - 1] : UINT64_MAX);
		}
	}
}
