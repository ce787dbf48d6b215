/* libgpumemtrace-reader.so: a trace as tables (include/gpumemtrace/
 * trace-reader.h). The tables come from analysis/trace.h, so events are in
 * the reports' time order and their phases and live bytes are the reports'
 * own. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi/columns.h"
#include "capi/guard.h"
#include "analysis/phase.h"
#include "analysis/replay.h"
#include "analysis/trace.h"
#include "common/api.h"
#include "common/events.h"
#include "common/text.h"
#include "reader/reader.h"

/* ---- the schema: one list, which docs/python.md is made from ---------- */

#define T_EVENTS   0
#define T_FRAMES   1
#define T_STACKS   2
#define T_SAMPLES  3
#define T_RANGES   4
#define T_COUNTERS 5
#define T_COUNT	   6

static const struct {
	const char *name, *doc;
} tables[T_COUNT] = {
    {"events", "every traced call, in time order (file order among equal times), as the reports "
	       "replay them"},
    {"frames", "the frames of every stack an event names, innermost (depth 0) first"},
    {"stacks", "every stack an event names, with its allocation site and library"},
    {"samples", "NVML's readings of each device (GPUMEMTRACE_SAMPLE_MS)"},
    {"ranges", "phase markers: NVTX ranges and the marker API's, in time order"},
    {"counters", "the frameworks' own memory counters (run --framework-counters), one row per "
		 "counter per reading"},
};

struct colspec {
	int table;
	const char *name;
	int type;
	const char *doc;
};

/* Each table's columns in order; the enums below index them. */
static const struct colspec cols[] = {
    {T_EVENTS, "time_ns", GMTR_I64, "ns since the trace began"},
    {T_EVENTS, "tid", GMTR_I64, "the calling thread (Linux thread id)"},
    {T_EVENTS, "api", GMTR_DICT, "the CUDA function called: cuMemAlloc_v2, cudaFree..."},
    {T_EVENTS, "op", GMTR_DICT,
     "alloc, free, vmm_map, vmm_unmap, vmm_retain, pool_trim, lookup, ctx_create, ctx_destroy"},
    {T_EVENTS, "kind", GMTR_DICT,
     "what an alloc makes: device, async, vmm_phys, managed, host_pinned, host_registered, "
     "vmm_va, array, ipc, pool; null for other calls"},
    {T_EVENTS, "device", GMTR_I32, "CUDA device ordinal as recorded; -1: host or unknown"},
    {T_EVENTS, "ptr", GMTR_U64, "the address (or handle) allocated or freed"},
    {T_EVENTS, "size", GMTR_U64, "bytes (0 where the call has no size)"},
    {T_EVENTS, "result", GMTR_U64, "the call's return code: 0 is success"},
    {T_EVENTS, "failed", GMTR_BOOL, "the call failed"},
    {T_EVENTS, "oom", GMTR_BOOL, "it failed out of memory"},
    {T_EVENTS, "stack_id", GMTR_U64, "its call stack (frames, stacks); 0: none"},
    {T_EVENTS, "phase", GMTR_DICT,
     "the innermost range open on its thread, with the enclosing ones (\"step/forward\"), as "
     "summary's phases; \"(no phase)\""},
    {T_EVENTS, "device_bytes", GMTR_U64,
     "traced device memory live on `device` after the event (summary's rules: its maximum per "
     "device is summary's peak); null when device is -1"},
    {T_EVENTS, "process_bytes", GMTR_U64,
     "traced device memory live on all of the process's devices after the event"},
    {T_FRAMES, "stack_id", GMTR_U64, "the stack"},
    {T_FRAMES, "depth", GMTR_I32, "0: the innermost frame (nearest the CUDA call)"},
    {T_FRAMES, "ip", GMTR_U64, "the instruction address (a Python frame: its code's id)"},
    {T_FRAMES, "function", GMTR_DICT, "the function, when named; null otherwise"},
    {T_FRAMES, "file", GMTR_DICT, "its source file, when known"},
    {T_FRAMES, "line", GMTR_I64, "its line, when known"},
    {T_FRAMES, "module", GMTR_DICT, "the library or executable holding it; null for Python"},
    {T_FRAMES, "python", GMTR_BOOL, "a Python frame"},
    {T_FRAMES, "text", GMTR_DICT, "\"function (file:line)\", else \"module+0xoffset\""},
    {T_STACKS, "stack_id", GMTR_U64, "the stack"},
    {T_STACKS, "frames", GMTR_I32, "how many frames it has"},
    {T_STACKS, "site", GMTR_DICT,
     "the allocation site: the first frame of the program's own code (the reports' site rules)"},
    {T_STACKS, "site_function", GMTR_DICT, "the site's function, when named"},
    {T_STACKS, "site_file", GMTR_DICT, "the site's file, when known"},
    {T_STACKS, "site_line", GMTR_I64, "the site's line, when known"},
    {T_STACKS, "site_depth", GMTR_I32, "the site's depth in the stack"},
    {T_STACKS, "library", GMTR_DICT,
     "the library the allocation is charged to (the first frame outside CUDA and the tracer)"},
    {T_SAMPLES, "time_ns", GMTR_I64, "ns since the trace began"},
    {T_SAMPLES, "device", GMTR_I32, "the CUDA ordinal of the device read; -1: not matched"},
    {T_SAMPLES, "nvml_index", GMTR_I64, "NVML's index of the device"},
    {T_SAMPLES, "used_bytes", GMTR_U64, "device memory used, all processes (nvidia-smi's)"},
    {T_SAMPLES, "total_bytes", GMTR_U64, "the device's memory"},
    {T_SAMPLES, "process_used_bytes", GMTR_U64,
     "this process's use as nvidia-smi shows it; null when NVML could not say"},
    {T_SAMPLES, "reason", GMTR_DICT, "periodic, peak, oom, start, end"},
    {T_RANGES, "time_ns", GMTR_I64, "ns since the trace began"},
    {T_RANGES, "tid", GMTR_I64, "the thread"},
    {T_RANGES, "op", GMTR_DICT, "push, pop, start, end, mark"},
    {T_RANGES, "id", GMTR_U64, "a start's id, matched by its end"},
    {T_RANGES, "source", GMTR_DICT, "nvtx or api (the marker API)"},
    {T_RANGES, "text", GMTR_DICT, "the range's name (\"\" for pop and end)"},
    {T_COUNTERS, "time_ns", GMTR_I64, "ns since the trace began"},
    {T_COUNTERS, "tid", GMTR_I64, "the thread that read them"},
    {T_COUNTERS, "reason", GMTR_DICT, "periodic, oom, start, end"},
    {T_COUNTERS, "source", GMTR_DICT, "the framework: torch, jax, tensorflow..."},
    {T_COUNTERS, "device_name", GMTR_DICT, "the framework's device name: cuda:0, gpu:0"},
    {T_COUNTERS, "device", GMTR_I32, "the CUDA ordinal; -1: unknown"},
    {T_COUNTERS, "name", GMTR_DICT, "the counter, as the framework names it"},
    {T_COUNTERS, "value", GMTR_U64, "its value"},
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

enum {
	E_TIME,
	E_TID,
	E_API,
	E_OP,
	E_KIND,
	E_DEV,
	E_PTR,
	E_SIZE,
	E_RESULT,
	E_FAILED,
	E_OOM,
	E_STACK,
	E_PHASE,
	E_DEVBYTES,
	E_PROCBYTES
};

struct gmtr {
	char *path;
	struct trace t;
	bool open;
	char *meta;
	char err[256];
	bool built[T_COUNT];
	struct col c[NCOLS];
	int first[T_COUNT];  /* index in cols of each table's first column */
	uint8_t *stack_seen; /* bit per stack id an event names */
	uint64_t nstack_bits;
	bool stacks_known;
	bool out_of_memory; /* a table build ran out: refuse the rest */
};

GMTR_EXPORT int gmtr_abi(void)
{
	return GMTR_ABI;
}

static int table_id(const char *name)
{
	for (int i = 0; i < T_COUNT; i++)
		if (name && strcmp(name, tables[i].name) == 0)
			return i;
	return -1;
}

static struct col *C(struct gmtr *g, int table, int k)
{
	return &g->c[g->first[table] + k];
}

/* ---- metadata ---------------------------------------------------------- */

static void json_hex(FILE *f, const uint8_t *p, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
	fputc('"', f);
}

static void json_opt_str(FILE *f, const char *s)
{
	if (s)
		json_cstr(f, s);
	else
		fputs("null", f);
}

static void meta_process(FILE *f, struct gmtr *g)
{
	struct trace *t = &g->t;
	fputs("\"process\": ", f);
	if (!t->has_process) {
		fprintf(f, "{\"pid\": %" PRIu32 "}", t->hdr.pid);
		return;
	}
	fprintf(f, "{\"pid\": %" PRIu64 ", \"ppid\": %" PRIu64 ", \"start_wall_ns\": %" PRIu64,
		t->pid, t->ppid, t->start_wall_ns);
	fputs(", \"hostname\": ", f);
	json_opt_str(f, t->host);
	fputs(", \"exe\": ", f);
	json_opt_str(f, t->exe);
	fputs(", \"command\": ", f);
	json_opt_str(f, t->command);
	int64_t rank = trace_rank(t);
	if (rank >= 0)
		fprintf(f, ", \"rank\": %" PRId64, rank);
	else
		fputs(", \"rank\": null", f);
	fputs(", \"env\": {", f);
	for (size_t i = 0; i < t->nenv; i++) {
		fputs(i ? ", " : "", f);
		json_cstr(f, t->env[i].key);
		fputs(": ", f);
		json_cstr(f, t->env[i].value);
	}
	fputs("}}", f);
}

static void meta_devices(FILE *f, struct trace *t)
{
	fputs(", \"devices\": [", f);
	for (size_t i = 0; i < t->ndevs; i++) {
		const struct trace_device *d = &t->devs[i];
		fprintf(f, "%s{\"ordinal\": %" PRId64 ", \"name\": ", i ? ", " : "", d->ordinal);
		json_cstr(f, d->name);
		/* as nvidia-smi -L prints it */
		const uint8_t *u = d->uuid;
		fprintf(f,
			", \"uuid\": "
			"\"GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x"
			"%02x\"",
			u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
			u[12], u[13], u[14], u[15]);
		fprintf(f,
			", \"total_bytes\": %" PRIu64 ", \"compute_capability\": \"%d.%d\", "
			"\"driver_version\": %d}",
			d->total_bytes, d->cc_major, d->cc_minor, d->driver_version);
	}
	fputs("]", f);
}

static void meta_modules(FILE *f, struct trace *t)
{
	fputs(", \"modules\": [", f);
	for (size_t i = 0; i < t->nmods; i++) {
		const struct trace_module *m = &t->mods[i];
		fprintf(f,
			"%s{\"id\": %" PRIu64 ", \"start\": %" PRIu64 ", \"end\": %" PRIu64
			", \"load_bias\": %" PRIu64 ", \"path\": ",
			i ? ", " : "", m->id, m->start, m->end, m->bias);
		json_opt_str(f, m->path);
		fputs(", \"library\": ", f);
		json_opt_str(f, m->library);
		fputs(", \"build_id\": ", f);
		if (m->build_id_len)
			json_hex(f, m->build_id, m->build_id_len);
		else
			fputs("null", f);
		fputs("}", f);
	}
	fputs("]", f);
}

static const char *stop_name(enum gmt_read_stop s)
{
	switch (s) {
	case GMT_STOP_TORN:
		return "torn";
	case GMT_STOP_CORRUPT:
		return "corrupt";
	case GMT_STOP_IO:
		return "io";
	default:
		return NULL;
	}
}

static void meta_status(FILE *f, struct trace *t)
{
	const struct gmt_read_info *in = &t->info;
	fprintf(f,
		", \"status\": {\"complete\": %s, \"events\": %" PRIu64
		", \"lost_events\": %" PRIu64 ", \"lost_in_children\": %" PRIu64
		", \"has_trailer\": %s, \"file_size\": %" PRIu64 ", \"unreadable_bytes\": %" PRIu64
		", \"duration_ns\": %" PRId64 ", \"start_mono_ns\": %" PRIu64
		", \"start_wall_ns\": %" PRIu64 ", \"damage\": [",
		t->complete ? "true" : "false", t->events, t->lost, t->lost_in_children,
		t->has_trailer ? "true" : "false", in->file_size, in->unreadable,
		trace_duration_ns(t), t->hdr.start_mono_ns, t->hdr.start_wall_ns);
	const char *sep = "";
	if (in->damage & GMT_DAMAGE_GAP)
		fprintf(f, "%s\"chunks missing\"", sep), sep = ", ";
	if (in->damage & GMT_DAMAGE_DUP)
		fprintf(f, "%s\"chunks repeated\"", sep), sep = ", ";
	if (in->damage & GMT_DAMAGE_TOTALS)
		fprintf(f, "%s\"event count differs from the trailer's\"", sep);
	fputs("], \"stop\": ", f);
	json_opt_str(f, stop_name(in->stop));
	fputs(", \"stop_message\": ", f);
	json_opt_str(f, in->stop != GMT_STOP_NONE ? in->stop_msg : NULL);
	fprintf(f, ", \"unknown_records_skipped\": %" PRIu64 "}", in->unknown_chunks);
}

static char *make_meta(struct gmtr *g)
{
	struct trace *t = &g->t;
	char *buf;
	size_t len;
	FILE *f = xmemstream(&buf, &len);
	fputs("{\"path\": ", f);
	json_cstr(f, g->path);
	fprintf(f, ", \"format_version\": %u, ", (unsigned)t->hdr.version);
	meta_process(f, g);
	meta_devices(f, t);
	meta_modules(f, t);
	fputs(", \"notes\": [", f);
	for (size_t i = 0; i < t->nnotes; i++) {
		fputs(i ? ", " : "", f);
		json_cstr(f, t->notes[i]);
	}
	fputs("]", f);
	meta_status(f, t);
	fputs("}", f);
	return xmemstream_close(f, &buf);
}

/* ---- open, close --------------------------------------------------------- */

static struct gmtr *gmtr_open_body(const char *path, char *err, size_t errlen)
{
	/* The reader's own error first, as a line for the caller: trace_open
	 * would print it on stderr. */
	struct gmt_read_error re;
	struct gmt_reader *r = gmt_reader_open(path, &re);
	if (!r) {
		if (err && errlen)
			snprintf(err, errlen, "%s", re.msg);
		return NULL;
	}
	gmt_reader_close(r);
	struct gmtr *g = xcalloc(1, sizeof(*g));
	g->path = xstrdup(path);
	if (trace_open(&g->t, "reader", g->path) != -1) {
		if (err && errlen)
			snprintf(err, errlen, "%s",
				 gmtr_said[0] ? gmtr_said : "cannot read the trace");
		free(g->path);
		free(g);
		return NULL;
	}
	g->open = true;
	for (size_t i = 0; i < NCOLS; i++) {
		g->c[i].type = cols[i].type;
		if (i == 0 || cols[i].table != cols[i - 1].table)
			g->first[cols[i].table] = (int)i;
	}
	g->meta = make_meta(g);
	return g;
}

GMTR_GUARDED(struct gmtr *, gmtr_open, (const char *path, char *err, size_t errlen),
	     (path, err, errlen), {
		     if (err && errlen)
			     snprintf(err, errlen, "out of memory");
		     return NULL;
	     })

GMTR_EXPORT void gmtr_close(struct gmtr *g)
{
	if (!g)
		return;
	if (g->out_of_memory) {
		/* A build jumped out mid-update: what it touched may not be
		 * whole enough to free. Leaked, as the header says. */
		free(g);
		return;
	}
	for (size_t i = 0; i < NCOLS; i++)
		col_free(&g->c[i]);
	if (g->open)
		trace_close(&g->t);
	free(g->stack_seen);
	free(g->meta);
	free(g->path);
	free(g);
}

GMTR_EXPORT const char *gmtr_meta_json(struct gmtr *g)
{
	return g->meta ? g->meta : "{}";
}

GMTR_EXPORT const char *gmtr_error(struct gmtr *g)
{
	return g ? g->err : "";
}

/* ---- events -------------------------------------------------------------- */

static const char *const op_names[] = {
    [GMT_OP_ALLOC] = "alloc",
    [GMT_OP_FREE] = "free",
    [GMT_OP_VMM_MAP] = "vmm_map",
    [GMT_OP_VMM_UNMAP] = "vmm_unmap",
    [GMT_OP_VMM_RETAIN] = "vmm_retain",
    [GMT_OP_POOL_TRIM] = "pool_trim",
    [GMT_OP_LOOKUP] = "lookup",
    [GMT_OP_CTX_CREATE] = "ctx_create",
    [GMT_OP_CTX_DESTROY] = "ctx_destroy",
};
static const char *const kind_names[] = {
    [GMT_KIND_DEVICE] = "device",
    [GMT_KIND_ASYNC] = "async",
    [GMT_KIND_VMM_PHYS] = "vmm_phys",
    [GMT_KIND_MANAGED] = "managed",
    [GMT_KIND_HOST_PINNED] = "host_pinned",
    [GMT_KIND_HOST_REGISTERED] = "host_registered",
    [GMT_KIND_VMM_VA] = "vmm_va",
    [GMT_KIND_ARRAY] = "array",
    [GMT_KIND_IPC] = "ipc",
    [GMT_KIND_POOL] = "pool",
};

static const char *name_of(const char *const *names, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? names[v] : NULL;
}
#define NAME_OF(names, v) name_of((names), sizeof(names) / sizeof((names)[0]), (v))

struct ev_pass {
	struct gmtr *g;
	struct phase_tracker pt;
	bool rows; /* the events table's rows, else only the stacks named */
};

static void note_stack(struct gmtr *g, uint64_t id)
{
	if (id && id <= g->nstack_bits)
		g->stack_seen[id / 8] |= (uint8_t)(1u << (id % 8));
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	struct ev_pass *p = ctx;
	struct gmtr *g = p->g;
	note_stack(g, e->stack_id);
	if (!p->rows)
		return; /* a pass for the stacks alone */
	const struct api_info *a = api_lookup(e->api);
	struct col *c = &g->c[g->first[T_EVENTS]];
	bool failed = gmt_failed(e->result, e->flags);
	if (c[E_TIME].want)
		col_i64(&c[E_TIME], trace_rel(&g->t, e->time_ns));
	if (c[E_TID].want)
		col_i64(&c[E_TID], (int64_t)e->tid);
	if (c[E_API].want && a) /* api_name of an unknown id reuses one buffer */
		col_str_stable(&c[E_API], a->name);
	else if (c[E_API].want)
		col_str(&c[E_API], api_name(e->api));
	if (c[E_OP].want)
		col_str_stable(&c[E_OP], a ? NAME_OF(op_names, a->op) : NULL);
	if (c[E_KIND].want)
		col_str_stable(&c[E_KIND],
			       a && a->op == GMT_OP_ALLOC ? NAME_OF(kind_names, a->kind) : NULL);
	if (c[E_DEV].want)
		col_i32(&c[E_DEV],
			e->device < 0 || e->device > INT32_MAX ? -1 : (int32_t)e->device);
	if (c[E_PTR].want)
		col_u64(&c[E_PTR], e->ptr);
	if (c[E_SIZE].want)
		col_u64(&c[E_SIZE], e->size);
	if (c[E_RESULT].want)
		col_u64(&c[E_RESULT], e->result);
	if (c[E_FAILED].want)
		col_bool(&c[E_FAILED], failed);
	if (c[E_OOM].want)
		col_bool(&c[E_OOM], failed && gmt_out_of_memory(e->result));
	if (c[E_STACK].want)
		col_u64(&c[E_STACK], e->stack_id);
	if (c[E_PHASE].want) {
		phase_advance(&p->pt, e->time_ns, 0);
		col_str_stable(&c[E_PHASE], phase_of(&p->pt, e->tid)->name);
	}
	if (c[E_DEVBYTES].want) {
		if (e->device < 0)
			col_null(&c[E_DEVBYTES]);
		else
			col_u64(&c[E_DEVBYTES], replay_dev(rp, e->device)->lv.bytes);
	}
	if (c[E_PROCBYTES].want)
		col_u64(&c[E_PROCBYTES], rp->buckets[BK_DEVICE].bytes);
}

/* One replay: the events table (its wanted columns) and the stacks it
 * names. -1 on a read error. */
static int events_pass(struct gmtr *g, bool rows)
{
	struct ev_pass p = {.g = g, .rows = rows};
	if (!g->stack_seen) {
		g->nstack_bits = g->t.nnodes;
		g->stack_seen = xcalloc(g->nstack_bits / 8 + 1, 1);
	}
	struct replay rp;
	replay_init(&rp);
	phase_init(&p.pt, &g->t);
	for (int k = 0; rows && k <= E_PROCBYTES; k++)
		if (C(g, T_EVENTS, k)->want)
			col_reserve(C(g, T_EVENTS, k), g->t.events);
	int rc = trace_replay(&g->t, &rp, on_event, &p);
	phase_free(&p.pt);
	replay_free(&rp);
	g->stacks_known = true;
	if (rc != -1) {
		snprintf(g->err, sizeof(g->err), "read error: %s", g->t.info.stop_msg);
		return -1;
	}
	return 0;
}

/* ---- stacks and frames --------------------------------------------------- */

static void frames_and_stacks(struct gmtr *g, int table)
{
	struct trace *t = &g->t;
	char text[1024];
	for (uint64_t id = 1; id <= g->nstack_bits; id++) {
		if (!(g->stack_seen[id / 8] & (1u << (id % 8))))
			continue;
		struct trace_frame *fr;
		int n = trace_frames(t, id, &fr);
		if (table == T_FRAMES) {
			for (int d = 0; d < n; d++) {
				struct col *c = C(g, T_FRAMES, 0);
				const struct trace_frame *f = &fr[d];
				col_u64(&c[0], id);
				col_i32(&c[1], d);
				col_u64(&c[2], f->ip);
				col_str(&c[3], f->function);
				col_str(&c[4], f->file);
				if (f->line)
					col_i64(&c[5], (int64_t)f->line);
				else
					col_null(&c[5]);
				col_str(&c[6], f->module ? f->module->path : NULL);
				col_bool(&c[7], f->python);
				col_str(&c[8], trace_frame_text(f, text, sizeof(text)));
			}
		} else {
			struct col *c = C(g, T_STACKS, 0);
			struct trace_frame s;
			bool have = trace_site(t, id, &s);
			col_u64(&c[0], id);
			col_i32(&c[1], n);
			col_str(&c[2], have ? trace_frame_text(&s, text, sizeof(text)) : NULL);
			col_str(&c[3], have ? s.function : NULL);
			col_str(&c[4], have ? s.file : NULL);
			if (have && s.line)
				col_i64(&c[5], (int64_t)s.line);
			else
				col_null(&c[5]);
			if (have)
				col_i32(&c[6], s.depth);
			else
				col_null(&c[6]);
			col_str(&c[7], trace_library(t, id));
		}
		free(fr);
	}
}

/* ---- samples, ranges, counters ------------------------------------------ */

static const char *const sample_why[] = {"periodic", "peak", "oom", "start", "end"};
static const char *const counters_why[] = {"periodic", "oom", "start", "end"};
static const char *const range_ops[] = {NULL, "push", "pop", "start", "end", "mark"};
static const char *const range_src[] = {"nvtx", "api"};

static int32_t i32_of(int64_t v)
{
	return v < 0 || v > INT32_MAX ? -1 : (int32_t)v;
}

static void samples_table(struct gmtr *g)
{
	struct col *c = C(g, T_SAMPLES, 0);
	for (size_t i = 0; i < g->t.nsamples; i++) {
		const struct trace_sample *s = &g->t.samples[i];
		col_i64(&c[0], trace_rel(&g->t, s->time_ns));
		col_i32(&c[1], i32_of(s->device));
		col_i64(&c[2], (int64_t)s->nvml_index);
		col_u64(&c[3], s->used_bytes);
		col_u64(&c[4], s->total_bytes);
		if (s->process_known)
			col_u64(&c[5], s->process_used_bytes);
		else
			col_null(&c[5]);
		col_str(&c[6], NAME_OF(sample_why, s->reason));
	}
}

static void ranges_table(struct gmtr *g)
{
	struct col *c = C(g, T_RANGES, 0);
	for (size_t i = 0; i < g->t.nranges; i++) {
		const struct trace_range *r = &g->t.ranges[i];
		col_i64(&c[0], trace_rel(&g->t, r->time_ns));
		col_i64(&c[1], r->tid);
		col_str(&c[2], NAME_OF(range_ops, r->op));
		col_u64(&c[3], r->id);
		col_str(&c[4], NAME_OF(range_src, r->source));
		col_str(&c[5], r->text);
	}
}

static void counters_table(struct gmtr *g)
{
	struct col *c = C(g, T_COUNTERS, 0);
	for (size_t i = 0; i < g->t.ncounters; i++) {
		const struct trace_counters *r = &g->t.counters[i];
		for (size_t k = 0; k < r->n; k++) {
			col_i64(&c[0], trace_rel(&g->t, r->time_ns));
			col_i64(&c[1], r->tid);
			col_str(&c[2], NAME_OF(counters_why, r->reason));
			col_str(&c[3], r->source);
			col_str(&c[4], r->device_name);
			col_i32(&c[5], i32_of(r->device));
			col_str(&c[6], r->v[k].name);
			col_u64(&c[7], r->v[k].value);
		}
	}
}

/* ---- tables -------------------------------------------------------------- */

static int ncols(int table)
{
	int n = 0;
	for (size_t i = 0; i < NCOLS; i++)
		n += cols[i].table == table;
	return n;
}

/* Marks the wanted columns; -1 (with the error) for an unknown name. */
static int want_columns(struct gmtr *g, int table, const char *list)
{
	int n = ncols(table);
	for (int k = 0; k < n; k++)
		C(g, table, k)->want = !list || !*list;
	if (!list || !*list)
		return 0;
	char *copy = xstrdup(list), *save = NULL;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int k = 0;
		while (k < n && strcmp(cols[g->first[table] + k].name, w) != 0)
			k++;
		if (k == n) {
			snprintf(g->err, sizeof(g->err), "table %s has no column '%s'",
				 tables[table].name, w);
			free(copy);
			return -1;
		}
		C(g, table, k)->want = true;
	}
	free(copy);
	return 0;
}

static int64_t gmtr_table_body(struct gmtr *g, const char *name, const char *columns)
{
	int table = table_id(name);
	if (g->out_of_memory) { /* its tables may be half built */
		snprintf(g->err, sizeof(g->err),
			 "out of memory while building a table earlier: "
			 "close the trace and open it again");
		return -1;
	}
	g->err[0] = '\0';
	if (table < 0) {
		snprintf(g->err, sizeof(g->err), "no table '%s'", name ? name : "(null)");
		return -1;
	}
	struct col *first = C(g, table, 0);
	if (g->built[table]) /* built once; a narrower list reads the same */
		return (int64_t)first->n;
	if (table != T_EVENTS && table != T_FRAMES && table != T_STACKS) {
		want_columns(g, table, NULL);
	} else if (want_columns(g, table, table == T_EVENTS ? columns : NULL) < 0) {
		return -1;
	}
	switch (table) {
	case T_EVENTS:
		if (events_pass(g, true) < 0)
			return -1;
		break;
	case T_FRAMES:
	case T_STACKS:
		if (!g->stacks_known && events_pass(g, false) < 0)
			return -1;
		frames_and_stacks(g, table);
		break;
	case T_SAMPLES:
		samples_table(g);
		break;
	case T_RANGES:
		ranges_table(g);
		break;
	case T_COUNTERS:
		counters_table(g);
		break;
	}
	g->built[table] = true;
	for (int k = 0; k < ncols(table); k++)
		if (C(g, table, k)->want)
			return (int64_t)C(g, table, k)->n;
	return 0;
}

GMTR_GUARDED(int64_t, gmtr_table, (struct gmtr * g, const char *name, const char *columns),
	     (g, name, columns), {
		     g->out_of_memory = true;
		     snprintf(g->err, sizeof(g->err), "out of memory");
		     return -1;
	     })

GMTR_EXPORT int gmtr_column(struct gmtr *g, const char *table_name, const char *name,
			    struct gmtr_column *out)
{
	int table = table_id(table_name);
	if (table < 0 || !g->built[table]) {
		snprintf(g->err, sizeof(g->err), "table '%s' not built", table_name);
		return -1;
	}
	for (int k = 0; k < ncols(table); k++) {
		const struct colspec *s = &cols[g->first[table] + k];
		if (strcmp(s->name, name) == 0 && C(g, table, k)->want) {
			col_view(C(g, table, k), s->name, out);
			return 0;
		}
	}
	snprintf(g->err, sizeof(g->err), "table %s has no column '%s' built", table_name, name);
	return -1;
}

/* ---- the schema ------------------------------------------------------------ */

static const char *const type_names[] = {[GMTR_I64] = "int64",
					 [GMTR_U64] = "uint64",
					 [GMTR_I32] = "int32",
					 [GMTR_BOOL] = "bool",
					 [GMTR_DICT] = "string"};

GMTR_EXPORT const char *gmtr_schema_json(void)
{
	static char *json;
	if (json)
		return json;
	size_t len = 0;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return "{}";
	fprintf(f, "{\"abi\": %d, \"tables\": {", GMTR_ABI);
	for (int t = 0; t < T_COUNT; t++) {
		fprintf(f, "%s\"%s\": {\"doc\": ", t ? ", " : "", tables[t].name);
		json_cstr(f, tables[t].doc);
		fputs(", \"columns\": [", f);
		bool first = true;
		for (size_t i = 0; i < NCOLS; i++) {
			if (cols[i].table != t)
				continue;
			fprintf(f, "%s{\"name\": \"%s\", \"type\": \"%s\", \"doc\": ",
				first ? "" : ", ", cols[i].name, type_names[cols[i].type]);
			json_cstr(f, cols[i].doc);
			fputs("}", f);
			first = false;
		}
		fputs("]}", f);
	}
	fputs("}}", f);
	fclose(f);
	/* One thread may race another here: both build the same text, one
	 * leaks. Callers read it once. */
	json = buf;
	return json;
}
