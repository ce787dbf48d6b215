/* gpumemtrace flamegraph: live device bytes by stack at the peak or at the
 * end, as an interactive SVG or HTML flame graph, or as folded stacks. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "analysis/fwhist.h"
#include "analysis/fwtensors.h"
#include "analysis/snapshot.h"
#include "analysis/top.h"
#include "analysis/trace.h"

#define CMD "flamegraph"

static const char about[] =
    "Shows the device memory live at the peak (all devices together), or at\n"
    "the end, by call stack: the wider a frame, the more bytes were allocated\n"
    "under it. Python frames appear where the trace has them. The SVG (or\n"
    "HTML) is self-contained: click a frame to zoom, 'Search' to highlight,\n"
    "'Reset zoom' to go back.\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace flamegraph gpumemtrace.1234.gmt -o flame.svg\n"
    "  gpumemtrace flamegraph --at end run.gmt -o leaks.html\n"
    "  gpumemtrace flamegraph --folded run.gmt | flamegraph.pl > flame.svg\n";
static const struct opt_usage usage = {
    .name = "flamegraph", .args = "TRACE", .min_args = 1, .about = about, .more = more};

struct node {
	char *name;
	uint64_t bytes;
	struct node *child, *next;
};

struct fg {
	struct trace *t;
	struct node root;
	bool multi_dev, raw; /* raw: the interpreter's frames kept */
	size_t nframes;
	bool keep; /* --tensors: the live allocations kept until the moment is known */
	struct rp_live *kept;
	size_t nkept, kept_cap;
};

static struct node *child_named(struct node *n, const char *name)
{
	for (struct node *c = n->child; c; c = c->next)
		if (strcmp(c->name, name) == 0)
			return c;
	struct node *c = xcalloc(1, sizeof(*c));
	c->name = xstrdup(name);
	c->next = n->child;
	n->child = c;
	return c;
}

/* A frame's name: the function (Python: with its file), else module+offset. */
static const char *frame_name(const struct trace_frame *f, char *buf, size_t size)
{
	if (f->python && f->function && f->file) { /* else a marker: "[thread runs no Python]" */
		snprintf(buf, size, "%s (%s)", f->function, path_basename(f->file));
		return buf;
	}
	if (f->function)
		return f->function;
	if (f->module)
		snprintf(buf, size, "%s+0x%" PRIx64, f->module->library, f->ip - f->module->bias);
	else
		snprintf(buf, size, "0x%" PRIx64, f->ip);
	return buf;
}

/* bytes under stack_id's frames (and a last frame named leaf, if any). */
static void add_stack(struct fg *g, int64_t device, uint64_t stack_id, uint64_t size,
		      const char *leaf)
{
	struct node *n = &g->root;
	n->bytes += size;
	if (g->multi_dev) {
		char dev[32];
		snprintf(dev, sizeof(dev), "device %" PRId64, device);
		n = child_named(n, dev);
		n->bytes += size;
	}
	int depth = trace_stack_depth(g->t, stack_id);
	if (depth == 0) {
		n = child_named(n, "(no stack)");
		n->bytes += size;
	}
	for (int d = depth - 1; d >= 0; d--) {
		struct trace_frame f;
		char buf[256];
		if (!trace_frame(g->t, stack_id, d, &f) || (!g->raw && site_is_interpreter(&f)))
			continue; /* the interpreter's own frames, as the README says */
		n = child_named(n, frame_name(&f, buf, sizeof(buf)));
		n->bytes += size;
	}
	if (leaf) {
		n = child_named(n, leaf);
		n->bytes += size;
	}
}

static void add_live(void *ctx, const struct rp_live *l)
{
	struct fg *g = ctx;
	if (g->keep) { /* --tensors: split once the moment is known */
		GROW(g->kept, g->nkept, g->kept_cap);
		g->kept[g->nkept++] = *l;
		return;
	}
	add_stack(g, l->device, l->stack_id, l->size, NULL);
}

/* --tensors: a PyTorch segment's tensors under their own stacks, the rest
 * under the segment's. */
struct fg_split {
	struct fg *g;
	int64_t device;
};
static void add_tensor(void *ctx, const struct fwt_tensor *x)
{
	struct fg_split *sp = ctx;
	add_stack(sp->g, sp->device, x->stack_id, x->size, NULL);
}

/* when: the moment (UINT64_MAX: the end); by_addr: it is a peak, made by the
 * newest live allocation (an OOM's failed call made none). */
static int add_tensors(struct fg *g, uint64_t when, bool by_addr)
{
	struct trace *t = g->t;
	int64_t *devs = xcalloc(t->ndevs + 1, sizeof(*devs));
	uint64_t *times = xcalloc(t->ndevs + 1, sizeof(*times));
	for (size_t i = 0; i < t->ndevs; i++) {
		devs[i] = t->devs[i].ordinal;
		times[i] = when;
	}
	struct fwt_set set;
	/* the allocation that made the peak: the newest live one then */
	uint64_t *ptrs = xcalloc(t->ndevs + 1, sizeof(*ptrs)), *seqs = xcalloc(t->ndevs + 1, 8);
	for (size_t k = 0; by_addr && when != UINT64_MAX && k < g->nkept; k++)
		for (size_t i = 0; i < t->ndevs; i++)
			if (g->kept[k].device == devs[i] && g->kept[k].seq > seqs[i]) {
				seqs[i] = g->kept[k].seq;
				ptrs[i] = g->kept[k].key;
			}
	int rc = fwt_capture(t, t->ndevs, devs, times, ptrs, &set);
	free(ptrs);
	free(seqs);
	for (size_t i = 0; rc < 0 && i < g->nkept; i++) {
		const struct rp_live *l = &g->kept[i];
		struct fg_split sp = {g, l->device};
		uint64_t rest;
		if (!fwt_split(&set, l->device, l->key, l->size, add_tensor, &sp, &rest))
			add_stack(g, l->device, l->stack_id, l->size, NULL);
		else if (rest)
			add_stack(g, l->device, l->stack_id, rest, TOP_CACHED);
	}
	fwt_free(&set);
	free(devs);
	free(times);
	return rc;
}

static void free_tree(struct node *n)
{
	for (struct node *c = n->child, *next; c; c = next) {
		next = c->next;
		free_tree(c);
		free(c->name);
		free(c);
	}
}

/* Children by bytes, biggest first, then by name: the same picture every run. */
static int cmp_node(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void sort_tree(struct node *n)
{
	size_t k = 0;
	for (struct node *c = n->child; c; c = c->next)
		k++;
	if (k == 0)
		return;
	struct node **v = xcalloc(k, sizeof(*v));
	k = 0;
	for (struct node *c = n->child; c; c = c->next)
		v[k++] = c;
	if (k > 1)
		qsort(v, k, sizeof(*v), cmp_node);
	for (size_t i = 0; i < k; i++) {
		v[i]->next = i + 1 < k ? v[i + 1] : NULL;
		sort_tree(v[i]);
	}
	n->child = v[0];
	free(v);
}

static int max_depth(const struct node *n)
{
	int d = 0;
	for (const struct node *c = n->child; c; c = c->next) {
		int x = 1 + max_depth(c);
		if (x > d)
			d = x;
	}
	return d;
}

/* ---- folded ------------------------------------------------------------ */

static void folded(FILE *f, const struct node *n, char *path, size_t len, size_t cap)
{
	uint64_t below = 0;
	for (const struct node *c = n->child; c; c = c->next) {
		below += c->bytes;
		size_t k = strlen(c->name);
		if (len + k + 2 >= cap)
			continue; /* absurdly deep: left out rather than cut */
		size_t at = len;
		if (len)
			path[at++] = ';';
		for (size_t i = 0; i < k; i++) /* ';' separates frames, ' ' the count */
			path[at + i] = c->name[i] == ';' ? ':' : c->name[i];
		path[at + k] = '\0';
		folded(f, c, path, at + k, cap);
		path[len] = '\0';
	}
	if (len && n->bytes > below)
		fprintf(f, "%s %" PRIu64 "\n", path, n->bytes - below);
}

/* ---- SVG --------------------------------------------------------------- */

#define FW	1200
#define ROW	17
#define PAD_TOP 70
#define PAD	10

/* Warm colours for native frames, blue for Python, grey for the CUDA
 * libraries' own frames, hashed from the name so they stay put. */
static void frame_colour(const char *name, char *buf, size_t size)
{
	unsigned h = 2166136261u;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	bool py = strstr(name, ".py)") != NULL;
	bool cuda = strncmp(name, "cuda", 4) == 0 || strncmp(name, "cu", 2) == 0;
	if (py)
		snprintf(buf, size, "rgb(%u,%u,%u)", 80 + h % 50, 140 + (h >> 8) % 60, 220);
	else if (cuda)
		snprintf(buf, size, "rgb(%u,%u,%u)", 170 + h % 30, 170 + h % 30, 180 + h % 30);
	else
		snprintf(buf, size, "rgb(%u,%u,%u)", 225 + h % 30, 90 + (h >> 8) % 110,
			 40 + (h >> 16) % 40);
}

static void svg_nodes(FILE *f, const struct node *n, uint64_t total, double x, int depth,
		      int height)
{
	double wpx = FW - 2 * PAD;
	double w = (double)n->bytes / (double)total * wpx;
	if (w < 0.3)
		return;
	char colour[48], sz[32];
	const char *name = depth == 0 ? "all" : n->name;
	frame_colour(name, colour, sizeof(colour));
	double y = height - 30 - (double)(depth + 1) * ROW;
	fprintf(f, "<g class=\"frame\"><title>");
	xml_text(f, name);
	fprintf(f,
		" (%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
		"fill=\"%s\" rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		fmt_size(sz, n->bytes), 100.0 * (double)n->bytes / (double)total, x, y, w, ROW - 1,
		colour, x + 3, y + ROW - 5);
	/* the label fitted without the script too (7 px a character), so a PNG reads */
	int fits = (int)((w - 6) / 7);
	size_t len = strlen(name);
	if (fits >= 3) {
		char label[512];
		if (len <= (size_t)fits || (size_t)fits >= sizeof(label))
			snprintf(label, sizeof(label), "%s", name);
		else
			snprintf(label, sizeof(label), "%.*s..", fits - 2, name);
		xml_text(f, label);
	}
	fputs("</text></g>\n", f);
	for (const struct node *c = n->child; c; c = c->next) {
		svg_nodes(f, c, total, x, depth + 1, height);
		x += (double)c->bytes / (double)total * wpx;
	}
}

/* Our own small viewer: fits labels to their boxes, zooms into a frame by
 * rescaling the frames above it, and highlights a search. */
static const char script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "(function(){\n"
    "var svg=document.getElementById('fg-svg')||document.documentElement;\n"
    "var W=+svg.getAttribute('data-width'),PAD=+svg.getAttribute('data-pad');\n"
    "var frames=[].slice.call(svg.querySelectorAll('g.frame'));\n"
    "frames.forEach(function(g){var r=g.querySelector('rect');\n"
    " g.ox=+r.getAttribute('x');g.ow=+r.getAttribute('width');g.oy=+r.getAttribute('y');\n"
    " g.label=g.querySelector('title').textContent.replace(/ \\([^()]*%\\)$/,'');});\n"
    "function fit(g){var t=g.querySelector('text'),r=g.querySelector('rect');\n"
    " var w=+r.getAttribute('width'),n=Math.floor((w-6)/7);\n"
    " t.setAttribute('x',+r.getAttribute('x')+3);\n"
    " t.textContent=n<3?'':(g.label.length<=n?g.label:g.label.slice(0,n-2)+'..');}\n"
    "function show(x0,w0,y0){var s=(W-2*PAD)/w0;frames.forEach(function(g){\n"
    " var r=g.querySelector('rect'),inside=g.ox+g.ow>x0+1e-6&&g.ox<x0+w0-1e-6;\n"
    " if(!inside){g.style.display='none';return;}\n"
    " g.style.display='';var x=PAD+(Math.max(g.ox,x0)-x0)*s,\n"
    " w=(Math.min(g.ox+g.ow,x0+w0)-Math.max(g.ox,x0))*s;\n"
    " r.setAttribute('x',x);r.setAttribute('width',Math.max(w,0));\n"
    " g.style.opacity=g.oy>y0?0.45:1;fit(g);});}\n"
    "frames.forEach(function(g){g.style.cursor='pointer';\n"
    " g.addEventListener('click',function(){show(g.ox,g.ow,g.oy);\n"
    "  document.getElementById('fg-reset').style.display='';});});\n"
    "document.getElementById('fg-reset').addEventListener('click',function(){\n"
    " show(PAD,W-2*PAD,1e9);this.style.display='none';});\n"
    "document.getElementById('fg-search').addEventListener('click',function(){\n"
    " var q=prompt('Search frames (a regular expression)','');if(q===null)return;\n"
    " var re;try{re=new RegExp(q);}catch(e){return;}var tot=0,root=frames[0];\n"
    " frames.forEach(function(g){var r=g.querySelector('rect');\n"
    "  if(!g.orig)g.orig=r.getAttribute('fill');\n"
    "  var m=q!==''&&re.test(g.label);r.setAttribute('fill',m?'rgb(230,0,230)':g.orig);});\n"
    " var m=document.getElementById('fg-matched');\n"
    " m.textContent=q===''?'':'matched: '+q;});\n"
    "show(PAD,W-2*PAD,1e9);\n"
    "})();\n"
    "]]></script>\n";

static void write_svg(FILE *f, struct fg *g, const char *moment, uint64_t when_ns, bool inline_html)
{
	int depth = max_depth(&g->root) + 1;
	int height = PAD_TOP + depth * ROW + 40;
	char sz[32], tbuf[32];
	if (!inline_html)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(
	    f,
	    "<svg id=\"fg-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	    "viewBox=\"0 0 %d %d\" data-width=\"%d\" data-pad=\"%d\" "
	    "font-family=\"DejaVu Sans Mono, Menlo, monospace\" font-size=\"12\">\n"
	    "<rect width=\"100%%\" height=\"100%%\" fill=\"#fdfdf8\"/>\n"
	    "<text id=\"title\" x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\" "
	    "font-family=\"DejaVu Sans, Helvetica, sans-serif\">gpumemtrace: ",
	    FW, height, FW, height, FW, PAD, PAD);
	struct trace *t = g->t;
	xml_text(f, t->command && *t->command ? t->command : "(unknown command)");
	fputs(" on ", f);
	xml_text(f, t->host && *t->host ? t->host : "(unknown host)");
	fprintf(
	    f,
	    "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\" fill=\"#555\" "
	    "font-family=\"DejaVu Sans, Helvetica, sans-serif\">live device memory %s: %s, "
	    "at %s</text>\n"
	    "<text id=\"fg-search\" x=\"%d\" y=\"24\" text-anchor=\"end\" fill=\"#06c\" "
	    "style=\"cursor:pointer\">Search</text>\n"
	    "<text id=\"fg-reset\" x=\"%d\" y=\"44\" text-anchor=\"end\" fill=\"#06c\" "
	    "style=\"cursor:pointer;display:none\">Reset zoom</text>\n"
	    "<text id=\"fg-matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#555\"></text>\n",
	    PAD, moment, fmt_size(sz, g->root.bytes), trace_fmt_time(tbuf, trace_rel(t, when_ns)),
	    FW - PAD, FW - PAD, FW - PAD, height - 10);
	if (trace_partial(t)) { /* above the frames, where it is read first */
		char text[256];
		fprintf(f, "<text id=\"partial\" x=\"%d\" y=\"%d\" fill=\"#c00\">", PAD,
			PAD_TOP - 8);
		xml_text(f, trace_partial_text(t, text, sizeof(text)));
		fputs("</text>\n", f);
	}
	if (g->root.bytes == 0)
		fprintf(f, "<text x=\"%d\" y=\"%d\">no device memory was live then</text>\n", PAD,
			PAD_TOP + 20);
	else
		svg_nodes(f, &g->root, g->root.bytes, PAD, 0, height);
	fputs(script, f);
	fputs("</svg>\n", f);
}

/* The graph written (rc -1: the reading went well), the trace closed. */
static int flamegraph_out(struct cli_one *r, struct fg *g, bool fold, const char *out,
			  const char *moment, uint64_t when, int rc)
{
	struct trace *t = &r->t;
	if (rc < 0) {
		sort_tree(&g->root);
		FILE *f = r->out.f;
		size_t n = out ? strlen(out) : 0;
		bool html = n > 5 && strcmp(out + n - 5, ".html") == 0;
		if (fold) {
			/* folded stacks have no place for a comment that every
			 * reader skips: stderr says it (an incomplete trace: the
			 * reader's own warning does, at the end) */
			char path[8192] = "";
			if (trace_lost_own(t))
				say_error(CMD, "warning: %s: %s", t->path,
					  trace_partial_text(t, path, sizeof(path)));
			path[0] = '\0';
			folded(f, &g->root, path, 0, sizeof(path));
		} else if (html) {
			fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
			      "<title>gpumemtrace flame graph</title></head>\n"
			      "<body style=\"margin:0\">\n",
			      f);
			write_svg(f, g, moment, when, true);
			fputs("</body></html>\n", f);
		} else {
			write_svg(f, g, moment, when, false);
		}
	}
	free_tree(&g->root);
	return cli_one_close(r, CMD, rc);
}

struct fg_read {
	struct fg *g;
	bool at_end;
	uint64_t *when;
};

/* The moment's live set summed by stack (no --tensors), in one read. */
static void add_live_read(void *ctx, const struct rp_live *l)
{
	struct fg *g = ctx;
	g->multi_dev = g->t->ndevs > 1; /* known once the file is read */
	add_live(g, l);
}

static int read_live(void *ctx, struct trace *t, const char *cmd, const char *path)
{
	struct fg_read *fr = ctx;
	return snapshot_live_read(t, cmd, path, fr->at_end, add_live_read, fr->g, fr->when);
}

int cmd_flamegraph(int argc, char **argv)
{
	const char *out = NULL;
	int at = 0; /* peak, end, oom */
	bool fold = false, raw = false, tensors = false;
	const struct option opts[] = {
	    OPT_FILE("output", &out, "FILE",
		     "write to FILE; .html gives an HTML page, anything else\n"
		     "an SVG (default: SVG on stdout)",
		     .short_name = 'o'),
	    OPT_CHOICE("at", &at, "peak|end|oom", "moment",
		       "the moment to show: peak (default), end, or oom (the\n"
		       "first failed device allocation, else PyTorch's first\n"
		       "OOM in its history)"),
	    OPT_BOOL("folded", &fold,
		     "print folded stacks instead: 'outer;...;inner BYTES',\n"
		     "for flamegraph.pl, inferno and speedscope"),
	    OPT_BOOL("tensors", &tensors,
		     "split PyTorch's segments into the tensors they held\n"
		     "(a trace recorded with run --framework-history)"),
	    OPT_CLI_RAW_FRAMES(&raw, ""),
	    OPT_END(),
	};
	const char **paths = NULL;
	int npaths = 0;
	int rc = opt_parse(&usage, opts, argc, argv, &paths, &npaths);
	if (rc >= 0)
		return rc;
	bool at_end = at == 1;
	static const char *const moments[] = {"at the peak", "at the end", "at the first OOM"};
	struct cli_one r;
	struct trace *t = &r.t;
	struct fg g = {.t = t, .root = {.name = "all"}};
	g.raw = raw;
	uint64_t when = 0;
	if (!tensors && at != 2) { /* one read of the file */
		struct fg_read fr = {&g, at_end, &when};
		rc = cli_one_open_read(&r, CMD, out, paths, npaths, read_live, &fr);
		if (rc >= 0)
			return rc;
		g.multi_dev = t->ndevs > 1;
		return flamegraph_out(&r, &g, fold, out, moments[at], when, -1);
	}
	rc = cli_one_open(&r, CMD, out, paths, npaths);
	if (rc >= 0)
		return rc;
	g.multi_dev = t->ndevs > 1;
	g.keep = tensors && fwhist_present(t);
	if (tensors && !g.keep)
		fprintf(
		    stderr,
		    "gpumemtrace flamegraph: %s: --tensors: no framework history (record it with "
		    "`gpumemtrace run --framework-history`); segments stay whole\n",
		    t->path);
	if (at == 2) {
		const struct fw_snapshot *o = fwhist_first(t, GMT_FWSNAP_WHY_OOM, -1);
		bool found = false;
		rc = snapshot_live_oom(t, o ? o->time_ns : 0, add_live, &g, &when, &found);
		if (rc < 0 && !found) {
			say_error(CMD, "%s: --at oom: no device allocation failed in the trace%s",
				  t->path, g.keep ? ", and PyTorch's history has no OOM" : "");
			rc = 2;
		}
	} else {
		rc = snapshot_live(t, at_end, add_live, &g, &when);
	}
	if (rc < 0 && g.keep)
		rc = add_tensors(&g, at_end ? UINT64_MAX : when, at == 0);
	free(g.kept);
	return flamegraph_out(&r, &g, fold, out, moments[at], when, rc);
}
