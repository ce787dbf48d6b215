/* gpumemtrace export: a trace in the formats other tools read: Perfetto /
 * Chrome Trace Event JSON, CSV, and gzipped pprof profile.proto. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/snapshot.h"
#include "analysis/trace.h"

#define CMD "export"

static const char about[] =
    "formats:\n"
    "  perfetto  Chrome Trace Event JSON: a counter track per device with its\n"
    "            kinds of memory, the NVML process usage as a counter, phases\n"
    "            (NVTX ranges) as slices per thread, marks and failed\n"
    "            allocations (OOMs) as instant events. Opens in\n"
    "            https://ui.perfetto.dev and chrome://tracing.\n"
    "  csv       one row per event: time_s, tid, device, api, result, ptr, size,\n"
    "            stack, function, file, line, library (the allocation site).\n"
    "  pprof     gzipped profile.proto of device memory by stack, with sample\n"
    "            types alloc_objects, alloc_space (every allocation of the run)\n"
    "            and inuse_objects, inuse_space (live at the end, or --at peak),\n"
    "            for 'go tool pprof' and the tools that read it.\n"
    "  parquet   events, stacks, frames, samples, ranges, counters, modules,\n"
    "            devices and traces as a Parquet dataset partitioned by host\n"
    "            and rank, for DuckDB, Spark and Polars: written by the Python\n"
    "            package (pip install 'gpumemtrace[parquet]', then the same\n"
    "            command through its gpumemtrace or python -m gpumemtrace;\n"
    "            docs/python.md).\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace export --format perfetto run.gmt -o run.json   # ui.perfetto.dev\n"
    "  gpumemtrace export --format csv run.gmt > events.csv\n"
    "  gpumemtrace export --format pprof run.gmt -o mem.pb.gz && go tool pprof -top mem.pb.gz\n";
static const struct opt_usage usage = {
    .name = "export", .args = "TRACE", .min_args = 1, .about = about, .more = more};

/* ---- perfetto ---------------------------------------------------------- */

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
	const struct api_info *a = api_lookup(e->api);
	bool failed = gmt_failed(e->result, e->flags);
	if (failed && a && a->op == GMT_OP_ALLOC) {
		char sz[32], site[512] = "";
		struct trace_frame fr;
		if (trace_site(p->t, e->stack_id, &fr))
			trace_frame_text(&fr, site, sizeof(site));
		const char *res = result_name(e->api, e->result);
		pf_sep(p);
		fprintf(p->f,
			"{\"name\":\"OOM: %s %s\",\"cat\":\"oom\",\"ph\":\"i\",\"s\":\"p\","
			"\"ts\":%.3f,\"pid\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"args\":{\"api\":",
			api_name(e->api), fmt_size(sz, e->size), pf_us(p->t, e->time_ns), p->t->pid,
			e->tid);
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

static int export_perfetto(FILE *f, struct trace *t)
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
	snprintf(label, sizeof(label), "%s (pid %" PRIu64 ")",
		 t->command && *t->command ? t->command : "process", t->pid);
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

/* ---- csv --------------------------------------------------------------- */

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void csv_event(void *ctx, const struct gmt_event *e, const uint64_t (*kinds)[DK_COUNT],
		      const bool *changed)
{
	struct trace *t = ((void **)ctx)[0];
	FILE *f = ((void **)ctx)[1];
	const char *res = e->result ? result_name(e->api, e->result) : "0";
	char num[32];
	if (!res) {
		snprintf(num, sizeof(num), "%" PRIu64, e->result);
		res = num;
	}
	fprintf(f, "%.9f,%" PRIu64 ",%" PRId64 ",", (double)trace_rel(t, e->time_ns) / 1e9, e->tid,
		e->device);
	csv_field(f, api_name(e->api));
	fputc(',', f);
	csv_field(f, res);
	fprintf(f, ",0x%" PRIx64 ",%" PRIu64 ",%" PRIu64 ",", e->ptr, e->size, e->stack_id);
	struct trace_frame fr;
	if (e->stack_id && trace_site(t, e->stack_id, &fr)) {
		csv_field(f, fr.function ? fr.function : "");
		fputc(',', f);
		csv_field(f, fr.file ? fr.file : "");
		if (fr.line)
			fprintf(f, ",%" PRIu64 ",", fr.line);
		else
			fputs(",,", f);
		csv_field(f, trace_library(t, e->stack_id));
	} else {
		fputs(",,,", f);
	}
	fputc('\n', f);
}

static int export_csv(FILE *f, struct trace *t)
{
	/* Partial data: a comment line first (pandas: comment='#', DuckDB:
	 * comment = '#'); a complete trace's CSV starts with its header. */
	if (trace_partial(t)) {
		char text[256];
		fprintf(f, "# %s\n", trace_partial_text(t, text, sizeof(text)));
	}
	fputs("time_s,tid,device,api,result,ptr,size,stack,function,file,line,library\n", f);
	void *ctx[2] = {t, f};
	return snapshot_walk(t, false, csv_event, ctx);
}

/* ---- pprof ------------------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	while (b->n + n > b->cap) {
		b->cap = b->cap ? 2 * b->cap : 256;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void varint(struct buf *b, uint64_t v)
{
	uint8_t x[10];
	size_t n = 0;
	do {
		x[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			x[n] |= 0x80;
		n++;
	} while (v);
	put(b, x, n);
}

static void field_u(struct buf *b, int field, uint64_t v)
{
	varint(b, (uint64_t)field << 3);
	varint(b, v);
}

static void field_bytes(struct buf *b, int field, const void *d, size_t n)
{
	varint(b, (uint64_t)field << 3 | 2);
	varint(b, n);
	put(b, d, n);
}

struct strtab {
	struct strent {
		UT_hash_handle hh;
		char *s;
		uint64_t id;
	} * map;
	struct buf out; /* the string_table fields, in id order */
	uint64_t n;
};

static uint64_t str_id(struct strtab *st, const char *s)
{
	struct strent *e;
	HASH_FIND_STR(st->map, s, e);
	if (e)
		return e->id;
	e = xcalloc(1, sizeof(*e));
	e->s = xstrdup(s);
	e->id = st->n++;
	HASH_ADD_KEYPTR(hh, st->map, e->s, strlen(e->s), e);
	field_bytes(&st->out, 6, s, strlen(s));
	return e->id;
}

struct pp_id {
	UT_hash_handle hh;
	char *key;
	uint64_t id;
};

/* An id for key in table (1-based); *fresh tells whether it is new. */
static uint64_t pp_intern(struct pp_id **table, const char *key, uint64_t *next, bool *fresh)
{
	struct pp_id *e;
	HASH_FIND_STR(*table, key, e);
	*fresh = !e;
	if (e)
		return e->id;
	e = xcalloc(1, sizeof(*e));
	e->key = xstrdup(key);
	e->id = ++*next;
	HASH_ADD_KEYPTR(hh, *table, e->key, strlen(e->key), e);
	return e->id;
}

static void pp_free_ids(struct pp_id **table)
{
	struct pp_id *e, *tmp;
	HASH_ITER(hh, *table, e, tmp)
	{
		HASH_DEL(*table, e);
		free(e->key);
		free(e);
	}
}

static void value_type(struct buf *out, struct strtab *st, int field, const char *type,
		       const char *unit)
{
	struct buf m = {0};
	field_u(&m, 1, str_id(st, type));
	field_u(&m, 2, str_id(st, unit));
	field_bytes(out, field, m.p, m.n);
	free(m.p);
}

/* The profile being built: its string table, the messages written so far
 * and the ids given to locations, functions and mappings. */
struct pp_out {
	struct strtab st;
	struct buf prof, locs, funcs, maps;
	struct pp_id *loc_ids, *fn_ids, *map_ids;
	uint64_t nloc, nfn, nmap;
	bool raw; /* the interpreter's own frames kept */
};

/* The mapping id of a frame's module, written on first sight. */
static uint64_t pp_mapping(struct pp_out *o, const struct trace_module *mod)
{
	char key[32];
	bool fresh;
	snprintf(key, sizeof(key), "%" PRIu64, mod->id);
	uint64_t mid = pp_intern(&o->map_ids, key, &o->nmap, &fresh);
	if (fresh) {
		struct buf m = {0};
		field_u(&m, 1, mid);
		field_u(&m, 2, mod->start);
		field_u(&m, 3, mod->end);
		field_u(&m, 4, mod->start - mod->bias);
		field_u(&m, 5, str_id(&o->st, mod->path));
		field_bytes(&o->maps, 3, m.p, m.n);
		free(m.p);
	}
	return mid;
}

/* The function id of name in file, written on first sight. */
static uint64_t pp_function(struct pp_out *o, const char *name, const char *file)
{
	char key[600];
	bool fresh;
	snprintf(key, sizeof(key), "%s\x1f%s", name, file);
	uint64_t fid = pp_intern(&o->fn_ids, key, &o->nfn, &fresh);
	if (fresh) {
		struct buf m = {0};
		field_u(&m, 1, fid);
		field_u(&m, 2, str_id(&o->st, name));
		field_u(&m, 3, str_id(&o->st, name));
		field_u(&m, 4, str_id(&o->st, file));
		field_bytes(&o->funcs, 5, m.p, m.n);
		free(m.p);
	}
	return fid;
}

/* The location id of a frame (its address), written on first sight with
 * its mapping and function. */
static uint64_t pp_location(struct pp_out *o, const struct trace_frame *fr)
{
	char key[64], name[512];
	bool fresh;
	snprintf(key, sizeof(key), "%" PRIx64, fr->ip);
	uint64_t lid = pp_intern(&o->loc_ids, key, &o->nloc, &fresh);
	if (!fresh)
		return lid;
	uint64_t mid = fr->module ? pp_mapping(o, fr->module) : 0;
	if (fr->function)
		snprintf(name, sizeof(name), "%s", fr->function);
	else
		trace_frame_text(fr, name, sizeof(name));
	uint64_t fid = pp_function(o, name, fr->file ? fr->file : "");
	struct buf loc = {0}, line = {0};
	field_u(&loc, 1, lid);
	if (mid)
		field_u(&loc, 2, mid);
	if (!fr->python)
		field_u(&loc, 3, fr->ip);
	field_u(&line, 1, fid);
	field_u(&line, 2, fr->line);
	field_bytes(&loc, 4, line.p, line.n);
	field_bytes(&o->locs, 4, loc.p, loc.n);
	free(loc.p);
	free(line.p);
	return lid;
}

/* One sample: the stack's locations, leaf first as pprof wants, and its
 * four values. */
static void pp_sample(struct pp_out *o, struct trace *t, const struct snapshot_stack *s)
{
	struct buf sample = {0}, ids = {0}, vals = {0};
	int depth = trace_stack_depth(t, s->stack_id);
	for (int d = 0; d < depth; d++) {
		struct trace_frame fr;
		if (trace_frame(t, s->stack_id, d, &fr) && (o->raw || !site_is_interpreter(&fr)))
			varint(&ids, pp_location(o, &fr));
	}
	for (int k = 0; k < 4; k++)
		varint(&vals, (uint64_t)s->v[k]);
	if (ids.n)
		field_bytes(&sample, 1, ids.p, ids.n);
	field_bytes(&sample, 2, vals.p, vals.n);
	field_bytes(&o->prof, 2, sample.p, sample.n);
	free(sample.p);
	free(ids.p);
	free(vals.p);
}

/* The whole profile.proto message into o->prof. */
static void pp_build(struct pp_out *o, struct trace *t, struct snapshot_stack *stacks)
{
	str_id(&o->st, "");
	value_type(&o->prof, &o->st, 1, "alloc_objects", "count");
	value_type(&o->prof, &o->st, 1, "alloc_space", "bytes");
	value_type(&o->prof, &o->st, 1, "inuse_objects", "count");
	value_type(&o->prof, &o->st, 1, "inuse_space", "bytes");
	struct snapshot_stack *s, *tmp;
	HASH_ITER(hh, stacks, s, tmp)
	{
		pp_sample(o, t, s);
	}
	if (o->maps.n)
		put(&o->prof, o->maps.p, o->maps.n);
	if (o->locs.n)
		put(&o->prof, o->locs.p, o->locs.n);
	if (o->funcs.n)
		put(&o->prof, o->funcs.p, o->funcs.n);
	uint64_t end = trace_end_ns(t);
	field_u(&o->prof, 9, t->start_wall_ns);
	field_u(&o->prof, 10, end > t->hdr.start_mono_ns ? end - t->hdr.start_mono_ns : 0);
	if (trace_partial(t)) { /* comment (13): what `go tool pprof -comments` prints */
		char text[256];
		field_u(&o->prof, 13, str_id(&o->st, trace_partial_text(t, text, sizeof(text))));
	}
	value_type(&o->prof, &o->st, 11, "space", "bytes");
	field_u(&o->prof, 14, str_id(&o->st, "inuse_space"));
	put(&o->prof, o->st.out.p, o->st.out.n); /* after the last str_id */
}

/* Writes prof gzipped; returns -1, or EXIT_INPUT (error printed). */
static int pp_write_gzip(FILE *f, const struct buf *prof)
{
	/* windowBits 15 + 16 asks zlib for the gzip wrapper */
	z_stream z = {0};
	int rc = -1;
	if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK) {
		say_error(CMD, "cannot compress: zlib failed to start");
		return EXIT_INPUT;
	}
	size_t cap = deflateBound(&z, prof->n) + 64;
	uint8_t *gz = xrealloc(NULL, cap);
	z.next_in = prof->p;
	z.avail_in = (uInt)prof->n;
	z.next_out = gz;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		say_error(CMD, "cannot compress the profile");
		rc = EXIT_INPUT;
	} else {
		fwrite(gz, 1, cap - z.avail_out, f);
	}
	deflateEnd(&z);
	free(gz);
	return rc;
}

static void pp_out_free(struct pp_out *o)
{
	free(o->prof.p);
	free(o->locs.p);
	free(o->funcs.p);
	free(o->maps.p);
	free(o->st.out.p);
	struct strent *e, *et;
	HASH_ITER(hh, o->st.map, e, et)
	{
		HASH_DEL(o->st.map, e);
		free(e->s);
		free(e);
	}
	pp_free_ids(&o->loc_ids);
	pp_free_ids(&o->fn_ids);
	pp_free_ids(&o->map_ids);
}

static int export_pprof(FILE *f, struct trace *t, bool at_end, bool raw)
{
	struct snapshot_stack *stacks;
	int rc = snapshot_stacks(t, at_end, &stacks);
	if (rc < 0) {
		struct pp_out o = {.raw = raw};
		pp_build(&o, t, stacks);
		rc = pp_write_gzip(f, &o.prof);
		pp_out_free(&o);
	}
	snapshot_stacks_free(&stacks);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	enum { F_PERFETTO, F_CSV, F_PPROF, F_PARQUET };
	const char *out = NULL;
	int fmt = F_PERFETTO, at = 1; /* peak, end */
	bool has_fmt = false, raw = false;
	const struct option opts[] = {
	    OPT_CHOICE("format", &fmt, "perfetto|csv|pprof|parquet", "format",
		       "perfetto, csv, pprof or parquet (required)", .short_name = 'f',
		       .argh = "FORMAT", .given = &has_fmt, .required = true),
	    OPT_FILE("output", &out, "FILE",
		     "write to FILE (default stdout; pprof needs a file\n"
		     "unless stdout is redirected)",
		     .short_name = 'o'),
	    OPT_RB_AT(&at, "pprof: the moment of the inuse samples (default end)"),
	    OPT_RB_RAW_FRAMES(&raw, "pprof: "),
	    OPT_END(),
	};
	const char **paths = NULL;
	int npaths = 0;
	int rc = opt_parse(&usage, opts, argc, argv, &paths, &npaths);
	if (rc >= 0)
		return rc;
	if (fmt == F_PARQUET) { /* the Python package's console script does it */
		free(paths);
		return say_usage_error(CMD,
				       "--format parquet is written by the Python package: pip "
				       "install 'gpumemtrace[parquet]', then run this command "
				       "with its gpumemtrace (or python -m gpumemtrace)");
	}
	bool to_stdout = !out || strcmp(out, "-") == 0;
	if (npaths == 1 && fmt == F_PPROF && to_stdout && isatty(1)) {
		free(paths);
		return say_usage_error(CMD, "pprof is binary: give -o FILE or redirect stdout");
	}
	struct rb_one r;
	rc = rb_one_open(&r, CMD, out, paths, npaths);
	if (rc >= 0)
		return rc;
	if (fmt == F_PERFETTO)
		rc = export_perfetto(r.out.f, &r.t);
	else if (fmt == F_CSV)
		rc = export_csv(r.out.f, &r.t);
	else
		rc = export_pprof(r.out.f, &r.t, at == 1, raw);
	return rb_one_close(&r, CMD, rc);
}
