/* gpumemtrace summary [--json] TRACE: peak device memory and when it
 * happened, what was live at the end, calls per API, failures, lost events,
 * and the allocation sites holding the most memory at each device's peak.
 *
 * Two passes: the first replays the live set (cli/replay.c) to find each
 * peak; the second replays again up to each peak event and groups what is
 * live there by stack. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "cli.h"
#include "replay.h"
#include "symbolize.h"

#define MAX_FAILURES	  1000 /* kept for the output; all are counted */
#define TOP_SITES	  10
#define REORDER_LIMIT	  (1u << 19)
#define REORDER_WINDOW_NS (30ull * 1000000000ull)

static const char help[] =
    "usage: gpumemtrace summary [--json] TRACE\n"
    "\n"
    "Replays the trace's allocations and frees and reports, per device, the peak\n"
    "of device memory (cudaMalloc/cuMemAlloc, stream-ordered, and cuMemCreate on\n"
    "a device), when it happened (seconds since the trace start), what was still\n"
    "live at the end, and the allocation sites holding the most at the peak.\n"
    "Managed, pinned and registered host memory, VA reservations, arrays and IPC\n"
    "mappings are reported separately. Then calls per API (count, failed, bytes\n"
    "requested by successful calls), failed calls, and lost events.\n"
    "\n"
    "A trace with a torn tail (the process was killed) is summarized up to it,\n"
    "with a warning on stderr and \"complete\": false.\n"
    "\n"
    "options:\n"
    "      --json   one JSON object instead of tables (keys: docs/cli.md)\n"
    "  -h, --help   this help\n";

struct dev_info {
	int64_t ordinal;
	char *name;
	uint64_t total;
	struct rp_level lv;
	struct site *sites; /* top sites at the peak, sorted */
	size_t nsites, distinct_sites;
};

struct module {
	uint64_t id, bias, start, end;
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
};

struct symbol {
	UT_hash_handle hh;
	uint64_t ip;
	uint64_t module_id;
	char *function, *file;
	uint64_t line;
};

struct call {
	UT_hash_handle hh;
	uint32_t api;
	uint64_t count, failed, bytes;
};

struct failure {
	uint64_t time_ns, size, result;
	uint32_t api;
	int64_t device;
};

struct frame {
	uint64_t ip;
	int depth; /* 0: the innermost */
	const struct module *module;
	const char *function, *file; /* NULL: unknown */
	uint64_t line;
	bool in_cuda; /* every frame is in the CUDA libraries: this is the innermost */
};

struct site {
	UT_hash_handle hh;
	uint64_t stack_id, bytes, count;
	struct frame frame;
	bool has_frame;
};

struct node {
	uint64_t parent, ip;
};

struct summary {
	const char *path;
	const struct gmt_header *hdr;
	bool has_process;
	uint64_t pid, ppid;
	char *command, *exe, *host;
	struct dev_info *devs;
	size_t ndevs, devs_cap;
	struct module *mods;
	size_t nmods, mods_cap;
	struct symbol *symbols;
	struct node *nodes;
	size_t nnodes, nodes_cap;
	struct call *calls;
	struct failure *failures;
	size_t nfailures_kept;
	uint64_t nfailures;
	uint64_t events, lost_in_records, lost_records;
	bool has_trailer;
	uint64_t trailer_end, trailer_events, trailer_lost, trailer_reason;
	uint64_t first_time, last_time;
	struct replay rp;
	struct gmt_symbolizer *symbolizer;
	bool symbolizer_tried;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		cli_error("summary", "out of memory");
		exit(EXIT_INPUT);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

#define GROW(arr, n, cap)                                                                          \
	do {                                                                                       \
		if ((n) == (cap)) {                                                                \
			(cap) = (cap) ? 2 * (cap) : 16;                                            \
			(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));                           \
		}                                                                                  \
	} while (0)

static struct dev_info *dev_get(struct summary *s, int64_t ordinal)
{
	for (size_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].ordinal == ordinal)
			return &s->devs[i];
	GROW(s->devs, s->ndevs, s->devs_cap);
	struct dev_info *d = &s->devs[s->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	d->name = xstrdup("");
	return d;
}

/* ---- pass 1: metadata and counts ------------------------------------- */

static void on_record(struct summary *s, const struct gmt_record *rec)
{
	switch (rec->type) {
	case GMT_REC_PROCESS: {
		typeof(rec->u.process) const *p = &rec->u.process;
		s->has_process = true;
		s->pid = p->pid;
		s->ppid = p->ppid;
		size_t len = 1;
		for (size_t i = 0; i < p->argc; i++)
			len += p->argv[i].len + 1;
		free(s->command);
		s->command = xrealloc(NULL, len);
		char *o = s->command;
		for (size_t i = 0; i < p->argc; i++) {
			if (i)
				*o++ = ' ';
			memcpy(o, p->argv[i].s, p->argv[i].len);
			o += p->argv[i].len;
		}
		*o = 0;
		free(s->exe);
		free(s->host);
		s->exe = xstrdup(p->exe.s);
		s->host = xstrdup(p->hostname.s);
		break;
	}
	case GMT_REC_DEVICE: {
		struct dev_info *d = dev_get(s, rec->u.device.ordinal);
		free(d->name);
		d->name = xstrdup(rec->u.device.name.s);
		d->total = rec->u.device.total_bytes;
		break;
	}
	case GMT_REC_MODULE: {
		GROW(s->mods, s->nmods, s->mods_cap);
		struct module *m = &s->mods[s->nmods++];
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
			GROW(s->nodes, s->nnodes, s->nodes_cap);
			s->nodes[s->nnodes++] =
			    (struct node){rec->u.stack.nodes[i].parent, rec->u.stack.nodes[i].ip};
		}
		break;
	case GMT_REC_SYMBOL: {
		struct symbol *sym = NULL;
		uint64_t ip = rec->u.symbol.ip;
		HASH_FIND(hh, s->symbols, &ip, sizeof(ip), sym);
		if (sym)
			break; /* the first one wins */
		sym = xrealloc(NULL, sizeof(*sym));
		memset(sym, 0, sizeof(*sym));
		sym->ip = ip;
		sym->module_id = rec->u.symbol.module_id;
		sym->function = xstrdup(rec->u.symbol.function.s);
		sym->file = xstrdup(rec->u.symbol.file.s);
		sym->line = rec->u.symbol.line;
		HASH_ADD(hh, s->symbols, ip, sizeof(sym->ip), sym);
		break;
	}
	case GMT_REC_LOST:
		s->lost_in_records += rec->u.lost.count;
		s->lost_records++;
		break;
	case GMT_REC_TRAILER:
		s->has_trailer = true;
		s->trailer_end = rec->u.trailer.end_time_ns;
		s->trailer_events = rec->u.trailer.events;
		s->trailer_lost = rec->u.trailer.lost;
		s->trailer_reason = rec->u.trailer.reason;
		break;
	case GMT_REC_EVENT: {
		const struct gmt_event *e = &rec->u.event;
		if (s->events++ == 0 || e->time_ns < s->first_time)
			s->first_time = e->time_ns;
		if (e->time_ns > s->last_time)
			s->last_time = e->time_ns;
		if (e->device >= 0)
			dev_get(s, e->device);
		struct call *c = NULL;
		HASH_FIND(hh, s->calls, &e->api, sizeof(e->api), c);
		if (!c) {
			c = xrealloc(NULL, sizeof(*c));
			memset(c, 0, sizeof(*c));
			c->api = e->api;
			HASH_ADD(hh, s->calls, api, sizeof(c->api), c);
		}
		c->count++;
		bool failed = e->result != 0 || (e->flags & GMT_EV_FAILED);
		if (failed) {
			c->failed++;
			if (s->nfailures++ < MAX_FAILURES) {
				if (!s->failures)
					s->failures =
					    xrealloc(NULL, MAX_FAILURES * sizeof(*s->failures));
				s->failures[s->nfailures_kept++] = (struct failure){
				    e->time_ns, e->size, e->result, e->api, e->device};
			}
		} else {
			c->bytes += e->size;
		}
		break;
	}
	default:
		break;
	}
}

/* ---- replay passes --------------------------------------------------- */

struct peak_target {
	uint64_t seq;
	struct dev_info *dev;
};

static int site_cmp(const void *a, const void *b)
{
	const struct site *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Groups what is live on dev's device now by stack id; keeps the top. */
static void snapshot(struct replay *rp, struct dev_info *dev)
{
	struct site *groups = NULL, *g, *tmp;
	for (int sp = 0; sp < 5; sp++) {
		struct rp_live *l, *lt;
		HASH_ITER(hh, rp->tables[sp], l, lt)
		{
			if (l->bucket != BK_DEVICE || l->device != dev->ordinal)
				continue;
			HASH_FIND(hh, groups, &l->stack_id, sizeof(l->stack_id), g);
			if (!g) {
				g = xrealloc(NULL, sizeof(*g));
				memset(g, 0, sizeof(*g));
				g->stack_id = l->stack_id;
				HASH_ADD(hh, groups, stack_id, sizeof(g->stack_id), g);
			}
			g->bytes += l->size;
			g->count++;
		}
	}
	size_t n = HASH_COUNT(groups), i = 0;
	struct site *all = xrealloc(NULL, n * sizeof(*all));
	HASH_ITER(hh, groups, g, tmp)
	{
		HASH_DEL(groups, g);
		all[i++] = *g;
		free(g);
	}
	qsort(all, n, sizeof(*all), site_cmp);
	dev->distinct_sites = n;
	dev->nsites = n < TOP_SITES ? n : TOP_SITES;
	dev->sites = all;
	for (i = 0; i < dev->nsites; i++)
		memset(&all[i].hh, 0, sizeof(all[i].hh));
}

/* Reads every record; replays events in time order. Pass 1 (targets NULL)
 * also collects metadata; pass 2 snapshots each device at its peak. */
static void run_pass(struct gmt_reader *r, struct summary *s, struct replay *rp,
		     struct peak_target *targets, size_t ntargets)
{
	struct reorder q;
	struct gmt_record rec;
	struct gmt_event ev;
	size_t next_target = 0;
	reorder_init(&q, REORDER_LIMIT, REORDER_WINDOW_NS);
	replay_init(rp);
	for (;;) {
		int more = gmt_reader_next(r, &rec);
		if (more && !targets)
			on_record(s, &rec);
		if (more && rec.type == GMT_REC_EVENT)
			reorder_push(&q, &rec.u.event);
		while (reorder_pop(&q, &ev, !more)) {
			replay_apply(rp, &ev);
			while (next_target < ntargets && targets[next_target].seq == rp->seq)
				snapshot(rp, targets[next_target++].dev);
		}
		if (!more)
			break;
	}
	reorder_free(&q);
}

static int target_cmp(const void *a, const void *b)
{
	const struct peak_target *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int dev_cmp(const void *a, const void *b)
{
	const struct dev_info *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

static int call_cmp(struct call *a, struct call *b)
{
	return a->api < b->api ? -1 : a->api > b->api;
}

/* ---- frames ---------------------------------------------------------- */

static const struct module *module_at(const struct summary *s, uint64_t ip)
{
	for (size_t i = 0; i < s->nmods; i++)
		if (ip >= s->mods[i].start && ip < s->mods[i].end)
			return &s->mods[i];
	return NULL;
}

static bool cuda_module(const struct module *m)
{
	const char *b = path_basename(m->path);
	return strncmp(b, "libcuda.", 8) == 0 || strncmp(b, "libcudart", 9) == 0 ||
	       strncmp(b, "libgpumemtrace", 14) == 0;
}

static void resolve(struct summary *s, struct frame *f)
{
	struct symbol *sym = NULL;
	uint64_t ip = f->ip;
	HASH_FIND(hh, s->symbols, &ip, sizeof(ip), sym);
	if (!sym && ip) {
		ip--;
		HASH_FIND(hh, s->symbols, &ip, sizeof(ip), sym);
	}
	if (sym && sym->function[0]) {
		f->function = sym->function;
		f->file = sym->file[0] ? sym->file : NULL;
		f->line = sym->line;
		return;
	}
	/* no SYMBOL record (the process died before symbolizing): look the
	 * address up in the module files, when they are still here */
	if (!s->symbolizer_tried) {
		s->symbolizer_tried = true;
		s->symbolizer = gmt_symbolizer_new();
		for (size_t i = 0; s->symbolizer && i < s->nmods; i++) {
			const struct module *m = &s->mods[i];
			gmt_symbolizer_add_module(s->symbolizer, m->path, m->bias, m->start, m->end,
						  m->build_id_len ? m->build_id : NULL,
						  (unsigned)m->build_id_len);
		}
	}
	struct gmt_symbol out = {0};
	if (s->symbolizer &&
	    gmt_symbolize(s->symbolizer, f->depth ? f->ip - 1 : f->ip, &out) == 0 && out.function) {
		/* the symbolizer owns these; it lives until the summary is freed */
		f->function = out.function;
		f->file = out.file;
		f->line = out.line;
	}
}

/* The first frame, from the innermost out, that is not in the CUDA driver,
 * runtime or the tracer itself. */
static bool site_frame(struct summary *s, uint64_t stack_id, struct frame *out)
{
	struct frame first = {0};
	bool have_first = false;
	uint64_t id = stack_id;
	for (int depth = 0; id != 0 && id <= s->nnodes && depth < 4096; depth++) {
		const struct node *n = &s->nodes[id - 1];
		struct frame f = {.ip = n->ip, .depth = depth, .module = module_at(s, n->ip)};
		if (!have_first) {
			first = f;
			have_first = true;
		}
		if (!f.module || !cuda_module(f.module)) {
			*out = f;
			resolve(s, out);
			return true;
		}
		id = n->parent;
	}
	if (!have_first)
		return false;
	*out = first;
	out->in_cuda = true;
	resolve(s, out);
	return true;
}

/* ---- output ---------------------------------------------------------- */

static int64_t rel(const struct summary *s, uint64_t t)
{
	return (int64_t)(t - s->hdr->start_mono_ns);
}

static void frame_text(FILE *f, const struct frame *fr)
{
	if (fr->function) {
		fputs(fr->function, f);
		if (fr->file)
			fprintf(f, " (%s:%" PRIu64 ")", fr->file, fr->line);
		else if (fr->module)
			fprintf(f, " (%s+0x%" PRIx64 ")", path_basename(fr->module->path),
				fr->ip - fr->module->bias);
	} else if (fr->module) {
		fprintf(f, "%s+0x%" PRIx64, path_basename(fr->module->path),
			fr->ip - fr->module->bias);
	} else {
		fprintf(f, "0x%" PRIx64, fr->ip);
	}
	if (fr->in_cuda)
		fputs(" [all frames in CUDA libraries]", f);
}

/* " <- caller <- caller's caller": the site alone does not say which path
 * allocated (a caching allocator is one site for every tensor). */
static void callers_text(FILE *f, struct summary *s, uint64_t stack_id, int site_depth)
{
	enum { CALLERS = 3 };
	uint64_t id = stack_id;
	for (int depth = 0; id && id <= s->nnodes && depth <= site_depth; depth++)
		id = s->nodes[id - 1].parent;
	for (int shown = 0; id && id <= s->nnodes && shown < CALLERS; shown++) {
		const struct node *n = &s->nodes[id - 1];
		struct frame fr = {
		    .ip = n->ip, .depth = site_depth + 1 + shown, .module = module_at(s, n->ip)};
		resolve(s, &fr);
		/* Below main there is only the C start-up code. */
		if (fr.function &&
		    (!strncmp(fr.function, "__libc_start", 12) || !strcmp(fr.function, "_start")))
			break;
		if (fr.function)
			fprintf(f, " <- %s", fr.function);
		else if (fr.module)
			fprintf(f, " <- %s+0x%" PRIx64, path_basename(fr.module->path),
				fr.ip - fr.module->bias);
		else
			fprintf(f, " <- 0x%" PRIx64, fr.ip);
		id = n->parent;
	}
}

static uint64_t lost_events(const struct summary *s)
{
	/* the trailer's count is the writer's total; LOST records are the
	 * ones it managed to report: take the larger, never the sum */
	return s->trailer_lost > s->lost_in_records ? s->trailer_lost : s->lost_in_records;
}

static void print_human(struct summary *s, const struct gmt_read_info *in)
{
	FILE *f = stdout;
	char b1[32], b2[32], b3[32], b4[32];
	fprintf(f, "trace     %s (format %u, %s)\n", s->path, (unsigned)s->hdr->version,
		in->complete		       ? "complete"
		: in->stop == GMT_STOP_TORN    ? "INCOMPLETE: torn tail"
		: in->stop == GMT_STOP_CORRUPT ? "INCOMPLETE: corrupt"
					       : "INCOMPLETE: no trailer");
	fprintf(f, "process   pid %" PRIu64, s->has_process ? s->pid : (uint64_t)s->hdr->pid);
	if (s->has_process)
		fprintf(f, " (ppid %" PRIu64 "): %s", s->ppid, s->command);
	fputc('\n', f);
	uint64_t end = s->has_trailer ? s->trailer_end : s->last_time;
	fprintf(f, "duration  %s s, %" PRIu64 " events, %" PRIu64 " lost\n",
		fmt_reltime(b1, rel(s, end)) + 1, s->events, lost_events(s));

	fprintf(
	    f,
	    "\ndevice memory (cudaMalloc, cuMemAlloc, stream-ordered, cuMemCreate on a device)\n");
	fprintf(f, "  %-4s %-28s %10s %10s %16s %12s %8s\n", "dev", "name", "total", "peak",
		"peak at (s)", "live at end", "allocs");
	if (!s->ndevs)
		fprintf(f, "  (no devices)\n");
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct dev_info *d = &s->devs[i];
		fprintf(f, "  %-4" PRId64 " %-28.28s %10s %10s %16s %12s %8" PRIu64 "\n",
			d->ordinal, d->name[0] ? d->name : "?",
			d->total ? fmt_size(b1, d->total) : "?", fmt_size(b2, d->lv.peak),
			d->lv.peak_seq ? fmt_reltime(b3, rel(s, d->lv.peak_time_ns)) + 1 : "-",
			fmt_size(b4, d->lv.bytes), d->lv.count);
	}

	bool other = false;
	for (int b = BK_MANAGED; b < BK_COUNT; b++)
		other |= s->rp.buckets[b].peak > 0 || s->rp.buckets[b].count > 0;
	if (other) {
		fprintf(f, "\nother memory\n  %-20s %10s %16s %12s %8s\n", "kind", "peak",
			"peak at (s)", "live at end", "allocs");
		for (int b = BK_MANAGED; b < BK_COUNT; b++) {
			const struct rp_level *lv = &s->rp.buckets[b];
			if (!lv->peak && !lv->count && !lv->peak_seq)
				continue;
			fprintf(f, "  %-20s %10s %16s %12s %8" PRIu64 "\n", bucket_label[b],
				fmt_size(b1, lv->peak),
				lv->peak_seq ? fmt_reltime(b3, rel(s, lv->peak_time_ns)) + 1 : "-",
				fmt_size(b2, lv->bytes), lv->count);
		}
	}

	fprintf(f, "\ncalls\n  %-32s %10s %8s %12s\n", "api", "calls", "failed", "bytes");
	struct call *c, *ct;
	HASH_ITER(hh, s->calls, c, ct)
	{
		fprintf(f, "  %-32s %10" PRIu64 " %8" PRIu64 " %12s\n", api_name(c->api), c->count,
			c->failed, fmt_size(b1, c->bytes));
	}
	if (!s->calls)
		fprintf(f, "  (none)\n");

	if (s->nfailures) {
		fprintf(f, "\nfailed calls (%" PRIu64 ")\n", s->nfailures);
		size_t show = s->nfailures_kept < 20 ? s->nfailures_kept : 20;
		for (size_t i = 0; i < show; i++) {
			const struct failure *x = &s->failures[i];
			const char *rn = result_name(x->api, x->result);
			fprintf(f, "  %16s  %-28s dev %-3" PRId64 " size %-10s %s (%" PRIu64 ")\n",
				fmt_reltime(b1, rel(s, x->time_ns)) + 1, api_name(x->api),
				x->device, fmt_size(b2, x->size), rn ? rn : "?", x->result);
		}
		if (s->nfailures > show)
			fprintf(f, "  ... %" PRIu64 " more (--json lists up to %d)\n",
				s->nfailures - show, MAX_FAILURES);
	}

	if (lost_events(s))
		fprintf(f,
			"\nlost events: %" PRIu64 " (%" PRIu64 " in LOST records, %" PRIu64
			" in the trailer): the totals above undercount\n",
			lost_events(s), s->lost_in_records, s->trailer_lost);
	if (s->rp.unmatched_frees)
		fprintf(f, "\nfrees of addresses not live: %" PRIu64 "\n", s->rp.unmatched_frees);

	for (size_t i = 0; i < s->ndevs; i++) {
		struct dev_info *d = &s->devs[i];
		if (!d->nsites)
			continue;
		fprintf(f, "\ntop allocation sites at the device %" PRId64 " peak (%s at %s s)\n",
			d->ordinal, fmt_size(b1, d->lv.peak),
			fmt_reltime(b2, rel(s, d->lv.peak_time_ns)) + 1);
		fprintf(f, "  %10s %8s %8s  %s\n", "bytes", "allocs", "stack", "site");
		for (size_t k = 0; k < d->nsites; k++) {
			const struct site *st = &d->sites[k];
			fprintf(f, "  %10s %8" PRIu64 " %8" PRIu64 "  ", fmt_size(b1, st->bytes),
				st->count, st->stack_id);
			if (st->has_frame) {
				frame_text(f, &st->frame);
				callers_text(f, s, st->stack_id, st->frame.depth);
			} else {
				fputs("(no stack)", f);
			}
			fputc('\n', f);
		}
		if (d->distinct_sites > d->nsites)
			fprintf(f, "  ... %zu more sites\n", d->distinct_sites - d->nsites);
	}
}

static void json_level(FILE *f, const struct summary *s, const struct rp_level *lv)
{
	fprintf(f,
		"\"peak_bytes\": %" PRIu64 ", \"peak_time_ns\": %" PRId64
		", \"live_bytes_at_end\": %" PRIu64 ", \"live_allocations_at_end\": %" PRIu64,
		lv->peak, lv->peak_seq ? rel(s, lv->peak_time_ns) : 0, lv->bytes, lv->count);
}

static void json_cstr0(FILE *f, const char *str)
{
	json_str(f, str, strlen(str));
}

static void print_json(struct summary *s, const struct gmt_read_info *in)
{
	FILE *f = stdout;
	fprintf(f,
		"{\"format_version\": %u, \"complete\": %s, \"torn_tail\": %s, \"corrupt\": %s, "
		"\"unreadable_bytes\": %" PRIu64 ",\n",
		(unsigned)s->hdr->version, in->complete ? "true" : "false",
		in->stop == GMT_STOP_TORN ? "true" : "false",
		in->stop == GMT_STOP_CORRUPT ? "true" : "false", in->unreadable);
	fprintf(f, " \"process\": {\"pid\": %" PRIu64 ", \"ppid\": %" PRIu64 ", \"command\": ",
		s->has_process ? s->pid : (uint64_t)s->hdr->pid, s->ppid);
	json_cstr0(f, s->command ? s->command : "");
	fputs(", \"exe\": ", f);
	json_cstr0(f, s->exe ? s->exe : "");
	fputs(", \"hostname\": ", f);
	json_cstr0(f, s->host ? s->host : "");
	uint64_t end = s->has_trailer ? s->trailer_end : s->last_time;
	fprintf(f, "},\n \"start_wall_ns\": %" PRIu64 ", \"duration_ns\": %" PRId64 ",\n",
		s->hdr->start_wall_ns, s->events || s->has_trailer ? rel(s, end) : 0);
	fprintf(
	    f,
	    " \"events\": %" PRIu64 ", \"lost_events\": %" PRIu64 ", \"lost_in_records\": %" PRIu64
	    ", \"lost_in_trailer\": %" PRIu64 ", \"unmatched_frees\": %" PRIu64 ",\n",
	    s->events, lost_events(s), s->lost_in_records, s->trailer_lost, s->rp.unmatched_frees);

	fputs(" \"devices\": [", f);
	for (size_t i = 0; i < s->ndevs; i++) {
		struct dev_info *d = &s->devs[i];
		fprintf(f, "%s\n  {\"index\": %" PRId64 ", \"name\": ", i ? "," : "", d->ordinal);
		json_cstr0(f, d->name);
		fprintf(f, ", \"total_bytes\": %" PRIu64 ", ", d->total);
		json_level(f, s, &d->lv);
		fprintf(f, ", \"distinct_sites_at_peak\": %zu, \"peak_sites\": [",
			d->distinct_sites);
		for (size_t k = 0; k < d->nsites; k++) {
			const struct site *st = &d->sites[k];
			const struct frame *fr = &st->frame;
			fprintf(f,
				"%s\n    {\"stack_id\": %" PRIu64 ", \"bytes\": %" PRIu64
				", \"allocations\": %" PRIu64,
				k ? "," : "", st->stack_id, st->bytes, st->count);
			if (st->has_frame) {
				fprintf(f, ", \"address\": %" PRIu64 ", \"function\": ", fr->ip);
				json_cstr0(f, fr->function ? fr->function : "");
				fputs(", \"file\": ", f);
				json_cstr0(f, fr->file ? fr->file : "");
				fprintf(f, ", \"line\": %" PRIu64 ", \"module\": ", fr->line);
				json_cstr0(f, fr->module ? fr->module->path : "");
				fprintf(f,
					", \"module_offset\": %" PRIu64
					", \"in_cuda_libraries\": %s",
					fr->module ? fr->ip - fr->module->bias : 0,
					fr->in_cuda ? "true" : "false");
			}
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("],\n \"memory\": {", f);
	for (int b = 0; b < BK_COUNT; b++) {
		fprintf(f, "%s\n  \"%s\": {", b ? "," : "", bucket_key[b]);
		json_level(f, s, &s->rp.buckets[b]);
		fputc('}', f);
	}
	fputs("},\n \"calls\": {", f);
	struct call *c, *ct;
	int first = 1;
	HASH_ITER(hh, s->calls, c, ct)
	{
		fprintf(f, "%s\n  ", first ? "" : ",");
		json_cstr0(f, api_name(c->api));
		fprintf(f,
			": {\"count\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"bytes\": %" PRIu64
			"}",
			c->count, c->failed, c->bytes);
		first = 0;
	}
	fprintf(f, "},\n \"failures_total\": %" PRIu64 ", \"failures\": [", s->nfailures);
	for (size_t i = 0; i < s->nfailures_kept; i++) {
		const struct failure *x = &s->failures[i];
		const char *rn = result_name(x->api, x->result);
		fprintf(f, "%s\n  {\"time_ns\": %" PRId64 ", \"api\": ", i ? "," : "",
			rel(s, x->time_ns));
		json_cstr0(f, api_name(x->api));
		fprintf(f,
			", \"device\": %" PRId64 ", \"size\": %" PRIu64 ", \"result\": %" PRIu64
			", \"result_name\": ",
			x->device, x->size, x->result);
		json_cstr0(f, rn ? rn : "");
		fputc('}', f);
	}
	fputs("]", f);
	if (s->has_trailer)
		fprintf(f,
			",\n \"trailer\": {\"end_time_ns\": %" PRId64 ", \"events\": %" PRIu64
			", \"lost\": %" PRIu64 ", \"reason\": %" PRIu64 "}",
			rel(s, s->trailer_end), s->trailer_events, s->trailer_lost,
			s->trailer_reason);
	fputs("}\n", f);
}

static void summary_free(struct summary *s)
{
	for (size_t i = 0; i < s->ndevs; i++) {
		free(s->devs[i].name);
		free(s->devs[i].sites);
	}
	free(s->devs);
	for (size_t i = 0; i < s->nmods; i++) {
		free(s->mods[i].path);
		free(s->mods[i].build_id);
	}
	free(s->mods);
	struct symbol *sym, *st;
	HASH_ITER(hh, s->symbols, sym, st)
	{
		HASH_DEL(s->symbols, sym);
		free(sym->function);
		free(sym->file);
		free(sym);
	}
	struct call *c, *ct;
	HASH_ITER(hh, s->calls, c, ct)
	{
		HASH_DEL(s->calls, c);
		free(c);
	}
	free(s->nodes);
	free(s->failures);
	free(s->command);
	free(s->exe);
	free(s->host);
	replay_free(&s->rp);
	if (s->symbolizer)
		gmt_symbolizer_free(s->symbolizer);
}

int cmd_summary(int argc, char **argv)
{
	static const char *const flags[] = {"--json", NULL};
	bool set[1] = {false};
	const char *path;
	int rc = cli_parse(argc, argv, help, flags, set, &path);
	if (rc >= 0)
		return rc;
	struct gmt_reader *r = cli_open("summary", path, &rc);
	if (!r)
		return rc;

	struct summary s = {.path = path, .hdr = gmt_reader_header(r)};
	run_pass(r, &s, &s.rp, NULL, 0);
	struct gmt_read_info info = *gmt_reader_info(r);

	/* devices seen only in the replay (an allocation on device -1) */
	for (size_t i = 0; i < s.rp.ndevs; i++)
		dev_get(&s, s.rp.devs[i].ordinal);
	if (s.ndevs > 1)
		qsort(s.devs, s.ndevs, sizeof(*s.devs), dev_cmp);
	struct peak_target *targets = xrealloc(NULL, s.ndevs * sizeof(*targets));
	size_t ntargets = 0;
	for (size_t i = 0; i < s.ndevs; i++) {
		struct dev_info *d = &s.devs[i];
		for (size_t k = 0; k < s.rp.ndevs; k++)
			if (s.rp.devs[k].ordinal == d->ordinal)
				d->lv = s.rp.devs[k].lv;
		if (d->lv.peak_seq)
			targets[ntargets++] = (struct peak_target){d->lv.peak_seq, d};
	}
	if (ntargets) {
		qsort(targets, ntargets, sizeof(*targets), target_cmp);
		struct replay rp2;
		gmt_reader_rewind(r);
		run_pass(r, &s, &rp2, targets, ntargets);
		replay_free(&rp2);
		for (size_t i = 0; i < s.ndevs; i++)
			for (size_t k = 0; k < s.devs[i].nsites; k++) {
				struct site *st = &s.devs[i].sites[k];
				st->has_frame = site_frame(&s, st->stack_id, &st->frame);
			}
	}
	free(targets);
	HASH_SORT(s.calls, call_cmp);

	if (set[0])
		print_json(&s, &info);
	else
		print_human(&s, &info);
	fflush(stdout);
	rc = cli_finish("summary", path, &info);
	summary_free(&s);
	gmt_reader_close(r);
	return rc;
}
