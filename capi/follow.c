/* Following a trace as it is written, window by window (gmtr_follow_*,
 * include/gpumemtrace/trace-reader.h): the pytest plugin's per-test
 * figures. A window is a range pushed with a given prefix and popped on
 * the same thread; its figures are those of the allocations made between
 * its push and its pop (by any thread), replayed by analysis/replay.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumemtrace/trace-reader.h>

#include "analysis/counters.h"
#include "analysis/replay.h"
#include "capi/guard.h"
#include "analysis/trace.h"
#include "common/api.h"
#include "common/events.h"
#include "common/text.h"
#include "reader/reader.h"

#define TOP_SITES     10
#define TIMELINE_BINS 256 /* a window's timeline: at most two points a bin */

struct win {
	char *name;
	uint64_t tid, start, end; /* absolute times */
	bool closed, done;
	uint64_t peak, live, allocs, failed, ooms;
	bool freed; /* device memory was freed or unmapped in it (by anyone) */
	char *sites_json;
	char *timeline_json;
	char *framework_json;
};

/* A framework's counters series (run --framework-counters: COUNTERS
 * records), and its readings no open window is past yet. */
struct fw_series {
	char *source, *device_name;
	int64_t device;
	uint64_t first_ns; /* its first reading ever */
};
struct fw_reading {
	uint64_t time_ns;
	size_t series;
	unsigned has; /* CNT_* */
	uint64_t reserved, peak_reserved;
};

/* A thread's open ranges: which are windows (index), which not (-1). */
struct open_stack {
	uint64_t tid;
	int64_t *v;
	size_t n, cap;
};

struct gmtr_follow {
	struct trace t;
	bool open;
	char *path, *prefix;
	size_t prefix_len;
	struct win *w;
	size_t nw, wcap;
	struct open_stack *threads;
	size_t nthreads;
	struct gmt_event *ev; /* events not yet behind every window */
	size_t nev, evcap;
	struct fw_series *fs;
	size_t nfs;
	struct fw_reading *fr;
	size_t nfr, frcap;
	char status[128];   /* three 20-digit figures and their keys */
	bool out_of_memory; /* a poll ran out: refuse the rest */
};

static struct open_stack *thread_of(struct gmtr_follow *f, uint64_t tid)
{
	for (size_t i = 0; i < f->nthreads; i++)
		if (f->threads[i].tid == tid)
			return &f->threads[i];
	f->threads = xrealloc(f->threads, (f->nthreads + 1) * sizeof(*f->threads));
	struct open_stack *s = &f->threads[f->nthreads++];
	memset(s, 0, sizeof(*s));
	s->tid = tid;
	return s;
}

static void on_range(struct gmtr_follow *f, const struct gmt_record *rec)
{
	uint64_t op = rec->u.range.op;
	if (op != GMT_RANGE_PUSH && op != GMT_RANGE_POP)
		return;
	struct open_stack *s = thread_of(f, rec->u.range.tid);
	if (op == GMT_RANGE_POP) {
		if (!s->n)
			return; /* a pop without its push (lost, or before the trace) */
		int64_t wi = s->v[--s->n];
		if (wi >= 0) {
			f->w[wi].end = rec->u.range.time_ns;
			f->w[wi].closed = true;
		}
		return;
	}
	int64_t wi = -1;
	const struct gmt_str *text = &rec->u.range.text;
	if (text->len >= f->prefix_len && memcmp(text->s, f->prefix, f->prefix_len) == 0) {
		if (f->nw == f->wcap) {
			f->wcap = f->wcap ? f->wcap * 2 : 64;
			f->w = xrealloc(f->w, f->wcap * sizeof(*f->w));
		}
		struct win *w = &f->w[f->nw];
		memset(w, 0, sizeof(*w));
		w->name = xstrdup(text->s + f->prefix_len);
		w->tid = rec->u.range.tid;
		w->start = rec->u.range.time_ns;
		wi = (int64_t)f->nw++;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = wi;
}

static void follow_record(void *ctx, const struct gmt_record *rec)
{
	if (rec->type == GMT_REC_RANGE)
		on_range(ctx, rec);
}

static void follow_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct gmtr_follow *f = ctx;
	if (f->nev == f->evcap) {
		f->evcap = f->evcap ? f->evcap * 2 : 1024;
		f->ev = xrealloc(f->ev, f->evcap * sizeof(*f->ev));
	}
	f->ev[f->nev++] = *e;
}

static int ev_cmp(const void *a, const void *b)
{
	const struct gmt_event *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

struct site_sum {
	char *site;
	uint64_t bytes, allocs;
};

static int site_cmp(const void *a, const void *b)
{
	const struct site_sum *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->site, y->site);
}

/* The window's own allocations live at its peak, by site, as JSON. */
static char *sites_at_peak(struct gmtr_follow *f, const struct gmt_event *evs, size_t n,
			   uint64_t peak_seq)
{
	struct replay rp;
	replay_init(&rp);
	for (size_t i = 0; i < n && rp.seq < peak_seq; i++)
		replay_apply(&rp, &evs[i]);
	struct site_sum *s = NULL;
	size_t ns = 0;
	char text[1024];
	for (int sp = 0; sp < GMT_SPACES; sp++) {
		struct rp_live *l, *tmp;
		RP_EACH(&rp, sp, l, tmp)
		{
			if (l->bucket != BK_DEVICE)
				continue;
			struct trace_frame fr;
			const char *site = "(no stack)";
			if (l->stack_id && trace_site(&f->t, l->stack_id, &fr)) {
				/* the site and two callers: a test's helper, then the test */
				site = trace_frame_text(&fr, text, sizeof(text));
				trace_callers_text(&f->t, l->stack_id, fr.depth, 2, text,
						   sizeof(text));
			}
			size_t k = 0;
			while (k < ns && strcmp(s[k].site, site) != 0)
				k++;
			if (k == ns) {
				s = xrealloc(s, (ns + 1) * sizeof(*s));
				s[ns++] = (struct site_sum){xstrdup(site), 0, 0};
			}
			s[k].bytes += l->size;
			s[k].allocs++;
		}
	}
	replay_free(&rp);
	if (ns > 1)
		qsort(s, ns, sizeof(*s), site_cmp);
	char *buf;
	size_t len;
	FILE *out = xmemstream(&buf, &len);
	fputc('[', out);
	for (size_t k = 0; k < ns; k++) {
		if (k < TOP_SITES) {
			fputs(k ? ", {\"site\": " : "{\"site\": ", out);
			json_cstr(out, s[k].site);
			fprintf(out, ", \"bytes\": %" PRIu64 ", \"allocs\": %" PRIu64 "}",
				s[k].bytes, s[k].allocs);
		}
		free(s[k].site);
	}
	fputc(']', out);
	free(s);
	return xmemstream_close(out, &buf);
}

/* A window's device bytes over its time, as JSON [[ns since its start,
 * bytes]...]: in each of TIMELINE_BINS bins of its time, the most and the
 * last value (in time order), so a step line drawn through them keeps
 * every peak. */
struct timeline {
	FILE *out;
	char *buf;
	size_t len;
	uint64_t start, span;
	int64_t bin; /* the bin being filled; -1 none */
	uint64_t max_t, max_v, last_t, last_v;
	bool first;
};

static void timeline_begin(struct timeline *tl, const struct win *w)
{
	memset(tl, 0, sizeof(*tl));
	tl->out = xmemstream(&tl->buf, &tl->len);
	tl->start = w->start;
	tl->span = w->end > w->start ? w->end - w->start : 1;
	tl->bin = -1;
	tl->first = true;
	fputc('[', tl->out);
}

static void timeline_point(struct timeline *tl, uint64_t t, uint64_t v)
{
	fprintf(tl->out, "%s[%" PRIu64 ", %" PRIu64 "]", tl->first ? "" : ", ", t, v);
	tl->first = false;
}

static void timeline_flush(struct timeline *tl)
{
	if (tl->bin < 0)
		return;
	if (tl->max_t < tl->last_t)
		timeline_point(tl, tl->max_t, tl->max_v);
	timeline_point(tl, tl->last_t, tl->last_v);
}

static void timeline_add(struct timeline *tl, uint64_t time_ns, uint64_t bytes)
{
	uint64_t t = time_ns > tl->start ? time_ns - tl->start : 0;
	int64_t bin = (int64_t)((double)t / (double)tl->span * TIMELINE_BINS);
	if (bin != tl->bin) {
		timeline_flush(tl);
		tl->bin = bin;
		tl->max_v = 0;
		tl->max_t = t;
	}
	if (bytes >= tl->max_v) {
		tl->max_v = bytes;
		tl->max_t = t;
	}
	tl->last_t = t;
	tl->last_v = bytes;
}

static char *timeline_end(struct timeline *tl)
{
	timeline_flush(tl);
	fputc(']', tl->out);
	return xmemstream_close(tl->out, &tl->buf);
}

/* The framework's counters read since the last poll, kept as readings
 * (the trace's own copies are dropped: a long follow keeps one poll's). */
static void take_counters(struct gmtr_follow *f)
{
	struct counters_set set;
	counters_load(&f->t, &set);
	for (size_t i = 0; i < set.n; i++) {
		const struct counters_series *s = &set.s[i];
		size_t k = 0;
		while (k < f->nfs && !(strcmp(f->fs[k].source, s->source) == 0 &&
				       strcmp(f->fs[k].device_name, s->device_name) == 0 &&
				       f->fs[k].device == s->device))
			k++;
		if (k == f->nfs) {
			f->fs = xrealloc(f->fs, (f->nfs + 1) * sizeof(*f->fs));
			f->fs[k] = (struct fw_series){xstrdup(s->source), xstrdup(s->device_name),
						      s->device, s->n ? s->pts[0].time_ns : 0};
			f->nfs++;
		}
		for (size_t j = 0; j < s->n; j++) {
			const struct counters_point *p = &s->pts[j];
			if (f->nfr == f->frcap) {
				f->frcap = f->frcap ? f->frcap * 2 : 256;
				f->fr = xrealloc(f->fr, f->frcap * sizeof(*f->fr));
			}
			f->fr[f->nfr++] = (struct fw_reading){p->time_ns, k, p->has, p->reserved,
							      p->peak_reserved};
		}
	}
	counters_free(&set);
	trace_follow_forget(&f->t);
}

/* What the framework held from the driver (reserved: its cache included)
 * at its most while window w was open, per series, as JSON [{"source",
 * "device", "reserved_peak", "reserved_at_start", "exact", "at_most"}...].
 * From the readings inside the window (the pytest plugin takes one at a
 * test's start and end) and the framework's own peak counter:
 * - the framework started inside the window: its peak counter is the
 *   window's (exact);
 * - its peak counter rose between the first and the last reading: that
 *   peak was inside the window (exact);
 * - no device memory was freed or unmapped inside the window (by anyone):
 *   reserved only grew, the last reading is the most (exact);
 * - else the most read is a floor, and the peak counter at the first
 *   reading a ceiling ("at_most"); exact when they meet. */
static char *framework_of(struct gmtr_follow *f, const struct win *w)
{
	char *buf;
	size_t len;
	FILE *out = xmemstream(&buf, &len);
	fputc('[', out);
	bool any = false;
	for (size_t k = 0; k < f->nfs; k++) {
		const struct fw_reading *first = NULL, *last = NULL;
		uint64_t most = 0;
		for (size_t i = 0; i < f->nfr; i++) {
			const struct fw_reading *r = &f->fr[i];
			if (r->series != k || !(r->has & CNT_RESERVED) || r->time_ns < w->start ||
			    r->time_ns > w->end)
				continue;
			if (!first || r->time_ns < first->time_ns)
				first = r;
			if (!last || r->time_ns >= last->time_ns)
				last = r;
			most = r->reserved > most ? r->reserved : most;
		}
		if (!first)
			continue;
		bool before = f->fs[k].first_ns < w->start;
		bool peaks = (first->has & last->has & CNT_PEAK_RESERVED) != 0;
		uint64_t value = most, at_most = 0;
		bool exact = true;
		if (!before && (last->has & CNT_PEAK_RESERVED))
			value = last->peak_reserved > most ? last->peak_reserved : most;
		else if (peaks && last->peak_reserved > first->peak_reserved)
			value = last->peak_reserved;
		else if (w->freed && !(peaks && most >= first->peak_reserved)) {
			exact = false;
			at_most = peaks ? first->peak_reserved : 0;
		}
		fputs(any ? ", {\"source\": " : "{\"source\": ", out);
		json_cstr(out, f->fs[k].source);
		fputs(", \"device\": ", out);
		json_cstr(out, f->fs[k].device_name);
		fprintf(out,
			", \"reserved_peak\": %" PRIu64 ", \"reserved_at_start\": %" PRIu64
			", \"exact\": %s, \"at_most\": ",
			value, before ? first->reserved : (uint64_t)0, exact ? "true" : "false");
		if (at_most)
			fprintf(out, "%" PRIu64 "}", at_most);
		else
			fputs("null}", out);
		any = true;
	}
	fputc(']', out);
	return xmemstream_close(out, &buf);
}

static void compute(struct gmtr_follow *f, struct win *w)
{
	size_t n = 0;
	struct gmt_event *evs = xcalloc(f->nev ? f->nev : 1, sizeof(*evs));
	for (size_t i = 0; i < f->nev; i++)
		if (f->ev[i].time_ns >= w->start && f->ev[i].time_ns <= w->end)
			evs[n++] = f->ev[i];
	qsort(evs, n, sizeof(*evs), ev_cmp);
	struct replay rp;
	replay_init(&rp);
	struct timeline tl;
	timeline_begin(&tl, w);
	for (size_t i = 0; i < n; i++) {
		const struct gmt_event *e = &evs[i];
		const struct api_info *a = api_lookup(e->api);
		if (a && (a->op == GMT_OP_FREE || a->op == GMT_OP_VMM_UNMAP ||
			  a->op == GMT_OP_POOL_TRIM))
			w->freed = true;
		if (a && a->op == GMT_OP_ALLOC) {
			bool failed = gmt_failed(e->result, e->flags);
			w->allocs += !failed;
			w->failed += failed;
			w->ooms += failed && gmt_out_of_memory(e->result);
		}
		replay_apply(&rp, e);
		timeline_add(&tl, e->time_ns, rp.buckets[BK_DEVICE].bytes);
	}
	w->timeline_json = timeline_end(&tl);
	w->peak = rp.buckets[BK_DEVICE].peak;
	w->live = rp.buckets[BK_DEVICE].bytes;
	uint64_t peak_seq = rp.buckets[BK_DEVICE].peak_seq;
	replay_free(&rp);
	w->sites_json = peak_seq ? sites_at_peak(f, evs, n, peak_seq) : xstrdup("[]");
	w->framework_json = framework_of(f, w);
	w->done = true;
	free(evs);
}

/* Drops the events no open window can need. */
static void prune(struct gmtr_follow *f)
{
	uint64_t keep_from = UINT64_MAX;
	for (size_t i = 0; i < f->nw; i++)
		if (!f->w[i].closed && f->w[i].start < keep_from)
			keep_from = f->w[i].start;
	size_t k = 0;
	for (size_t i = 0; i < f->nev; i++)
		if (f->ev[i].time_ns >= keep_from)
			f->ev[k++] = f->ev[i];
	f->nev = k;
	k = 0;
	for (size_t i = 0; i < f->nfr; i++)
		if (f->fr[i].time_ns >= keep_from)
			f->fr[k++] = f->fr[i];
	f->nfr = k;
}

static struct gmtr_follow *gmtr_follow_open_body(const char *path, const char *prefix, char *err,
						 size_t errlen)
{
	struct gmt_read_error re;
	struct gmt_reader *r = gmt_reader_open(path, &re);
	if (!r) {
		if (err && errlen)
			snprintf(err, errlen, "%s", re.msg);
		return NULL;
	}
	gmt_reader_close(r);
	struct gmtr_follow *f = xcalloc(1, sizeof(*f));
	f->path = xstrdup(path);
	f->prefix = xstrdup(prefix ? prefix : "");
	f->prefix_len = strlen(f->prefix);
	if (trace_open_follow(&f->t, "reader", f->path) != -1) {
		if (err && errlen)
			snprintf(err, errlen, "%s",
				 gmtr_said[0] ? gmtr_said : "cannot read the trace");
		free(f->path);
		free(f->prefix);
		free(f);
		return NULL;
	}
	f->open = true;
	return f;
}

GMTR_GUARDED(struct gmtr_follow *, gmtr_follow_open,
	     (const char *path, const char *prefix, char *err, size_t errlen),
	     (path, prefix, err, errlen), {
		     if (err && errlen)
			     snprintf(err, errlen, "out of memory");
		     return NULL;
	     })

static int64_t gmtr_follow_poll_body(struct gmtr_follow *f)
{
	if (f->out_of_memory)
		return -1;
	trace_follow(&f->t, follow_event, follow_record, f);
	take_counters(f);
	for (size_t i = 0; i < f->nw; i++)
		if (f->w[i].closed && !f->w[i].done)
			compute(f, &f->w[i]);
	prune(f);
	return (int64_t)f->nw;
}

/* -1: out of memory, now or before (the windows so far stay readable). */
GMTR_GUARDED(int64_t, gmtr_follow_poll, (struct gmtr_follow * f), (f), {
	f->out_of_memory = true;
	return -1;
})

GMTR_EXPORT int gmtr_follow_window(struct gmtr_follow *f, int64_t i, struct gmtr_window *out)
{
	if (i < 0 || (size_t)i >= f->nw)
		return -1;
	const struct win *w = &f->w[i];
	memset(out, 0, sizeof(*out));
	out->name = w->name;
	out->closed = w->done;
	out->tid = w->tid;
	out->start_ns = trace_rel(&f->t, w->start);
	out->end_ns = w->closed ? trace_rel(&f->t, w->end) : -1;
	out->peak_bytes = w->peak;
	out->live_bytes = w->live;
	out->allocs = w->allocs;
	out->failed = w->failed;
	out->ooms = w->ooms;
	out->sites_json = w->sites_json ? w->sites_json : "[]";
	return 0;
}

GMTR_EXPORT const char *gmtr_follow_timeline_json(struct gmtr_follow *f, int64_t i)
{
	if (i < 0 || (size_t)i >= f->nw)
		return NULL;
	return f->w[i].timeline_json ? f->w[i].timeline_json : "[]";
}

GMTR_EXPORT const char *gmtr_follow_framework_json(struct gmtr_follow *f, int64_t i)
{
	if (i < 0 || (size_t)i >= f->nw)
		return NULL;
	return f->w[i].framework_json ? f->w[i].framework_json : "[]";
}

GMTR_EXPORT const char *gmtr_follow_status_json(struct gmtr_follow *f)
{
	snprintf(f->status, sizeof(f->status),
		 "{\"events\": %" PRIu64 ", \"lost_events\": %" PRIu64
		 ", \"lost_in_children\": %" PRIu64 "}",
		 f->t.events, f->t.lost, f->t.lost_in_children);
	return f->status;
}

GMTR_EXPORT void gmtr_follow_close(struct gmtr_follow *f)
{
	if (!f)
		return;
	if (f->out_of_memory) { /* as gmtr_close: leaked, never half-freed */
		free(f);
		return;
	}
	for (size_t i = 0; i < f->nw; i++) {
		free(f->w[i].name);
		free(f->w[i].sites_json);
		free(f->w[i].timeline_json);
		free(f->w[i].framework_json);
	}
	for (size_t i = 0; i < f->nfs; i++) {
		free(f->fs[i].source);
		free(f->fs[i].device_name);
	}
	free(f->fs);
	free(f->fr);
	for (size_t i = 0; i < f->nthreads; i++)
		free(f->threads[i].v);
	if (f->open)
		trace_close(&f->t);
	free(f->threads);
	free(f->w);
	free(f->ev);
	free(f->path);
	free(f->prefix);
	free(f);
}
