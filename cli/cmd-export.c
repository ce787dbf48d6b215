/* gpumemtrace export: a trace in the formats other tools read: Perfetto's
 * protobuf trace or Chrome Trace Event JSON (cli/export-perfetto.c), CSV,
 * and gzipped pprof profile.proto. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "cli/cli.h"
#include "cli/export-perfetto.h"
#include "cli/options.h"
#include "cli/pbuf.h"
#include "analysis/snapshot.h"
#include "analysis/trace.h"

#define CMD "export"

static const char about[] =
    "formats:\n"
    "  perfetto  Perfetto's protobuf trace: a counter track per device and kind\n"
    "            of memory, the NVML process usage as a counter, phases (NVTX\n"
    "            ranges) as slices per thread, marks and failed allocations\n"
    "            (OOMs) as instant events. Opens in https://ui.perfetto.dev\n"
    "            and Perfetto's trace_processor (SQL).\n"
    "  chrome-json\n"
    "            the same timeline as Chrome Trace Event JSON, for\n"
    "            chrome://tracing and the tools that read that format (about\n"
    "            4 times larger, 2.5 times slower to write).\n"
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
    "  gpumemtrace export --format perfetto run.gmt -o run.pftrace   # ui.perfetto.dev\n"
    "  gpumemtrace export --format csv run.gmt > events.csv\n"
    "  gpumemtrace export --format pprof run.gmt -o mem.pb.gz && go tool pprof -top mem.pb.gz\n";
static const struct opt_usage usage = {
    .name = "export", .args = "TRACE", .min_args = 1, .about = about, .more = more};

/* ---- csv --------------------------------------------------------------- */

/* A field quoted as RFC 4180 wants when it has a comma, quote or newline. */
static void csv_field(struct pbuf *b, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		pb_put(b, s, strlen(s));
		return;
	}
	pb_put(b, "\"", 1);
	for (; *s; s++) {
		if (*s == '"')
			pb_put(b, "\"", 1);
		pb_put(b, s, 1);
	}
	pb_put(b, "\"", 1);
}

/* Decimal and hex digits without printf (the row is most of the time). */
static char *csv_u(char *p, uint64_t v, int width)
{
	char d[24];
	int n = 0;
	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v || n < width);
	while (n)
		*p++ = d[--n];
	return p;
}

static char *csv_x(char *p, uint64_t v)
{
	char d[16];
	int n = 0;
	do {
		d[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	*p++ = '0';
	*p++ = 'x';
	while (n)
		*p++ = d[--n];
	return p;
}

/* Each stack's last columns (stack,function,file,line,library), made once. */
struct csv_site {
	UT_hash_handle hh;
	uint64_t stack_id;
	size_t n;
	char text[];
};

struct csv_out {
	FILE *f;
	struct trace *t;
	struct csv_site *sites;	 /* all, by stack id */
	struct csv_site **by_id; /* the same below CSV_BY_ID, a quicker look-up */
	size_t nby_id;
	struct pbuf row;
};
#define CSV_BY_ID (1u << 20)

static const struct csv_site *csv_site_of(struct csv_out *o, uint64_t stack_id)
{
	struct csv_site *s;
	if (stack_id < o->nby_id && o->by_id[stack_id])
		return o->by_id[stack_id];
	HASH_FIND(hh, o->sites, &stack_id, sizeof(stack_id), s);
	if (s)
		return s;
	struct pbuf b = {0};
	char num[24];
	struct trace_frame fr;
	pb_put(&b, num, (size_t)(csv_u(num, stack_id, 1) - num));
	pb_put(&b, ",", 1);
	if (stack_id && trace_site(o->t, stack_id, &fr)) {
		csv_field(&b, fr.function ? fr.function : "");
		pb_put(&b, ",", 1);
		csv_field(&b, fr.file ? fr.file : "");
		pb_put(&b, ",", 1);
		if (fr.line)
			pb_put(&b, num, (size_t)(csv_u(num, fr.line, 1) - num));
		pb_put(&b, ",", 1);
		csv_field(&b, trace_library(o->t, stack_id));
	} else {
		pb_put(&b, ",,,", 3);
	}
	s = xcalloc(1, sizeof(*s) + b.n);
	s->stack_id = stack_id;
	s->n = b.n;
	if (b.n)
		memcpy(s->text, b.p, b.n);
	pb_free(&b);
	HASH_ADD(hh, o->sites, stack_id, sizeof(s->stack_id), s);
	if (stack_id < CSV_BY_ID) {
		if (stack_id >= o->nby_id) {
			size_t n = o->nby_id ? o->nby_id : 256;
			while (n <= stack_id)
				n *= 2;
			o->by_id = xrealloc(o->by_id, n * sizeof(*o->by_id));
			memset(o->by_id + o->nby_id, 0, (n - o->nby_id) * sizeof(*o->by_id));
			o->nby_id = n;
		}
		o->by_id[stack_id] = s;
	}
	return s;
}

static void csv_event(void *ctx, const struct gmt_event *e, const uint64_t (*kinds)[DK_COUNT],
		      const bool *changed)
{
	struct csv_out *o = ctx;
	struct pbuf *b = &o->row;
	char num[96], *p = num;
	int64_t rel = trace_rel(o->t, e->time_ns);
	uint64_t mag = rel < 0 ? -(uint64_t)rel : (uint64_t)rel;
	if (rel < 0)
		*p++ = '-';
	p = csv_u(p, mag / 1000000000u, 1);
	*p++ = '.';
	p = csv_u(p, mag % 1000000000u, 9);
	*p++ = ',';
	p = csv_u(p, e->tid, 1);
	*p++ = ',';
	if (e->device < 0)
		*p++ = '-';
	p = csv_u(p, e->device < 0 ? -(uint64_t)e->device : (uint64_t)e->device, 1);
	*p++ = ',';
	b->n = 0;
	pb_put(b, num, (size_t)(p - num));
	csv_field(b, api_name(e->api));
	pb_put(b, ",", 1);
	const char *res = e->result ? result_name(e->api, e->result) : "0";
	if (res) {
		csv_field(b, res);
		p = num;
	} else {
		p = csv_u(num, e->result, 1);
	}
	*p++ = ',';
	p = csv_x(p, e->ptr);
	*p++ = ',';
	p = csv_u(p, e->size, 1);
	*p++ = ',';
	pb_put(b, num, (size_t)(p - num));
	const struct csv_site *s = csv_site_of(o, e->stack_id);
	pb_put(b, s->text, s->n);
	pb_put(b, "\n", 1);
	fwrite(b->p, 1, b->n, o->f);
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
	struct csv_out o = {.f = f, .t = t};
	int rc = snapshot_walk(t, false, csv_event, &o);
	struct csv_site *s, *tmp;
	HASH_ITER(hh, o.sites, s, tmp)
	{
		HASH_DEL(o.sites, s);
		free(s);
	}
	free(o.by_id);
	pb_free(&o.row);
	return rc;
}

/* ---- pprof ------------------------------------------------------------- */

struct strtab {
	struct strent {
		UT_hash_handle hh;
		char *s;
		uint64_t id;
	} * map;
	struct pbuf out; /* the string_table fields, in id order */
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
	pb_bytes(&st->out, 6, s, strlen(s));
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

static void value_type(struct pbuf *out, struct strtab *st, int field, const char *type,
		       const char *unit)
{
	struct pbuf m = {0};
	pb_u(&m, 1, str_id(st, type));
	pb_u(&m, 2, str_id(st, unit));
	pb_bytes(out, field, m.p, m.n);
	free(m.p);
}

/* The profile being built: its string table, the messages written so far
 * and the ids given to locations, functions and mappings. */
struct pp_out {
	struct strtab st;
	struct pbuf prof, locs, funcs, maps;
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
		struct pbuf m = {0};
		pb_u(&m, 1, mid);
		pb_u(&m, 2, mod->start);
		pb_u(&m, 3, mod->end);
		pb_u(&m, 4, mod->start - mod->bias);
		pb_u(&m, 5, str_id(&o->st, mod->path));
		pb_bytes(&o->maps, 3, m.p, m.n);
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
		struct pbuf m = {0};
		pb_u(&m, 1, fid);
		pb_u(&m, 2, str_id(&o->st, name));
		pb_u(&m, 3, str_id(&o->st, name));
		pb_u(&m, 4, str_id(&o->st, file));
		pb_bytes(&o->funcs, 5, m.p, m.n);
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
	struct pbuf loc = {0}, line = {0};
	pb_u(&loc, 1, lid);
	if (mid)
		pb_u(&loc, 2, mid);
	if (!fr->python)
		pb_u(&loc, 3, fr->ip);
	pb_u(&line, 1, fid);
	pb_u(&line, 2, fr->line);
	pb_bytes(&loc, 4, line.p, line.n);
	pb_bytes(&o->locs, 4, loc.p, loc.n);
	free(loc.p);
	free(line.p);
	return lid;
}

/* One sample: the stack's locations, leaf first as pprof wants, and its
 * four values. */
static void pp_sample(struct pp_out *o, struct trace *t, const struct snapshot_stack *s)
{
	struct pbuf sample = {0}, ids = {0}, vals = {0};
	int depth = trace_stack_depth(t, s->stack_id);
	for (int d = 0; d < depth; d++) {
		struct trace_frame fr;
		if (trace_frame(t, s->stack_id, d, &fr) && (o->raw || !site_is_interpreter(&fr)))
			pb_varint(&ids, pp_location(o, &fr));
	}
	for (int k = 0; k < 4; k++)
		pb_varint(&vals, (uint64_t)s->v[k]);
	if (ids.n)
		pb_bytes(&sample, 1, ids.p, ids.n);
	pb_bytes(&sample, 2, vals.p, vals.n);
	pb_bytes(&o->prof, 2, sample.p, sample.n);
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
		pb_put(&o->prof, o->maps.p, o->maps.n);
	if (o->locs.n)
		pb_put(&o->prof, o->locs.p, o->locs.n);
	if (o->funcs.n)
		pb_put(&o->prof, o->funcs.p, o->funcs.n);
	uint64_t end = trace_end_ns(t);
	pb_u(&o->prof, 9, t->start_wall_ns);
	pb_u(&o->prof, 10, end > t->hdr.start_mono_ns ? end - t->hdr.start_mono_ns : 0);
	if (trace_partial(t)) { /* comment (13): what `go tool pprof -comments` prints */
		char text[256];
		pb_u(&o->prof, 13, str_id(&o->st, trace_partial_text(t, text, sizeof(text))));
	}
	value_type(&o->prof, &o->st, 11, "space", "bytes");
	pb_u(&o->prof, 14, str_id(&o->st, "inuse_space"));
	pb_put(&o->prof, o->st.out.p, o->st.out.n); /* after the last str_id */
}

/* Writes prof gzipped; returns -1, or EXIT_INPUT (error printed). */
static int pp_write_gzip(FILE *f, const struct pbuf *prof)
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
	enum { F_PERFETTO, F_CHROME_JSON, F_CSV, F_PPROF, F_PARQUET };
	const char *out = NULL;
	int fmt = F_PERFETTO, at = 1; /* peak, end */
	bool has_fmt = false, raw = false;
	const struct option opts[] = {
	    OPT_CHOICE("format", &fmt, "perfetto|chrome-json|csv|pprof|parquet", "format",
		       "perfetto, chrome-json, csv, pprof or parquet (required)", .short_name = 'f',
		       .argh = "FORMAT", .given = &has_fmt, .required = true),
	    OPT_FILE("output", &out, "FILE",
		     "write to FILE (default stdout; perfetto and pprof\n"
		     "need a file unless stdout is redirected)",
		     .short_name = 'o'),
	    OPT_CLI_AT(&at, "pprof: the moment of the inuse samples (default end)"),
	    OPT_CLI_RAW_FRAMES(&raw, "pprof: "),
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
	if (npaths == 1 && (fmt == F_PPROF || fmt == F_PERFETTO) && to_stdout && isatty(1)) {
		free(paths);
		return say_usage_error(
		    CMD, fmt == F_PPROF ? "pprof is binary: give -o FILE or redirect stdout"
					: "perfetto is binary: give -o FILE or redirect stdout "
					  "(--format chrome-json is text)");
	}
	struct cli_one r;
	rc = cli_one_open(&r, CMD, out, paths, npaths);
	if (rc >= 0)
		return rc;
	/* nothing written yet: a larger buffer, fewer write calls for the
	 * hundreds of MB an export of a long trace can be */
	setvbuf(r.out.f, NULL, _IOFBF, 1 << 20);
	if (fmt == F_PERFETTO)
		rc = export_perfetto(r.out.f, &r.t);
	else if (fmt == F_CHROME_JSON)
		rc = export_chrome_json(r.out.f, &r.t);
	else if (fmt == F_CSV)
		rc = export_csv(r.out.f, &r.t);
	else
		rc = export_pprof(r.out.f, &r.t, at == 1, raw);
	return cli_one_close(&r, CMD, rc);
}
