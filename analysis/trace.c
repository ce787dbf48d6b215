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

#include "common/symbolize.h"
#include "analysis/trace.h"

#define REORDER_LIMIT	  (1u << 19)
#define REORDER_WINDOW_NS (30ull * 1000000000ull)
#define PROGRESS_MIN	  (64ull << 20) /* files smaller than this read too fast for a bar */
#define MAX_DEPTH	  4096

struct trace_symbol {
	UT_hash_handle hh;
	uint64_t ip;
	uint64_t module_id;
	char *function, *file;
	uint64_t line;
};

struct trace_pyframe {
	UT_hash_handle hh;
	uint64_t id;
	char *function, *file;
	uint64_t line;
};

static struct trace_device *dev_get(struct trace *t, int64_t ordinal)
{
	for (size_t i = 0; i < t->ndevs; i++)
		if (t->devs[i].ordinal == ordinal)
			return &t->devs[i];
	GROW(t->devs, t->ndevs, t->devs_cap);
	struct trace_device *d = &t->devs[t->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	d->name = xstrdup("");
	return d;
}

const struct trace_device *trace_device(const struct trace *t, int64_t ordinal)
{
	for (size_t i = 0; i < t->ndevs; i++)
		if (t->devs[i].ordinal == ordinal)
			return &t->devs[i];
	return NULL;
}

static bool cuda_path(const char *path)
{
	const char *b = path_basename(path);
	return strncmp(b, "libcuda.", 8) == 0 || strncmp(b, "libcudart", 9) == 0 ||
	       strncmp(b, "libgpumemtrace", 14) == 0;
}

/* ---- the metadata pass ---------------------------------------------- */

/* Inline: once per event in the first read. */
static inline __attribute__((always_inline)) void on_event_meta(struct trace *t,
								const struct gmt_event *e)
{
	if (t->events++ == 0 || e->time_ns < t->first_time_ns)
		t->first_time_ns = e->time_ns;
	if (e->time_ns > t->last_time_ns)
		t->last_time_ns = e->time_ns;
	if (e->device >= 0 && (!t->have_last_dev || e->device != t->last_dev)) {
		dev_get(t, e->device);
		t->have_last_dev = true;
		t->last_dev = e->device;
	}
}

/* C++ names as people read them ("c10::cuda::...::alloc_block(...)", not
 * "_ZN3c104cuda..."): libstdc++'s demangler, loaded at run time so the CLI
 * links no C++ runtime. Without it, or for a name it rejects, NULL: the
 * name stays as the trace has it. */
static char *demangle(const char *name)
{
	typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
	static demangle_fn fn;
	static int tried;
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	if (!tried) {
		tried = 1;
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		fn = h ? (demangle_fn)dlsym(h, "__cxa_demangle") : NULL;
	}
	int status = -1;
	char *out = fn ? fn(name, NULL, NULL, &status) : NULL;
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* An entry of the symbol table; it takes function (malloc'd), copies file. */
static struct trace_symbol *add_symbol(struct trace *t, uint64_t ip, uint64_t module_id,
				       char *function, const char *file, uint64_t line)
{
	struct trace_symbol *sym = xrealloc(NULL, sizeof(*sym));
	memset(sym, 0, sizeof(*sym));
	sym->ip = ip;
	sym->module_id = module_id;
	sym->function = function;
	sym->file = xstrdup(file);
	sym->line = line;
	HASH_ADD(hh, t->symbols, ip, sizeof(sym->ip), sym);
	return sym;
}

static void on_record(struct trace *t, const struct gmt_record *rec)
{
	switch (rec->type) {
	case GMT_REC_PROCESS: {
		typeof(rec->u.process) const *p = &rec->u.process;
		t->has_process = true;
		t->pid = p->pid;
		t->ppid = p->ppid;
		t->start_wall_ns = p->start_wall_ns;
		size_t len = 1;
		for (size_t i = 0; i < p->argc; i++)
			len += p->argv[i].len + 1;
		free(t->command);
		t->command = xrealloc(NULL, len);
		char *o = t->command;
		for (size_t i = 0; i < p->argc; i++) {
			if (i)
				*o++ = ' ';
			memcpy(o, p->argv[i].s, p->argv[i].len);
			o += p->argv[i].len;
		}
		*o = 0;
		free(t->exe);
		free(t->host);
		t->exe = xstrdup(p->exe.s);
		t->host = xstrdup(p->hostname.s);
		for (size_t i = 0; i < t->nenv; i++) {
			free(t->env[i].key);
			free(t->env[i].value);
		}
		free(t->env);
		t->nenv = p->nenv;
		t->env = xrealloc(NULL, p->nenv * sizeof(*t->env));
		for (size_t i = 0; i < p->nenv; i++) {
			t->env[i].key = xstrdup(p->env[i].key.s);
			t->env[i].value = xstrdup(p->env[i].value.s);
		}
		break;
	}
	case GMT_REC_DEVICE: {
		struct trace_device *d = dev_get(t, rec->u.device.ordinal);
		free(d->name);
		d->name = xstrdup(rec->u.device.name.s);
		d->total_bytes = rec->u.device.total_bytes;
		memset(d->uuid, 0, sizeof(d->uuid));
		memcpy(d->uuid, rec->u.device.uuid.p,
		       rec->u.device.uuid.len < 16 ? rec->u.device.uuid.len : 16);
		d->cc_major = (int)rec->u.device.cc_major;
		d->cc_minor = (int)rec->u.device.cc_minor;
		d->driver_version = (int)rec->u.device.driver_version;
		break;
	}
	case GMT_REC_MODULE: {
		GROW(t->mods, t->nmods, t->mods_cap);
		struct trace_module *m = &t->mods[t->nmods++];
		memset(m, 0, sizeof(*m));
		m->id = rec->u.module.id;
		m->bias = rec->u.module.load_bias;
		m->start = rec->u.module.start;
		m->end = rec->u.module.end;
		m->path = xstrdup(rec->u.module.path.s);
		m->build_id_len = rec->u.module.build_id.len;
		m->build_id = xrealloc(NULL, m->build_id_len);
		memcpy(m->build_id, rec->u.module.build_id.p, m->build_id_len);
		break;
	}
	case GMT_REC_STACK:
		for (size_t i = 0; i < rec->u.stack.count; i++) {
			GROW(t->nodes, t->nnodes, t->nodes_cap);
			t->nodes[t->nnodes++] = (struct trace_node){rec->u.stack.nodes[i].parent,
								    rec->u.stack.nodes[i].ip};
		}
		break;
	case GMT_REC_SYMBOL: {
		struct trace_symbol *sym = NULL;
		uint64_t ip = rec->u.symbol.ip;
		HASH_FIND(hh, t->symbols, &ip, sizeof(ip), sym);
		if (sym)
			break; /* the first one wins */
		char *function = demangle(rec->u.symbol.function.s);
		add_symbol(t, ip, rec->u.symbol.module_id,
			   function ? function : xstrdup(rec->u.symbol.function.s),
			   rec->u.symbol.file.s, rec->u.symbol.line);
		break;
	}
	case GMT_REC_LOST:
		t->lost_in_records += rec->u.lost.count;
		t->lost_records++;
		break;
	case GMT_REC_NOTE:
		if (rec->u.note.level == 0)
			break; /* information for `dump` (the clock): not a warning */
		GROW(t->notes, t->nnotes, t->notes_cap);
		t->notes[t->nnotes++] = xstrdup(rec->u.note.text.s);
		break;
	case GMT_REC_MEMINFO: {
		GROW(t->meminfo, t->nmeminfo, t->meminfo_cap);
		t->meminfo[t->nmeminfo++] = (struct trace_meminfo){
		    .time_ns = rec->u.meminfo.time_ns,
		    .device = rec->u.meminfo.device,
		    .free_bytes = rec->u.meminfo.free_bytes,
		    .total_bytes = rec->u.meminfo.total_bytes,
		    .api = (uint32_t)rec->u.meminfo.api,
		    .tid = (int)rec->u.meminfo.tid,
		};
		break;
	}
	case GMT_REC_SAMPLE: {
		GROW(t->samples, t->nsamples, t->samples_cap);
		struct trace_sample *sm = &t->samples[t->nsamples++];
		memset(sm, 0, sizeof(*sm));
		sm->time_ns = rec->u.sample.time_ns;
		sm->device = -1;
		sm->nvml_index = rec->u.sample.nvml_index;
		memcpy(sm->uuid, rec->u.sample.uuid.p,
		       rec->u.sample.uuid.len < 16 ? rec->u.sample.uuid.len : 16);
		sm->used_bytes = rec->u.sample.used_bytes;
		sm->total_bytes = rec->u.sample.total_bytes;
		sm->process_known = rec->u.sample.flags & GMT_SAMPLE_PROCESS_KNOWN;
		sm->process_used_bytes = sm->process_known ? rec->u.sample.process_used_bytes : 0;
		sm->reason = (int)rec->u.sample.reason;
		break;
	}
	case GMT_REC_RANGE: {
		GROW(t->ranges, t->nranges, t->ranges_cap);
		t->ranges[t->nranges++] = (struct trace_range){
		    .time_ns = rec->u.range.time_ns,
		    .tid = (int)rec->u.range.tid,
		    .op = (int)rec->u.range.op,
		    .id = rec->u.range.id,
		    .source = (int)rec->u.range.source,
		    .text = xstrdup(rec->u.range.text.s),
		};
		break;
	}
	case GMT_REC_PYFRAME: {
		struct trace_pyframe *pf = NULL;
		uint64_t id = rec->u.pyframe.id;
		HASH_FIND(hh, t->pyframes, &id, sizeof(id), pf);
		if (pf)
			break; /* the first one wins */
		pf = xcalloc(1, sizeof(*pf));
		pf->id = id;
		pf->function = xstrdup(rec->u.pyframe.function.s);
		pf->file = xstrdup(rec->u.pyframe.file.s);
		pf->line = rec->u.pyframe.line;
		HASH_ADD(hh, t->pyframes, id, sizeof(pf->id), pf);
		break;
	}
	case GMT_REC_TRAILER:
		t->has_trailer = true;
		t->trailer_end_ns = rec->u.trailer.end_time_ns;
		t->trailer_events = rec->u.trailer.events;
		t->trailer_lost = rec->u.trailer.lost;
		t->trailer_reason = rec->u.trailer.reason;
		break;
	case GMT_REC_EVENT:
		on_event_meta(t, &rec->u.event);
		break;
	default:
		break;
	}
}

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
	for (size_t i = 0; i < t->nmods; i++) {
		struct trace_module *m = &t->mods[i];
		m->library = path_basename(m->path);
		m->cuda = cuda_path(m->path);
	}
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
			on_record(t, &rec);
	}
	open_end(t);
	return -1;
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
	for (size_t i = 0; i < t->nranges; i++)
		free(t->ranges[i].text);
	free(t->ranges);
	struct trace_pyframe *pf, *pt;
	HASH_ITER(hh, t->pyframes, pf, pt)
	{
		HASH_DEL(t->pyframes, pf);
		free(pf->function);
		free(pf->file);
		free(pf);
	}
	free(t->nodes);
	free(t->command);
	free(t->exe);
	free(t->host);
	if (t->symbolizer)
		gmt_symbolizer_free(t->symbolizer);
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
	dev_get(t, device);
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
			on_record(t, &rec);
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
	return reader_finish_cmd(t->cmd, t->path, &t->info);
}

int64_t trace_rel(const struct trace *t, uint64_t time_ns)
{
	return (int64_t)(time_ns - t->hdr.start_mono_ns);
}

uint64_t trace_end_ns(const struct trace *t)
{
	return t->has_trailer ? t->trailer_end_ns : t->last_time_ns;
}

/* ---- stacks and frames ----------------------------------------------- */

const struct trace_module *trace_module_at(const struct trace *t, uint64_t ip)
{
	for (size_t i = 0; i < t->nmods; i++)
		if (ip >= t->mods[i].start && ip < t->mods[i].end)
			return &t->mods[i];
	return NULL;
}

static void resolve(struct trace *t, struct trace_frame *f)
{
	if (GMT_IS_PYFRAME_IP(f->ip)) {
		struct trace_pyframe *pf = NULL;
		uint64_t id = GMT_PYFRAME_ID(f->ip);
		f->python = true;
		f->module = NULL;
		if (id == GMT_PYFRAME_NONE) {
			f->function = "[Python frames unavailable: the GIL was not held]";
			return;
		}
		HASH_FIND(hh, t->pyframes, &id, sizeof(id), pf);
		if (pf) {
			f->function = pf->function;
			f->file = pf->file[0] ? pf->file : NULL;
			f->line = pf->line;
		} else {
			f->function = "[Python frame]"; /* its PYFRAME record was lost */
		}
		return;
	}
	struct trace_symbol *sym = NULL;
	uint64_t ip = f->ip;
	HASH_FIND(hh, t->symbols, &ip, sizeof(ip), sym);
	if (!sym && ip) {
		ip--;
		HASH_FIND(hh, t->symbols, &ip, sizeof(ip), sym);
	}
	if (sym && sym->function[0]) {
		f->function = sym->function;
		f->file = sym->file[0] ? sym->file : NULL;
		f->line = sym->line;
		return;
	}
	/* no SYMBOL record (the process died before symbolizing): look the
	 * address up in the module files, when they are still here */
	if (!t->symbolizer_tried) {
		t->symbolizer_tried = true;
		struct gmt_symbolizer *s = gmt_symbolizer_new();
		for (size_t i = 0; s && i < t->nmods; i++) {
			const struct trace_module *m = &t->mods[i];
			gmt_symbolizer_add_module(s, m->path, m->bias, m->start, m->end,
						  m->build_id_len ? m->build_id : NULL,
						  (unsigned)m->build_id_len);
		}
		t->symbolizer = s;
	}
	struct gmt_symbol out = {0};
	if (t->symbolizer &&
	    gmt_symbolize(t->symbolizer, f->depth ? f->ip - 1 : f->ip, &out) == 0 && out.function) {
		/* owned by the symbolizer, which lives until trace_close */
		f->function = out.function;
		f->file = out.file;
		f->line = out.line;
		char *d = demangle(out.function);
		if (d) /* kept as a SYMBOL would be: freed with the others */
			f->function = add_symbol(t, f->ip, 0, d, out.file ? out.file : "", out.line)
					  ->function;
	}
}

int trace_stack_depth(const struct trace *t, uint64_t id)
{
	int n = 0;
	while (id != 0 && id <= t->nnodes && n < MAX_DEPTH) {
		n++;
		id = t->nodes[id - 1].parent;
	}
	return n;
}

static bool raw_frame(const struct trace *t, uint64_t id, int depth, struct trace_frame *out)
{
	for (int d = 0; id != 0 && id <= t->nnodes && d < MAX_DEPTH; d++) {
		const struct trace_node *n = &t->nodes[id - 1];
		if (d == depth) {
			memset(out, 0, sizeof(*out));
			out->ip = n->ip;
			out->depth = d;
			out->module = GMT_IS_PYFRAME_IP(n->ip) ? NULL : trace_module_at(t, n->ip);
			out->python = GMT_IS_PYFRAME_IP(n->ip);
			return true;
		}
		id = n->parent;
	}
	return false;
}

bool trace_frame(struct trace *t, uint64_t id, int depth, struct trace_frame *out)
{
	if (!raw_frame(t, id, depth, out))
		return false;
	resolve(t, out);
	return true;
}

bool trace_site(struct trace *t, uint64_t stack_id, struct trace_frame *out)
{
	struct trace_frame first = {0};
	bool have_first = false;
	uint64_t id = stack_id;
	for (int depth = 0; id != 0 && id <= t->nnodes && depth < MAX_DEPTH; depth++) {
		const struct trace_node *n = &t->nodes[id - 1];
		bool py = GMT_IS_PYFRAME_IP(n->ip);
		struct trace_frame f = {.ip = n->ip,
					.depth = depth,
					.module = py ? NULL : trace_module_at(t, n->ip),
					.python = py};
		if (!have_first) {
			first = f;
			have_first = true;
		}
		if (!f.module || !f.module->cuda) {
			*out = f;
			resolve(t, out);
			return true;
		}
		id = n->parent;
	}
	if (!have_first)
		return false;
	*out = first;
	out->in_cuda = true;
	resolve(t, out);
	return true;
}

const char *trace_library(struct trace *t, uint64_t id)
{
	struct trace_frame f;
	if (!id || !trace_site(t, id, &f))
		return "(no stack)";
	if (f.python)
		return "python";
	return f.module ? f.module->library : "(unknown module)";
}

const char *trace_frame_text(const struct trace_frame *f, char *buf, size_t size)
{
	if (f->function) {
		if (f->file)
			snprintf(buf, size, "%s (%s:%" PRIu64 ")", f->function, f->file, f->line);
		else if (f->module)
			snprintf(buf, size, "%s (%s+0x%" PRIx64 ")", f->function,
				 f->module->library, f->ip - f->module->bias);
		else
			snprintf(buf, size, "%s", f->function);
	} else if (f->module) {
		snprintf(buf, size, "%s+0x%" PRIx64, f->module->library, f->ip - f->module->bias);
	} else {
		snprintf(buf, size, "0x%" PRIx64, f->ip);
	}
	return buf;
}

const char *trace_callers_text(struct trace *t, uint64_t stack_id, int site_depth, int ncallers,
			       char *buf, size_t size)
{
	size_t len = strlen(buf);
	for (int d = 1; d <= ncallers && len + 1 < size; d++) {
		struct trace_frame fr;
		if (!trace_frame(t, stack_id, site_depth + d, &fr))
			break;
		/* Below main there is only the C start-up code. */
		if (fr.function &&
		    (!strncmp(fr.function, "__libc_start", 12) || !strcmp(fr.function, "_start")))
			break;
		if (fr.python && fr.function && fr.file)
			snprintf(buf + len, size - len, " <- %s (%s:%" PRIu64 ")", fr.function,
				 fr.file, fr.line);
		else if (fr.function)
			snprintf(buf + len, size - len, " <- %s", fr.function);
		else if (fr.module)
			snprintf(buf + len, size - len, " <- %s+0x%" PRIx64, fr.module->library,
				 fr.ip - fr.module->bias);
		else
			snprintf(buf + len, size - len, " <- 0x%" PRIx64, fr.ip);
		len += strlen(buf + len);
	}
	return buf;
}

/* ---- grouping -------------------------------------------------------- */

int trace_group_parse(const char *s, enum trace_group *out)
{
	static const char *const names[] = {"stack", "function", "library", "api"};
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum trace_group)i;
			return 0;
		}
	return -1;
}

const char *trace_group_key(struct trace *t, enum trace_group by, int depth, uint64_t stack_id,
			    uint32_t api, char *buf, size_t size)
{
	struct trace_frame f;
	switch (by) {
	case GROUP_API:
		snprintf(buf, size, "%s", api_name(api));
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

/* ---- arguments, several traces --------------------------------------- */

int trace_args(int argc, char **argv, const char *help, struct trace_opt *opts, size_t nopts,
	       const char ***paths, int *npaths)
{
	const char *cmd = argv[0];
	const char **pos = xrealloc(NULL, (size_t)argc * sizeof(*pos));
	int npos = 0, dashdash = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = 1;
			continue;
		}
		if (dashdash || a[0] != '-' || !a[1]) {
			pos[npos++] = a;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(help, stdout);
			free(pos);
			return 0;
		}
		struct trace_opt *o = NULL;
		const char *val = NULL;
		for (size_t k = 0; k < nopts && !o; k++) {
			const char *names[2] = {opts[k].name, opts[k].alias};
			for (int j = 0; j < 2 && !o; j++) {
				if (!names[j])
					continue;
				size_t n = strlen(names[j]);
				if (strncmp(a, names[j], n) != 0)
					continue;
				if (a[n] == 0) {
					o = &opts[k];
				} else if (a[n] == '=') {
					o = &opts[k];
					val = a + n + 1;
				}
			}
		}
		if (!o) {
			free(pos);
			return say_usage_error(cmd, "unknown option '%s'", a);
		}
		if (!o->takes_value && val) {
			free(pos);
			return say_usage_error(cmd, "option '%s' takes no value", o->name);
		}
		if (o->takes_value && !val) {
			if (i + 1 >= argc) {
				free(pos);
				return say_usage_error(cmd, "option '%s' needs a value", o->name);
			}
			val = argv[++i];
		}
		o->set = true;
		o->value = val;
	}
	if (npos == 0) {
		free(pos);
		return say_usage_error(cmd, "missing TRACE argument");
	}
	*paths = pos;
	*npaths = npos;
	return -1;
}

int trace_arg_uint(const char *cmd, const char *name, const char *value, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!value || !isdigit((unsigned char)value[0]))
		return say_usage_error(cmd, "option '%s' wants a number, not '%s'", name,
				       value ? value : "");
	unsigned long long x = strtoull(value, &end, 10);
	if (*end || errno)
		return say_usage_error(cmd, "option '%s' wants a number, not '%s'", name, value);
	*out = x;
	return -1;
}

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
	if (!a || a->op != GMT_OP_ALLOC || e->result != 0 || (e->flags & GMT_EV_FAILED))
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
	else if (a < 1000000)
		snprintf(buf, 32, "%c%.3g us", sign, (double)a / 1e3);
	else if (a < 1000000000)
		snprintf(buf, 32, "%c%.3g ms", sign, (double)a / 1e6);
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

int trace_grouping_opts(const char *cmd, const struct trace_opt *by, const struct trace_opt *depth,
			enum trace_group *out_by, uint64_t *out_depth)
{
	*out_by = GROUP_STACK;
	*out_depth = 3;
	if (by->set && trace_group_parse(by->value, out_by) != 0)
		return say_usage_error(
		    cmd, "--by: unknown grouping '%s' (stack, function, library, api)", by->value);
	int rc = -1;
	if (depth->set)
		rc = trace_arg_uint(cmd, "--depth", depth->value, out_depth);
	if (rc < 0 && *out_depth > 64)
		rc = say_usage_error(cmd, "--depth: at most 64");
	return rc;
}
