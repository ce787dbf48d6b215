/* A trace as the report commands see it (analysis/trace.h): the metadata pass,
 * stack and frame resolution, time-ordered replay, grouping keys, sizes. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/fwhist.h"
#include "analysis/trace.h"
#include "analysis/frameworks.h"
#include "analysis/sites.h"
#include "analysis/trace-records.h"

#define REORDER_LIMIT	  (1u << 19)
#define REORDER_WINDOW_NS (30ull * 1000000000ull)
#define PROGRESS_MIN	  (64ull << 20) /* files smaller than this read too fast for a bar */

const struct trace_device *trace_device(const struct trace *t, int64_t ordinal)
{
	for (size_t i = 0; i < t->ndevs; i++)
		if (t->devs[i].ordinal == ordinal)
			return &t->devs[i];
	return NULL;
}

/* ---- the metadata pass ---------------------------------------------- */
static int sample_cmp(const void *a, const void *b)
{
	const struct trace_sample *x = a, *y = b;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* Stable: equal times keep file order, so a push and its pop stay apart. */
static void sort_ranges(struct trace_range *r, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (r[i - 1].time_ns <= r[i].time_ns)
			continue;
		struct trace_range x = r[i];
		size_t j = i;
		while (j > 0 && r[j - 1].time_ns > x.time_ns) {
			r[j] = r[j - 1];
			j--;
		}
		r[j] = x;
	}
}

static int dev_cmp(const void *a, const void *b)
{
	const struct trace_device *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

static int open_start(struct trace *t, const char *cmd, const char *path)
{
	memset(t, 0, sizeof(*t));
	t->cmd = cmd;
	t->path = path;
	int rc;
	t->reader = reader_open_cmd(cmd, path, &rc);
	if (!t->reader)
		return rc;
	t->hdr = *gmt_reader_header(t->reader);
	return -1;
}

/* A DEVICE record without its uuid (the library notes why) cannot be matched
 * to NVML's samples by uuid. With one CUDA device and one NVML device in
 * the samples, they are the same one. */
static void match_unnamed_device(struct trace *t, const uint8_t *no_uuid)
{
	if (t->ndevs != 1 || memcmp(t->devs[0].uuid, no_uuid, 16))
		return;
	const uint8_t *seen = NULL;
	for (size_t i = 0; i < t->nsamples; i++) {
		const uint8_t *u = t->samples[i].uuid;
		if (!memcmp(u, no_uuid, 16) || (seen && memcmp(u, seen, 16)))
			return;
		seen = u;
	}
	for (size_t i = 0; i < t->nsamples; i++)
		t->samples[i].device = t->devs[0].ordinal;
}

/* After the metadata pass: sorting and cross-references. */
static void open_end(struct trace *t)
{
	t->info = *gmt_reader_info(t->reader);
	t->complete = t->info.complete;
	t->lost = t->trailer_lost > t->lost_in_records ? t->trailer_lost : t->lost_in_records;
	if (t->ndevs > 1)
		if (t->ndevs)
			qsort(t->devs, t->ndevs, sizeof(*t->devs), dev_cmp);
	for (size_t i = 0; i < t->nmods; i++)
		trace_module_classify(&t->mods[i]);
	static const uint8_t no_uuid[16];
	for (size_t i = 0; i < t->nsamples; i++) {
		struct trace_sample *sm = &t->samples[i];
		for (size_t d = 0; d < t->ndevs && memcmp(sm->uuid, no_uuid, 16); d++)
			if (!memcmp(sm->uuid, t->devs[d].uuid, 16))
				sm->device = t->devs[d].ordinal;
	}
	match_unnamed_device(t, no_uuid);
	if (t->nsamples > 1)
		if (t->nsamples)
			qsort(t->samples, t->nsamples, sizeof(*t->samples), sample_cmp);
	sort_ranges(t->ranges, t->nranges); /* nearly sorted: threads' batches interleave */
	for (size_t i = 0; i < t->nnotes; i++)
		if (strstr(t->notes[i], "NVML"))
			t->nvml_missing = true;
	fwhist_finish(t);
}

int trace_open(struct trace *t, const char *cmd, const char *path)
{
	int rc = open_start(t, cmd, path);
	if (rc >= 0)
		return rc;
	struct gmt_record rec;
	for (;;) {
		const struct gmt_event *evs;
		size_t n = gmt_reader_next_events(t->reader, &evs);
		for (size_t i = 0; i < n; i++)
			on_event_meta(t, &evs[i]);
		if (!n && !gmt_reader_next(t->reader, &rec))
			break;
		if (!n)
			trace_on_record(t, &rec);
	}
	open_end(t);
	return -1;
}

int trace_open_follow(struct trace *t, const char *cmd, const char *path)
{
	int rc = open_start(t, cmd, path);
	if (rc >= 0)
		return rc;
	t->info = *gmt_reader_info(t->reader);
	return -1;
}

bool trace_follow(struct trace *t, trace_event_fn on_event, trace_record_fn on_record, void *ctx)
{
	const struct gmt_read_info *in = gmt_reader_info(t->reader);
	if (in->eof && !gmt_reader_follow(t->reader))
		return false;
	uint64_t before = in->records + in->events;
	struct gmt_record rec;
	for (;;) {
		const struct gmt_event *evs;
		size_t n = gmt_reader_next_events(t->reader, &evs);
		for (size_t i = 0; i < n; i++) {
			on_event_meta(t, &evs[i]);
			on_event(ctx, &evs[i], NULL);
		}
		if (n)
			continue;
		if (!gmt_reader_next(t->reader, &rec))
			break;
		trace_on_record(t, &rec);
		if (rec.type == GMT_REC_EVENT)
			on_event(ctx, &rec.u.event, NULL);
		else if (on_record)
			on_record(ctx, &rec);
	}
	open_end(t);
	return in->records + in->events != before;
}

/* The ranges, samples, counters and memory snapshots read so far, freed
 * (their arrays kept for reuse). */
static void forget_series(struct trace *t)
{
	for (size_t i = 0; i < t->nranges; i++)
		free(t->ranges[i].text);
	for (size_t i = 0; i < t->ncounters; i++) {
		for (size_t j = 0; j < t->counters[i].n; j++)
			free(t->counters[i].v[j].name);
		free(t->counters[i].v);
		free(t->counters[i].source);
		free(t->counters[i].device_name);
	}
	t->nranges = t->ncounters = t->nsamples = t->nmeminfo = 0;
}

void trace_follow_forget(struct trace *t)
{
	forget_series(t);
}

void trace_close(struct trace *t)
{
	for (size_t i = 0; i < t->ndevs; i++)
		free(t->devs[i].name);
	free(t->devs);
	for (size_t i = 0; i < t->nmods; i++) {
		free(t->mods[i].path);
		free(t->mods[i].build_id);
	}
	free(t->mods);
	struct trace_symbol *sym, *st;
	HASH_ITER(hh, t->symbols, sym, st)
	{
		HASH_DEL(t->symbols, sym);
		free(sym->function);
		free(sym->file);
		free(sym);
	}
	for (size_t i = 0; i < t->nenv; i++) {
		free(t->env[i].key);
		free(t->env[i].value);
	}
	free(t->env);
	for (size_t i = 0; i < t->nnotes; i++)
		free(t->notes[i]);
	free(t->notes);
	free(t->meminfo);
	free(t->samples);
	forget_series(t);
	free(t->ranges);
	free(t->counters);
	fwhist_free(t->fw);
	t->fw = NULL;
	for (size_t i = 0; i < t->nfwooms; i++) {
		struct trace_fwoom *f = &t->fwooms[i];
		for (size_t j = 0; j < f->n; j++)
			free(f->v[j].name);
		free(f->v);
		free(f->source);
		free(f->type);
		free(f->message);
	}
	free(t->fwooms);
	struct trace_pyframe *pf, *pt;
	HASH_ITER(hh, t->pyframes, pf, pt)
	{
		HASH_DEL(t->pyframes, pf);
		free(pf->function);
		free(pf->file);
		free(pf);
	}
	site_cache_free(t);
	free(t->nodes);
	free(t->command);
	free(t->exe);
	free(t->host);
	trace_names_free(t);
	if (t->reader)
		gmt_reader_close(t->reader);
	memset(t, 0, sizeof(*t));
}

/* ---- replay ---------------------------------------------------------- */

static void progress(struct trace *t, uint64_t offset, int *shown)
{
	uint64_t size = t->info.file_size ? t->info.file_size : 1;
	int pct = (int)(offset * 100 / size);
	if (pct > 100)
		pct = 100;
	if (pct == *shown)
		return;
	*shown = pct;
	char bar[41];
	int fill = pct * 40 / 100;
	for (int i = 0; i < 40; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[40] = 0;
	fprintf(stderr, "\rgpumemtrace %s: reading %s [%s] %3d%%", t->cmd, path_basename(t->path),
		bar, pct);
	fflush(stderr);
}

/* The metadata of a device's first event, out of line: once per device
 * change. Returns the device now current. */
static __attribute__((noinline)) int64_t meta_dev(struct trace *t, int64_t device)
{
	trace_dev_get(t, device);
	t->have_last_dev = true;
	t->last_dev = device;
	return device;
}

/* Applies the events [e, end) of a run, in order. rp and fn are tested once
 * per span, not per event. */
static inline __attribute__((always_inline)) void apply_span(const struct gmt_event *e,
							     const struct gmt_event *end,
							     struct replay *rp, trace_event_fn fn,
							     void *ctx)
{
	if (rp && fn) {
		for (; e < end; e++) {
			replay_apply(rp, e);
			fn(ctx, e, rp);
		}
		return;
	}
	for (; e < end; e++) {
		if (rp)
			replay_apply(rp, e);
		if (fn)
			fn(ctx, e, rp);
	}
}

/* Applies the k oldest events of run r (k <= r->len): in at most two
 * spans, the run being circular. */
static void apply_oldest(struct reorder *q, struct reorder_run *r, size_t k, struct replay *rp,
			 trace_event_fn fn, void *ctx)
{
	size_t first = r->cap - r->head < k ? r->cap - r->head : k;
	const struct gmt_event *e = r->buf + r->head;
	r->head = first == k ? r->head + k : k - first;
	if (r->head == r->cap)
		r->head = 0;
	r->len -= k;
	q->n -= k;
	if (!r->len)
		q->nonempty &= ~(1u << (r - q->runs));
	/* the slots stay as they are until the next push: no copy */
	apply_span(e, e + first, rp, fn, ctx);
	apply_span(r->buf, r->buf + (k - first), rp, fn, ctx);
}

/* Pushes events of a reader's run (evs[0, n): one batch, one thread) and
 * applies those that may go, as reorder_push and reorder_next would one at
 * a time, while the window holds only this thread's sorted run, with room,
 * and no heap (most traces, all the time). The run is FIFO and in time
 * order, so pushing a block of events and then applying the oldest that
 * may go applies the same events in the same order as one push and its
 * pops at a time: a push loop with no call, then an apply loop with few
 * live values. Returns how many it took; the caller goes on with the rest. */
static inline __attribute__((always_inline)) size_t push_run(struct trace *t, struct reorder *q,
							     const struct gmt_event *evs, size_t n,
							     struct replay *rp, trace_event_fn fn,
							     void *ctx, bool meta)
{
	struct reorder_run *r = &q->runs[(evs[0].tid * 0x9e3779b97f4a7c15ull) >> 61];
	unsigned bit = 1u << (r - q->runs);
	if (q->heap_n || (q->nonempty & ~bit) || !r->len)
		return 0;
	uint64_t tid = evs[0].tid;
	size_t i = 0;
	while (i < n && r->len < r->cap) {
		/* What reorder_push appends to the run without its slow path:
		 * as many as fit and keep the order. */
		struct gmt_event *buf = r->buf, *last = r->last, *wrap = r->buf + r->cap;
		size_t m = n - i < r->cap - r->len ? n - i : r->cap - r->len, j = 0;
		int64_t dev = t->have_last_dev ? t->last_dev : -1;
		for (; j < m; j++) {
			const struct gmt_event *e = &evs[i + j];
			if (e->tid != tid || reorder_before_(e, last))
				break;
			/* on_event_meta's device: its times are the block's ends */
			if (meta && e->device != dev && e->device >= 0)
				dev = meta_dev(t, e->device);
			last = last + 1 == wrap ? buf : last + 1;
			*last = *e;
		}
		if (!j)
			break;
		if (meta) { /* on_event_meta for the block: sorted, so its ends */
			if (t->events == 0 || evs[i].time_ns < t->first_time_ns)
				t->first_time_ns = evs[i].time_ns;
			if (last->time_ns > t->last_time_ns)
				t->last_time_ns = last->time_ns;
			t->events += j;
		}
		i += j;
		r->last = last;
		r->len += j;
		q->n += j;
		if (last->time_ns > q->newest)
			q->newest = last->time_ns;
		/* reorder_next with one run: the oldest go while more than
		 * limit wait or the oldest is window_ns older than the newest */
		size_t k = q->n > q->limit ? q->n - q->limit : 0;
		for (size_t at = r->head + k; k < r->len; k++, at++) {
			if (at >= r->cap)
				at -= r->cap;
			if (q->newest - buf[at].time_ns < q->window_ns)
				break;
		}
		if (k)
			apply_oldest(q, r, k, rp, fn, ctx);
		if (r->len)
			q->low = r->buf[r->head].time_ns; /* the least now */
		if (j < m)
			break;
	}
	return i;
}

/* One read of the events in time order; meta: the metadata pass too. */
static void read_events(struct trace *t, struct replay *rp, trace_event_fn fn, void *ctx, bool meta)
{
	struct reorder q;
	struct gmt_record rec;
	const struct gmt_event *ev;
	bool bar = t->info.file_size > PROGRESS_MIN && isatty(2);
	int shown = -1;
	reorder_init(&q, REORDER_LIMIT, REORDER_WINDOW_NS);
	for (;;) {
		const struct gmt_event *evs;
		size_t nev = gmt_reader_next_events(t->reader, &evs);
		if (nev) { /* a run of events: no record plumbing per event */
			for (size_t i = 0; i < nev; i++) {
				i += push_run(t, &q, evs + i, nev - i, rp, fn, ctx, meta);
				if (i == nev)
					break;
				if (meta)
					on_event_meta(t, &evs[i]);
				reorder_push(&q, &evs[i]);
				while ((ev = reorder_next(&q, false))) {
					if (rp)
						replay_apply(rp, ev);
					if (fn)
						fn(ctx, ev, rp);
				}
			}
			continue;
		}
		int more = gmt_reader_next(t->reader, &rec);
		if (more && meta)
			trace_on_record(t, &rec);
		if (more && rec.type == GMT_REC_EVENT)
			reorder_push(&q, &rec.u.event);
		else if (more && bar && rec.type == GMT_REC_CHUNK)
			progress(t, rec.chunk_offset, &shown);
		if (!more && !q.heap_n && q.nonempty && !(q.nonempty & (q.nonempty - 1))) {
			/* the end, one run left: all of it, in order */
			struct reorder_run *r = &q.runs[__builtin_ctz(q.nonempty)];
			apply_oldest(&q, r, r->len, rp, fn, ctx);
		}
		while ((ev = reorder_next(&q, !more))) {
			if (rp)
				replay_apply(rp, ev);
			if (fn)
				fn(ctx, ev, rp);
		}
		if (!more)
			break;
	}
	reorder_free(&q);
	if (bar)
		fprintf(stderr, "\r%*s\r", 70 + (int)strlen(t->cmd) + (int)strlen(t->path), "");
}

int trace_replay(struct trace *t, struct replay *rp, trace_event_fn fn, void *ctx)
{
	gmt_reader_rewind(t->reader);
	read_events(t, rp, fn, ctx, false);
	const struct gmt_read_info *in = gmt_reader_info(t->reader);
	if (in->stop == GMT_STOP_IO && t->info.stop != GMT_STOP_IO) {
		t->info = *in;
		return reader_finish_cmd(t->cmd, t->path, in);
	}
	return -1;
}

int trace_open_replay(struct trace *t, const char *cmd, const char *path, struct replay *rp,
		      trace_event_fn fn, void *ctx)
{
	int rc = open_start(t, cmd, path);
	if (rc >= 0)
		return rc;
	t->info.file_size = gmt_reader_info(t->reader)->file_size; /* for the progress bar */
	read_events(t, rp, fn, ctx, true);
	open_end(t);
	return -1;
}

int trace_finish(struct trace *t)
{
	trace_names_warn(t);
	return reader_finish_cmd(t->cmd, t->path, &t->info);
}

int64_t trace_rel(const struct trace *t, uint64_t time_ns)
{
	return (int64_t)(time_ns - t->hdr.start_mono_ns);
}

uint64_t trace_end_ns(const struct trace *t)
{
	if (t->has_trailer)
		return t->trailer_end_ns;
	/* no trailer: the last record read that has a time, of whatever kind
	 * (the sampler writes after the last allocation) */
	uint64_t end = t->events ? t->last_time_ns : 0;
	if (t->nsamples && t->samples[t->nsamples - 1].time_ns > end)
		end = t->samples[t->nsamples - 1].time_ns;
	if (t->nranges && t->ranges[t->nranges - 1].time_ns > end)
		end = t->ranges[t->nranges - 1].time_ns;
	return end;
}

int64_t trace_duration_ns(const struct trace *t)
{
	int64_t d = t->events || t->has_trailer ? trace_rel(t, trace_end_ns(t)) : 0;
	return d > 0 ? d : 0; /* never a negative length */
}

uint64_t trace_lost_own(const struct trace *t)
{
	return t->lost > t->lost_in_children ? t->lost - t->lost_in_children : 0;
}

const char *trace_incomplete_why(const struct trace *t)
{
	return t->complete			  ? NULL
	       : t->info.damage			  ? "damaged: chunks missing or repeated"
	       : t->info.stop == GMT_STOP_TORN	  ? "torn tail"
	       : t->info.stop == GMT_STOP_CORRUPT ? "corrupt chunk"
	       : t->info.stop == GMT_STOP_IO	  ? "read error"
						  : "no trailer: killed, crashed or still running";
}

bool trace_partial(const struct trace *t)
{
	return !t->complete || trace_lost_own(t);
}

const char *trace_partial_what(const struct trace *t, char *buf, size_t size)
{
	uint64_t lost = trace_lost_own(t);
	const char *why = trace_incomplete_why(t);
	int n = 0;
	buf[0] = '\0';
	if (lost)
		n = snprintf(buf, size, "%" PRIu64 " event%s lost%s", lost, lost == 1 ? "" : "s",
			     why ? ", " : "");
	if (why && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "incomplete trace (%s)", why);
	return buf;
}

const char *trace_partial_text(const struct trace *t, char *buf, size_t size)
{
	char what[160];
	snprintf(buf, size, "PARTIAL DATA: %s: allocations and frees may be missing",
		 trace_partial_what(t, what, sizeof(what)));
	return buf;
}

/* ---- grouping -------------------------------------------------------- */

const char *trace_group_key(struct trace *t, enum trace_group by, int depth, uint64_t stack_id,
			    uint32_t api, char *buf, size_t size)
{
	struct trace_frame f;
	switch (by) {
	case GROUP_API: /* the static runtime's driver calls as the runtime's */
		snprintf(buf, size, "%s", api_name(stack_id ? site_api(t, stack_id, api) : api));
		return buf;
	case GROUP_LIBRARY:
		snprintf(buf, size, "%s", trace_library(t, stack_id));
		return buf;
	case GROUP_FUNCTION:
		if (!stack_id || !trace_site(t, stack_id, &f)) {
			snprintf(buf, size, "(no stack)");
		} else if (f.python && f.function && f.file) {
			/* Python names repeat ("forward" in every module): keep where */
			snprintf(buf, size, "%s (%s:%" PRIu64 ")", f.function, f.file, f.line);
		} else if (f.function) {
			snprintf(buf, size, "%s", f.function);
		} else {
			f.function = NULL;
			trace_frame_text(&f, buf, size);
		}
		return buf;
	case GROUP_RANGE:
		snprintf(buf, size, "(phase)");
		return buf;
	case GROUP_STACK:
	default:
		if (!stack_id || !trace_site(t, stack_id, &f)) {
			snprintf(buf, size, "(no stack)");
			return buf;
		}
		trace_frame_text(&f, buf, size);
		return trace_callers_text(t, stack_id, f.depth, depth, buf, size);
	}
}

/* ---- sizes ----------------------------------------------------------- */

int parse_size(const char *s, uint64_t *out)
{
	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s) && *s != '.')
		return -1;
	/* digits, at most one '.', digits: no signs, exponents or hex */
	const char *end = s;
	int dots = 0, digits = 0;
	for (; isdigit((unsigned char)*end) || *end == '.'; end++) {
		dots += *end == '.';
		digits += *end != '.';
	}
	if (!digits || dots > 1)
		return -1;
	double v = strtod(s, NULL);
	if (!isfinite(v))
		return -1;
	/* plain integers exactly, without going through a double */
	bool integer = true;
	for (const char *p = s; p < end; p++)
		integer &= isdigit((unsigned char)*p) != 0;
	while (isspace((unsigned char)*end))
		end++;
	char unit[8] = {0};
	size_t n = strlen(end);
	if (n >= sizeof(unit))
		return -1;
	for (size_t i = 0; i < n; i++)
		unit[i] = (char)tolower((unsigned char)end[i]);
	static const struct {
		const char *name;
		double mult;
	} units[] = {
	    {"", 1},
	    {"b", 1},
	    {"k", 1024.0},
	    {"kb", 1e3},
	    {"kib", 1024.0},
	    {"m", 1048576.0},
	    {"mb", 1e6},
	    {"mib", 1048576.0},
	    {"g", 1073741824.0},
	    {"gb", 1e9},
	    {"gib", 1073741824.0},
	    {"t", 1099511627776.0},
	    {"tb", 1e12},
	    {"tib", 1099511627776.0},
	};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(unit, units[i].name) != 0)
			continue;
		if (integer && units[i].mult == 1) {
			errno = 0;
			unsigned long long x = strtoull(s, NULL, 10);
			if (errno)
				return -1;
			*out = x;
			return 0;
		}
		if (!integer && units[i].mult == 1)
			return -1; /* a fraction of a byte */
		double r = v * units[i].mult;
		if (r >= 18446744073709551616.0)
			return -1;
		*out = (uint64_t)(r + 0.5);
		return 0;
	}
	return -1;
}

/* ---- several traces ------------------------------------------------- */

int64_t trace_rank(const struct trace *t)
{
	static const char *const keys[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
					   "SLURM_PROCID"};
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (size_t i = 0; i < t->nenv; i++)
			if (strcmp(t->env[i].key, keys[k]) == 0 &&
			    isdigit((unsigned char)t->env[i].value[0]))
				return strtoll(t->env[i].value, NULL, 10);
	return -1;
}

const char *trace_label(const struct trace *t, char *buf, size_t size)
{
	uint64_t pid = t->has_process ? t->pid : t->hdr.pid;
	int64_t rank = trace_rank(t);
	if (rank >= 0)
		snprintf(buf, size, "rank %" PRId64 " (pid %" PRIu64 ")", rank, pid);
	else
		snprintf(buf, size, "pid %" PRIu64, pid);
	return buf;
}

/* ---- report rows ------------------------------------------------------ */

int trace_alloc_bucket(const struct gmt_event *e)
{
	const struct api_info *a = api_lookup(e->api);
	if (!a || a->op != GMT_OP_ALLOC || gmt_failed(e->result, e->flags))
		return -1;
	return replay_kind_bucket(a->kind, e->aux);
}

const char *trace_fmt_time(char *buf, int64_t ns)
{
	char sign = ns < 0 ? '-' : '+';
	uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	double s = (double)a / 1e9;
	if (a < 1000)
		snprintf(buf, 32, "%c%" PRIu64 " ns", sign, a);
	else if (a < 1000000) /* as rb_time: one event reads the same in every report */
		snprintf(buf, 32, "%c%.1f us", sign, (double)a / 1e3);
	else if (a < 1000000000)
		snprintf(buf, 32, "%c%.1f ms", sign, (double)a / 1e6);
	else if (a < UINT64_C(60000000000))
		snprintf(buf, 32, "%c%.3f s", sign, s);
	else if (a < UINT64_C(3600000000000))
		snprintf(buf, 32, "%c%" PRIu64 "m%04.1fs", sign, a / UINT64_C(60000000000),
			 (double)(a % UINT64_C(60000000000)) / 1e9);
	else
		snprintf(buf, 32, "%c%" PRIu64 "h%02" PRIu64 "m%02" PRIu64 "s", sign,
			 a / UINT64_C(3600000000000), a / UINT64_C(60000000000) % 60,
			 a / UINT64_C(1000000000) % 60);
	return buf;
}
