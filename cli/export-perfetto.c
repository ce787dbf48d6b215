/* export --format perfetto and --format chrome-json: the trace on a
 * timeline. Both have a counter track per device and kind of memory, the
 * NVML process usage as a counter, phases (NVTX ranges) as slices per
 * thread, marks and failed allocations (OOMs) as instant events, and a
 * marker when data is missing. perfetto is Perfetto's own protobuf trace
 * (TracePacket, protos/perfetto/trace/trace.proto), written packet by packet
 * as the events are walked; chrome-json is the Trace Event Format's JSON,
 * which Perfetto and chrome://tracing also read, about 4 times larger and
 * slower to load. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/hash.h"

#include "cli/cli.h"
#include "cli/export-perfetto.h"
#include "cli/pbuf.h"
#include "analysis/snapshot.h"
#include "analysis/trace.h"
#include "reader/xalloc.h"

/* The process's label in both formats. */
static void process_label(const struct trace *t, char *buf, size_t size, bool with_pid)
{
	const char *cmd = t->command && *t->command ? t->command : "process";
	if (with_pid)
		snprintf(buf, size, "%s (pid %" PRIu64 ")", cmd, t->pid);
	else
		snprintf(buf, size, "%s", cmd);
}

/* What an OOM instant says: "OOM: cudaMalloc 70 GiB" and its site. */
static void oom_texts(struct trace *t, const struct gmt_event *e, char *name, size_t nsize,
		      char *site, size_t ssize)
{
	char sz[32];
	struct trace_frame fr;
	site[0] = '\0';
	if (trace_site(t, e->stack_id, &fr))
		trace_frame_text(&fr, site, ssize);
	snprintf(name, nsize, "OOM: %s %s", api_name(e->api), fmt_size(sz, e->size));
}

static bool is_failed_alloc(const struct gmt_event *e)
{
	const struct api_info *a = api_lookup(e->api);
	return gmt_failed(e->result, e->flags) && a && a->op == GMT_OP_ALLOC;
}

/* ---- perfetto: TracePacket protobuf ------------------------------------ */

/* Field numbers and enum values of the messages written, from Perfetto's
 * public protos/perfetto/trace/ (the subset is tests/eco/perfetto_trace.proto,
 * which the decoder test reads). */
enum {
	TRACE_PACKET = 1,
	PKT_TIMESTAMP = 8,
	PKT_SEQ_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_SEQ_FLAGS = 13,
	PKT_TRACK_DESCRIPTOR = 60,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT = 5,
	TD_COUNTER = 8,
	PD_PID = 1,
	PD_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_NAME = 5,
	CD_UNIT = 3,
	UNIT_SIZE_BYTES = 3,
	TE_DEBUG = 4,
	TE_TYPE = 9,
	TE_TRACK = 11,
	TE_CATEGORIES = 22,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
	TYPE_COUNTER = 4,
	DA_BOOL = 2,
	DA_UINT = 3,
	DA_INT = 4,
	DA_STRING = 6,
	DA_NAME = 10,
};

/* Track uuids: a base made from the process (so traces of several processes
 * opened together do not share tracks) plus the track's kind and number. */
enum { TK_PROCESS, TK_MEMORY, TK_NVML, TK_THREAD, TK_ASYNC };

struct pb_async { /* the track of an open START/END range, by its id */
	UT_hash_handle hh;
	uint64_t id, uuid;
};

struct pbw {
	FILE *f;
	struct trace *t;
	struct pbuf pkt, ev, sub, ann; /* reused for every packet */
	uint64_t base;
	uint64_t last[SNAPSHOT_DEVS][DK_COUNT];
	bool described[SNAPSHOT_DEVS][DK_COUNT];
	uint64_t *tids, *nvml; /* threads and NVML devices with a track */
	size_t ntids, ctids, nnvml, cnvml;
	struct pb_async *async;
	uint64_t nasync;
};

static uint64_t pb_uuid(const struct pbw *w, int kind, uint64_t n)
{
	return w->base + ((uint64_t)kind << 40) + (n & ((1ULL << 40) - 1));
}

static uint64_t pb_ts(const struct trace *t, uint64_t ns)
{
	int64_t rel = trace_rel(t, ns);
	return rel > 0 ? (uint64_t)rel : 0;
}

/* Writes w->pkt as one TracePacket of the Trace and empties it. */
static void pb_emit(struct pbw *w)
{
	struct pbuf head = {0};
	uint8_t h[16];
	pb_u(&w->pkt, PKT_SEQ_ID, 1);
	head = (struct pbuf){.p = h, .n = 0, .cap = sizeof(h)};
	pb_varint(&head, (uint64_t)TRACE_PACKET << 3 | 2);
	pb_varint(&head, w->pkt.n);
	fwrite(head.p, 1, head.n, w->f);
	fwrite(w->pkt.p, 1, w->pkt.n, w->f);
	w->pkt.n = 0;
}

/* A TrackDescriptor packet from w->sub (the descriptor's body). */
static void pb_emit_track(struct pbw *w)
{
	pb_msg(&w->pkt, PKT_TRACK_DESCRIPTOR, &w->sub);
	w->sub.n = 0;
	pb_emit(w);
}

/* A TrackEvent packet at ts from w->ev (the event's body). */
static void pb_emit_event(struct pbw *w, uint64_t ts)
{
	pb_u(&w->pkt, PKT_TIMESTAMP, ts);
	pb_msg(&w->pkt, PKT_TRACK_EVENT, &w->ev);
	w->ev.n = 0;
	pb_emit(w);
}

/* One DebugAnnotation on w->ev: name and a string, unsigned or signed value. */
static void pb_ann_str(struct pbw *w, const char *name, const char *v)
{
	pb_str(&w->ann, DA_NAME, name);
	pb_str(&w->ann, DA_STRING, v);
	pb_msg(&w->ev, TE_DEBUG, &w->ann);
	w->ann.n = 0;
}

static void pb_ann_num(struct pbw *w, const char *name, int type, uint64_t v)
{
	pb_str(&w->ann, DA_NAME, name);
	pb_u(&w->ann, type, v);
	pb_msg(&w->ev, TE_DEBUG, &w->ann);
	w->ann.n = 0;
}

/* A counter track in bytes under the process. */
static void pb_counter_track(struct pbw *w, uint64_t uuid, const char *name)
{
	struct pbuf cd = {0};
	pb_u(&w->sub, TD_UUID, uuid);
	pb_u(&w->sub, TD_PARENT, pb_uuid(w, TK_PROCESS, 0));
	pb_str(&w->sub, TD_NAME, name);
	pb_u(&cd, CD_UNIT, UNIT_SIZE_BYTES);
	pb_msg(&w->sub, TD_COUNTER, &cd);
	pb_free(&cd);
	pb_emit_track(w);
}

static void pb_counter(struct pbw *w, uint64_t uuid, uint64_t ts, uint64_t v)
{
	pb_u(&w->ev, TE_TYPE, TYPE_COUNTER);
	pb_u(&w->ev, TE_TRACK, uuid);
	pb_u(&w->ev, TE_COUNTER_VALUE, v);
	pb_emit_event(w, ts);
}

/* Whether v is in the set (adding it if not). */
static bool pb_seen(uint64_t **set, size_t *n, size_t *cap, uint64_t v)
{
	for (size_t i = 0; i < *n; i++)
		if ((*set)[i] == v)
			return true;
	GROW(*set, *n, *cap);
	(*set)[(*n)++] = v;
	return false;
}

/* The thread's track, described on first use. */
static uint64_t pb_thread(struct pbw *w, uint64_t tid)
{
	uint64_t uuid = pb_uuid(w, TK_THREAD, tid);
	if (pb_seen(&w->tids, &w->ntids, &w->ctids, tid))
		return uuid;
	char name[48];
	struct pbuf td = {0};
	snprintf(name, sizeof(name), "thread %" PRIu64, tid);
	pb_u(&td, THD_PID, w->t->pid);
	pb_u(&td, THD_TID, tid);
	pb_str(&td, THD_NAME, name);
	pb_u(&w->sub, TD_UUID, uuid);
	pb_msg(&w->sub, TD_THREAD, &td);
	pb_free(&td);
	pb_emit_track(w);
	return uuid;
}

static void pb_on_event(void *ctx, const struct gmt_event *e, const uint64_t (*kinds)[DK_COUNT],
			const bool *changed)
{
	struct pbw *w = ctx;
	uint64_t ts = pb_ts(w->t, e->time_ns);
	for (int d = 0; d < SNAPSHOT_DEVS; d++) {
		if (!changed[d])
			continue;
		for (int k = 0; k < DK_COUNT; k++) { /* only the values that moved */
			uint64_t uuid = pb_uuid(w, TK_MEMORY, (uint64_t)d * DK_COUNT + (uint64_t)k);
			if (w->last[d][k] == kinds[d][k])
				continue;
			if (!w->described[d][k]) { /* a kind's track once it is used */
				char name[96];
				snprintf(name, sizeof(name), "GPU %d memory: %s", d,
					 dev_kind_label[k]);
				pb_counter_track(w, uuid, name);
				pb_counter(w, uuid, 0, 0);
				w->described[d][k] = true;
			}
			pb_counter(w, uuid, ts, kinds[d][k]);
			w->last[d][k] = kinds[d][k];
		}
	}
	if (!is_failed_alloc(e))
		return;
	char name[96], site[512];
	oom_texts(w->t, e, name, sizeof(name), site, sizeof(site));
	uint64_t track = pb_thread(w, e->tid);
	const char *res = result_name(e->api, e->result);
	pb_u(&w->ev, TE_TYPE, TYPE_INSTANT);
	pb_u(&w->ev, TE_TRACK, track);
	pb_str(&w->ev, TE_CATEGORIES, "oom");
	pb_str(&w->ev, TE_NAME, name);
	pb_ann_str(w, "api", api_name(e->api));
	pb_ann_num(w, "size", DA_UINT, e->size);
	pb_ann_num(w, "device", DA_INT, (uint64_t)e->device);
	if (res)
		pb_ann_str(w, "result", res);
	else
		pb_ann_num(w, "result", DA_UINT, e->result);
	pb_ann_str(w, "site", site);
	pb_emit_event(w, ts);
}

/* The process's track, first, and the marker of missing data on it. */
static void pb_begin(struct pbw *w)
{
	struct trace *t = w->t;
	char label[512];
	struct pbuf pd = {0};
	process_label(t, label, sizeof(label), false);
	pb_u(&pd, PD_PID, t->pid);
	pb_str(&pd, PD_NAME, label);
	pb_u(&w->sub, TD_UUID, pb_uuid(w, TK_PROCESS, 0));
	pb_msg(&w->sub, TD_PROCESS, &pd);
	pb_free(&pd);
	pb_u(&w->pkt, PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_emit_track(w);
	if (!trace_partial(t))
		return;
	char text[256];
	pb_u(&w->ev, TE_TYPE, TYPE_INSTANT);
	pb_u(&w->ev, TE_TRACK, pb_uuid(w, TK_PROCESS, 0));
	pb_str(&w->ev, TE_CATEGORIES, "gpumemtrace");
	pb_str(&w->ev, TE_NAME, trace_partial_text(t, text, sizeof(text)));
	pb_ann_num(w, "complete", DA_BOOL, t->complete);
	pb_ann_num(w, "lost_events", DA_UINT, trace_lost_own(t));
	pb_ann_str(w, "partial", trace_partial_what(t, text, sizeof(text)));
	pb_emit_event(w, 0);
}

/* A phase: PUSH/POP slices and MARK instants on the thread's track,
 * START/END slices on a track of their own (they need not nest). */
static void pb_range(struct pbw *w, const struct trace_range *r)
{
	const char *cat = r->source == GMT_RANGE_SRC_NVTX ? "nvtx" : "gpumemtrace";
	const char *name = r->text && *r->text ? r->text : "range";
	uint64_t track;
	struct pb_async *a = NULL;
	if (r->op == GMT_RANGE_START || r->op == GMT_RANGE_END) {
		HASH_FIND(hh, w->async, &r->id, sizeof(r->id), a);
		if (r->op == GMT_RANGE_END && !a)
			return; /* its START is not in the trace */
		if (r->op == GMT_RANGE_START) {
			if (!a) {
				a = xcalloc(1, sizeof(*a));
				a->id = r->id;
				HASH_ADD(hh, w->async, id, sizeof(a->id), a);
			}
			a->uuid = pb_uuid(w, TK_ASYNC, w->nasync++);
			pb_u(&w->sub, TD_UUID, a->uuid);
			pb_u(&w->sub, TD_PARENT, pb_uuid(w, TK_PROCESS, 0));
			pb_str(&w->sub, TD_NAME, name);
			pb_emit_track(w);
		}
		track = a->uuid;
	} else if (r->op >= GMT_RANGE_PUSH && r->op <= GMT_RANGE_MARK) {
		track = pb_thread(w, (uint64_t)r->tid);
	} else {
		return;
	}
	static const int type[] = {
	    0, TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_INSTANT};
	pb_u(&w->ev, TE_TYPE, (uint64_t)type[r->op]);
	pb_u(&w->ev, TE_TRACK, track);
	if (r->op != GMT_RANGE_POP && r->op != GMT_RANGE_END) {
		pb_str(&w->ev, TE_CATEGORIES, cat);
		pb_str(&w->ev, TE_NAME, name);
	}
	pb_emit_event(w, pb_ts(w->t, r->time_ns));
	if (r->op == GMT_RANGE_END) {
		HASH_DEL(w->async, a);
		free(a);
	}
}

static void pb_sample(struct pbw *w, const struct trace_sample *s)
{
	uint64_t dev = (uint64_t)s->device;
	uint64_t uuid = pb_uuid(w, TK_NVML, dev + 1);
	if (!pb_seen(&w->nvml, &w->nnvml, &w->cnvml, dev)) {
		char name[64];
		snprintf(name, sizeof(name), "GPU %" PRId64 " NVML process usage", s->device);
		pb_counter_track(w, uuid, name);
	}
	pb_counter(w, uuid, pb_ts(w->t, s->time_ns), s->process_used_bytes);
}

int export_perfetto(FILE *f, struct trace *t)
{
	struct pbw w = {.f = f, .t = t};
	uint64_t x = (t->pid + 1) * 0x9e3779b97f4a7c15ULL ^ t->start_wall_ns;
	x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ULL;
	w.base = (x ^ (x >> 27)) & ~((1ULL << 48) - 1); /* kinds and numbers below */
	if (!w.base)
		w.base = 1ULL << 48;
	pb_begin(&w);
	int rc = snapshot_walk(t, true, pb_on_event, &w);
	for (size_t i = 0; i < t->nranges; i++)
		pb_range(&w, &t->ranges[i]);
	for (size_t i = 0; i < t->nsamples; i++)
		if (t->samples[i].process_known)
			pb_sample(&w, &t->samples[i]);
	struct pb_async *a, *tmp;
	HASH_ITER(hh, w.async, a, tmp)
	{
		HASH_DEL(w.async, a);
		free(a);
	}
	pb_free(&w.pkt);
	pb_free(&w.ev);
	pb_free(&w.sub);
	pb_free(&w.ann);
	free(w.tids);
	free(w.nvml);
	return rc;
}

/* ---- chrome-json: Trace Event Format ----------------------------------- */
struct pf {
	FILE *f;
	struct trace *t;
	bool first;
};

static void pf_sep(struct pf *p)
{
	fputs(p->first ? "\n" : ",\n", p->f);
	p->first = false;
}

static double pf_us(const struct trace *t, uint64_t ns)
{
	return (double)trace_rel(t, ns) / 1000.0;
}

static void pf_event(void *ctx, const struct gmt_event *e, const uint64_t (*kinds)[DK_COUNT],
		     const bool *changed)
{
	struct pf *p = ctx;
	for (int d = 0; d < SNAPSHOT_DEVS; d++) {
		if (!changed[d])
			continue;
		pf_sep(p);
		fprintf(p->f,
			"{\"name\":\"GPU %d memory\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%" PRIu64
			",\"args\":{",
			d, pf_us(p->t, e->time_ns), p->t->pid);
		for (int k = 0; k < DK_COUNT; k++)
			fprintf(p->f, "%s\"%s\":%" PRIu64, k ? "," : "", dev_kind_key[k],
				kinds[d][k]);
		fputs("}}", p->f);
	}
	if (is_failed_alloc(e)) {
		char name[96], site[512];
		oom_texts(p->t, e, name, sizeof(name), site, sizeof(site));
		const char *res = result_name(e->api, e->result);
		pf_sep(p);
		fputs("{\"name\":", p->f);
		json_cstr(p->f, name);
		fprintf(p->f,
			",\"cat\":\"oom\",\"ph\":\"i\",\"s\":\"p\",\"ts\":%.3f,\"pid\":%" PRIu64
			",\"tid\":%" PRIu64 ",\"args\":{\"api\":",
			pf_us(p->t, e->time_ns), p->t->pid, e->tid);
		json_cstr(p->f, api_name(e->api));
		fprintf(p->f, ",\"size\":%" PRIu64 ",\"device\":%" PRId64 ",\"result\":", e->size,
			e->device);
		if (res)
			json_cstr(p->f, res);
		else
			fprintf(p->f, "%" PRIu64, e->result);
		fputs(",\"site\":", p->f);
		json_cstr(p->f, site);
		fputs("}}", p->f);
	}
}

int export_chrome_json(FILE *f, struct trace *t)
{
	struct pf p = {.f = f, .t = t, .first = true};
	char text[256];
	/* otherData: the Trace Event Format's place for the trace's own facts */
	fprintf(
	    f,
	    "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"complete\":%s,\"lost_events\":%" PRIu64
	    ",\"partial\":",
	    t->complete ? "true" : "false", trace_lost_own(t));
	if (trace_partial(t))
		json_cstr(f, trace_partial_what(t, text, sizeof(text)));
	else
		fputs("null", f);
	fputs("},\"traceEvents\":[", f);
	if (trace_partial(t)) { /* and a marker across the timeline, where it is seen */
		pf_sep(&p);
		fputs("{\"name\":", f);
		json_cstr(f, trace_partial_text(t, text, sizeof(text)));
		fprintf(f, ",\"ph\":\"i\",\"s\":\"g\",\"ts\":0,\"pid\":%" PRIu64 ",\"tid\":0}",
			t->pid);
	}
	pf_sep(&p);
	fprintf(f,
		"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRIu64 ",\"args\":{\"name\":",
		t->pid);
	char label[512];
	process_label(t, label, sizeof(label), true);
	json_cstr(f, label);
	fputs("}}", f);
	/* thread names for the threads that have phases */
	for (size_t i = 0; i < t->nranges; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = t->ranges[j].tid == t->ranges[i].tid;
		if (seen)
			continue;
		pf_sep(&p);
		fprintf(f,
			"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRIu64
			",\"tid\":%d,\"args\":{\"name\":\"thread %d\"}}",
			t->pid, t->ranges[i].tid, t->ranges[i].tid);
	}
	int rc = snapshot_walk(t, true, pf_event, &p);
	for (size_t i = 0; i < t->nranges; i++) {
		const struct trace_range *r = &t->ranges[i];
		static const char *const ph[] = {"", "B", "E", "b", "e", "i"};
		if (r->op < GMT_RANGE_PUSH || r->op > GMT_RANGE_MARK)
			continue;
		pf_sep(&p);
		fprintf(f,
			"{\"ph\":\"%s\",\"cat\":\"%s\",\"ts\":%.3f,\"pid\":%" PRIu64 ",\"tid\":%d",
			ph[r->op], r->source == GMT_RANGE_SRC_NVTX ? "nvtx" : "gpumemtrace",
			pf_us(t, r->time_ns), t->pid, r->tid);
		if (r->op != GMT_RANGE_POP) {
			fputs(",\"name\":", f);
			json_cstr(f, r->text && *r->text ? r->text : "range");
		}
		if (r->op == GMT_RANGE_START || r->op == GMT_RANGE_END)
			fprintf(f, ",\"id\":\"0x%" PRIx64 "\"", r->id);
		if (r->op == GMT_RANGE_MARK)
			fputs(",\"s\":\"t\"", f);
		fputs("}", f);
	}
	for (size_t i = 0; i < t->nsamples; i++) {
		const struct trace_sample *s = &t->samples[i];
		if (!s->process_known)
			continue;
		pf_sep(&p);
		fprintf(f,
			"{\"name\":\"GPU %" PRId64 " NVML process usage\",\"ph\":\"C\",\"ts\":%.3f,"
			"\"pid\":%" PRIu64 ",\"args\":{\"bytes\":%" PRIu64 "}}",
			s->device, pf_us(t, s->time_ns), t->pid, s->process_used_bytes);
	}
	fputs("\n]}\n", f);
	return rc;
}
