/* gpumemtrace diff: two traces side by side: the environment that shapes GPU
 * memory (GPUs, driver, CUDA libraries, allocator variables), peaks and
 * totals per device, calls per API, and the allocation sites live at the
 * peak that were added, removed, grew or shrank. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/accounting.h"
#include "analysis/frameworks.h"
#include "analysis/check-measure.h"
#include "cli/cli.h"
#include "common/frameworks.h"
#include "cli/options.h"

static const char about[] =
    "Compares trace B with trace A (A is the reference: deltas are B - A):\n"
    "  - the environment: GPU names, memory, compute capability, driver version,\n"
    "    the CUDA libraries loaded (libcudart, cuBLAS, cuDNN, NCCL file names),\n"
    "    host, command, and the allocator variables the tracer records\n"
    "    (CUDA_VISIBLE_DEVICES, PYTORCH_ALLOC_CONF, XLA_*, TF_*,\n"
    "    NCCL_CUMEM_ENABLE...); only what differs is listed;\n"
    "  - the allocator environment side by side, set or not;\n"
    "  - per device, what nvidia-smi (the NVML samples) showed against the trace,\n"
    "    at the peak and at the end: this process's usage, the traced\n"
    "    allocations (of them stream-ordered), the CUDA contexts, and the rest\n"
    "    unexplained with its likely route (a stream-ordered pool's reserve...):\n"
    "    two runs whose allocations match may differ by gigabytes there;\n"
    "  - per device: the peak of live device memory and what was live at the\n"
    "    end, with the delta and the change in percent; other kinds of memory;\n"
    "  - calls per API whose counts differ;\n"
    "  - allocation sites (device memory live at each device's peak, grouped\n"
    "    --by stack, function or library) that were added, removed, grew or\n"
    "    shrank, largest change first.\n";
static const char more[] = "examples:\n"
			   "  gpumemtrace diff main.gmt pr.gmt\n"
			   "  gpumemtrace diff --by library a100.gmt h100.gmt\n"
			   "  gpumemtrace diff --json before.gmt after.gmt > diff.json\n";
static const struct opt_usage usage = {
    .name = "diff", .args = "A B", .min_args = 0, .about = about, .more = more};

#define CMD "diff"

struct env_item {
	char *key, *a, *b; /* a, b NULL: absent */
};

struct env_list {
	struct env_item *v;
	size_t n, cap;
};

static char *xstrdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		xalloc_failed();
	va_end(ap);
	return s;
}

/* Takes ownership of a and b. */
static void env_add(struct env_list *l, const char *key, char *a, char *b)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 32;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (struct env_item){xstrdup_or_null(key), a, b};
}

static bool env_same(const struct env_item *e)
{
	if (!e->a || !e->b)
		return !e->a && !e->b;
	return strcmp(e->a, e->b) == 0;
}

static const char *find_env(const struct trace *t, const char *key)
{
	for (size_t i = 0; i < t->nenv; i++)
		if (strcmp(t->env[i].key, key) == 0)
			return t->env[i].value;
	return NULL;
}

/* The loaded modules whose file name starts with `prefix`, joined. */
static char *modules_named(const struct trace *t, const char *prefix)
{
	char *out = NULL;
	size_t plen = strlen(prefix);
	for (size_t i = 0; i < t->nmods; i++) {
		const char *lib =
		    t->mods[i].library ? t->mods[i].library : path_basename(t->mods[i].path);
		if (strncmp(lib, prefix, plen) != 0 || (lib[plen] != '.' && lib[plen] != '-'))
			continue;
		if (out && strstr(out, lib))
			continue;
		char *n = out ? xprintf("%s, %s", out, lib) : xprintf("%s", lib);
		free(out);
		out = n;
	}
	return out;
}

static char *driver_text(int v)
{
	return v ? xprintf("%d.%d (%d)", v / 1000, v % 1000 / 10, v) : NULL;
}

static void collect_env(struct env_list *l, struct trace *a, struct trace *b, int64_t *devs,
			size_t ndevs)
{
	env_add(l, "host", xstrdup_or_null(a->host), xstrdup_or_null(b->host));
	env_add(l, "command", xstrdup_or_null(a->command), xstrdup_or_null(b->command));
	env_add(l, "devices", xprintf("%zu", a->ndevs), xprintf("%zu", b->ndevs));
	for (size_t i = 0; i < ndevs; i++) {
		const struct trace_device *da = trace_device(a, devs[i]),
					  *db = trace_device(b, devs[i]);
		char key[64], s1[32], s2[32];
#define DEVKEY(what) (snprintf(key, sizeof(key), "device %" PRId64 " " what, devs[i]), key)
		env_add(l, DEVKEY("name"), da && da->name[0] ? xstrdup_or_null(da->name) : NULL,
			db && db->name[0] ? xstrdup_or_null(db->name) : NULL);
		env_add(
		    l, DEVKEY("memory"),
		    da && da->total_bytes ? xprintf("%s (%" PRIu64 " B)",
						    fmt_size(s1, da->total_bytes), da->total_bytes)
					  : NULL,
		    db && db->total_bytes ? xprintf("%s (%" PRIu64 " B)",
						    fmt_size(s2, db->total_bytes), db->total_bytes)
					  : NULL);
		env_add(l, DEVKEY("compute capability"),
			da && (da->cc_major || da->cc_minor)
			    ? xprintf("%d.%d", da->cc_major, da->cc_minor)
			    : NULL,
			db && (db->cc_major || db->cc_minor)
			    ? xprintf("%d.%d", db->cc_major, db->cc_minor)
			    : NULL);
		env_add(l, DEVKEY("driver (CUDA version)"),
			da ? driver_text(da->driver_version) : NULL,
			db ? driver_text(db->driver_version) : NULL);
#undef DEVKEY
	}
	/* the libraries whose versions matter (the framework table's) */
	for (int id = 1; id < GMT_FW_COUNT; id++)
		for (const char *const *v = gmt_frameworks[id].versioned; v && *v; v++) {
			char key[64];
			snprintf(key, sizeof(key), "library %s", *v);
			env_add(l, key, modules_named(a, *v), modules_named(b, *v));
		}
	/* the environment variables: every key either PROCESS record has */
	for (int side = 0; side < 2; side++) {
		const struct trace *t = side ? b : a;
		for (size_t i = 0; i < t->nenv; i++) {
			if (side && find_env(a, t->env[i].key))
				continue; /* added from A already */
			char *key = xprintf("env %s", t->env[i].key);
			env_add(l, key, xstrdup_or_null(find_env(a, t->env[i].key)),
				xstrdup_or_null(find_env(b, t->env[i].key)));
			free(key);
		}
	}
}

/* ---- sites ---- */

enum site_status { ST_SAME, ST_ADDED, ST_REMOVED, ST_GREW, ST_SHRANK };
static const char *const status_name[] = {"same", "added", "removed", "grew", "shrank"};

struct site_row {
	const char *key;
	int64_t device;
	uint64_t a_bytes, b_bytes, a_count, b_count;
	enum site_status status;
};

static uint64_t absdelta(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static int row_cmp(const void *x, const void *y)
{
	const struct site_row *a = x, *b = y;
	uint64_t da = absdelta(a->a_bytes, a->b_bytes), db = absdelta(b->a_bytes, b->b_bytes);
	if (da != db)
		return da < db ? 1 : -1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return strcmp(a->key, b->key);
}

static struct site_row *site_rows(struct measure *a, struct measure *b, size_t *n_out, size_t *same)
{
	size_t cap = HASH_COUNT(a->sites) + HASH_COUNT(b->sites), n = 0;
	struct site_row *rows = xrealloc(NULL, cap * sizeof(*rows));
	struct cm_site *s, *tmp, *o;
	HASH_ITER(hh, a->sites, s, tmp)
	{
		HASH_FIND_STR(b->sites, s->id, o);
		rows[n++] =
		    (struct site_row){s->key,	s->device,	  s->bytes, o ? o->bytes : 0,
				      s->count, o ? o->count : 0, ST_SAME};
	}
	HASH_ITER(hh, b->sites, s, tmp)
	{
		HASH_FIND_STR(a->sites, s->id, o);
		if (!o)
			rows[n++] =
			    (struct site_row){s->key, s->device, 0, s->bytes, 0, s->count, ST_SAME};
	}
	size_t k = 0;
	*same = 0;
	for (size_t i = 0; i < n; i++) {
		struct site_row *r = &rows[i];
		r->status = !r->a_count		      ? ST_ADDED
			    : !r->b_count	      ? ST_REMOVED
			    : r->b_bytes > r->a_bytes ? ST_GREW
			    : r->b_bytes < r->a_bytes ? ST_SHRANK
						      : ST_SAME;
		if (r->status == ST_SAME)
			(*same)++;
		else
			rows[k++] = *r;
	}
	if (k)
		qsort(rows, k, sizeof(*rows), row_cmp);
	*n_out = k;
	return rows;
}

/* ---- output ---- */

static const char *delta_size(char *buf, uint64_t a, uint64_t b)
{
	char tmp[32];
	if (a == b)
		return "0 B";
	snprintf(buf, 40, "%c%s", b > a ? '+' : '-', fmt_size(tmp, absdelta(a, b)));
	return buf;
}

static const char *delta_pct(char *buf, uint64_t a, uint64_t b)
{
	if (a == 0)
		return b ? "new" : "0%";
	double p = ((double)b - (double)a) * 100.0 / (double)a;
	snprintf(buf, 32, "%+.1f%%", p);
	return buf;
}

static int64_t sdelta(uint64_t a, uint64_t b)
{
	return b >= a ? (int64_t)(b - a) : -(int64_t)(a - b);
}

static void json_opt_str(FILE *f, const char *s)
{
	if (s)
		json_cstr(f, s);
	else
		fputs("null", f);
}

static void json_pct(FILE *f, uint64_t a, uint64_t b)
{
	if (a == 0)
		fputs(b ? "null" : "0", f);
	else
		fprintf(f, "%.6g", ((double)b - (double)a) * 100.0 / (double)a);
}

struct diff_ctx {
	struct measure *a, *b;
	struct acct acct_a, acct_b; /* nvidia-smi against the trace */
	const char *path_a, *path_b;
	struct env_list env;
	int64_t *devs;
	size_t ndevs;
	struct site_row *rows;
	size_t nrows, same_sites;
	const char *by;
	int depth;
};

static void call_pair(struct diff_ctx *d, uint32_t api, struct cm_call **ca, struct cm_call **cb)
{
	HASH_FIND(hh, d->a->calls, &api, sizeof(api), *ca);
	HASH_FIND(hh, d->b->calls, &api, sizeof(api), *cb);
}

/* Every API either trace called, ascending. */
static size_t all_apis(struct diff_ctx *d, uint32_t **out)
{
	size_t n = 0;
	uint32_t *v =
	    xrealloc(NULL, (HASH_COUNT(d->a->calls) + HASH_COUNT(d->b->calls) + 1) * sizeof(*v));
	struct cm_call *c, *tmp, *o;
	HASH_ITER(hh, d->a->calls, c, tmp)
	{
		v[n++] = c->api;
	}
	HASH_ITER(hh, d->b->calls, c, tmp)
	{
		HASH_FIND(hh, d->a->calls, &c->api, sizeof(c->api), o);
		if (!o)
			v[n++] = c->api;
	}
	/* insertion sort: a few dozen APIs */
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k && v[k - 1] > v[k]; k--) {
			uint32_t t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	*out = v;
	return n;
}

static const char *state_text(const struct trace *t)
{
	return t->complete ? "complete" : "INCOMPLETE";
}

/* ---- the allocator environment, nvidia-smi ---- */

/* A setting's row, A's and B's values in columns; a value too long for
 * them (a command line) puts each under the name, wrapped. */
static void env_row(FILE *f, const char *k, const char *va, const char *vb, const char *tail)
{
	int w = cli_text_width(f);
	if (strlen(va) <= 30 && 2 + 36 + 1 + 30 + 1 + (int)(strlen(vb) + strlen(tail)) <= w) {
		fprintf(f, "  %-36s %-30s %s%s\n", k, va, vb, tail);
		return;
	}
	fprintf(f, "  %s%s\n", k, tail);
	cli_wrapf(f, 9, "      A: %s", va);
	cli_wrapf(f, 9, "      B: %s", vb);
}

/* The allocator variables the tracer records that the framework table
 * marks shown, set or not: the same value in both runs matters as much as
 * a change. */
static void print_alloc_env(FILE *f, struct diff_ctx *d)
{
	fprintf(f, "\nallocator environment\n  %-36s %-30s %s\n", "", "A", "B");
	for (size_t i = 0; i < gmt_fw_nenv; i++) {
		if (!gmt_fw_env[i].shown)
			continue;
		const char *k = gmt_fw_env[i].name;
		const char *va = find_env(&d->a->t, k), *vb = find_env(&d->b->t, k);
		bool differs = va && vb ? strcmp(va, vb) != 0 : va != vb;
		env_row(f, k, va ? va : "(unset)", vb ? vb : "(unset)",
			differs ? "  (differs)" : "");
	}
	/* a setting with two names: the one the framework did not read */
	for (int side = 0; side < 2; side++)
		for (size_t i = 0; i < gmt_fw_nenv; i++) {
			const struct trace *t = side ? &d->b->t : &d->a->t;
			struct fw_in_force c;
			if (!gmt_fw_env[i].current)
				continue;
			fw_in_force_of(t->env, t->nenv, gmt_fw_env[i].current, &c);
			if (c.ignored)
				cli_wrapf(f, 6, "  %c: %s is %s while %s is set", side ? 'B' : 'A',
					  c.ignored, c.conflict ? "an error" : "ignored", c.name);
		}
}

static const struct acct_dev *acct_dev_of(const struct acct *a, int64_t ordinal)
{
	for (size_t i = 0; i < a->ndevs; i++)
		if (a->devs[i].ordinal == ordinal)
			return &a->devs[i];
	return NULL;
}

/* The likely route of a moment's unexplained bytes: the first, when the
 * moment is flagged. */
static const struct acct_route *likely(const struct acct_dev *ad, const struct acct_moment *m)
{
	return ad && m->nvml && m->flagged && ad->nroutes ? &ad->routes[0] : NULL;
}

static const char *opt_size(char *buf, bool have, uint64_t v)
{
	return have ? fmt_size(buf, v) : "-";
}

/* plus: a delta, signed either way */
static const char *signed_size(char *buf, int64_t v, bool plus)
{
	char tmp[32];
	uint64_t a = v < 0 ? -(uint64_t)v : (uint64_t)v;
	snprintf(buf, 40, "%s%s", v < 0 ? "-" : plus && v ? "+" : "", fmt_size(tmp, a));
	return buf;
}

#define SMI_ROW "    %-32s %12s %12s %12s\n"

/* One moment's rows, A against B. */
static void smi_moment(FILE *f, const struct acct_dev *xa, const struct acct_dev *xb, bool end)
{
	static const struct acct_moment none;
	const struct acct_moment *ma = xa ? (end ? &xa->end : &xa->peak) : &none,
				 *mb = xb ? (end ? &xb->end : &xb->peak) : &none;
	char b1[40], b2[40], b3[40];
	fprintf(f, "  %s\n", end ? "at the end" : "at the peak");
	fprintf(f, SMI_ROW, "nvidia-smi (this process)",
		ma->unsampled ? "unsampled" : opt_size(b1, ma->nvml, ma->smi),
		mb->unsampled ? "unsampled" : opt_size(b2, mb->nvml, mb->smi),
		ma->nvml && mb->nvml ? delta_size(b3, ma->smi, mb->smi) : "-");
	fprintf(f, SMI_ROW, "traced allocations", opt_size(b1, ma->have, ma->traced),
		opt_size(b2, mb->have, mb->traced), delta_size(b3, ma->traced, mb->traced));
	if (ma->async || mb->async)
		fprintf(f, SMI_ROW, "  of them stream-ordered", fmt_size(b1, ma->async),
			fmt_size(b2, mb->async), delta_size(b3, ma->async, mb->async));
	fprintf(f, SMI_ROW, "CUDA contexts + module code", fmt_size(b1, ma->contexts),
		fmt_size(b2, mb->contexts), delta_size(b3, ma->contexts, mb->contexts));
	fprintf(f, SMI_ROW, "unexplained", ma->nvml ? signed_size(b1, ma->unexplained, false) : "-",
		mb->nvml ? signed_size(b2, mb->unexplained, false) : "-",
		ma->nvml && mb->nvml ? signed_size(b3, mb->unexplained - ma->unexplained, true)
				     : "-");
	const struct acct_route *ra = likely(xa, ma), *rb = likely(xb, mb);
	if (ra)
		cli_wrapf(f, 9, "      A: likely %s", ra->text);
	if (rb)
		cli_wrapf(f, 9, "      B: likely %s", rb->text);
}

static void print_smi(FILE *f, struct diff_ctx *d)
{
	if (d->acct_a.nvml_why && d->acct_b.nvml_why) {
		fputc('\n', f);
		cli_wrapf(f, 2, "nvidia-smi: no NVML figures in either trace (A: %s; B: %s)",
			  d->acct_a.nvml_why, d->acct_b.nvml_why);
		return;
	}
	for (size_t i = 0; i < d->ndevs; i++) {
		const struct acct_dev *xa = acct_dev_of(&d->acct_a, d->devs[i]),
				      *xb = acct_dev_of(&d->acct_b, d->devs[i]);
		fprintf(f, "\nnvidia-smi against the trace, device %" PRId64 "\n" SMI_ROW,
			d->devs[i], "", "A", "B", "delta");
		smi_moment(f, xa, xb, false);
		smi_moment(f, xa, xb, true);
		if (!xa || !xb || !xa->end.nvml || !xb->end.nvml)
			continue;
		uint64_t dsmi = absdelta(xa->end.smi, xb->end.smi);
		uint64_t dtraced = absdelta(xa->end.traced, xb->end.traced);
		char b1[40], b2[40];
		if (dsmi > ACCT_FLAG_BYTES && dsmi > 2 * dtraced)
			cli_wrapf(
			    f, 4,
			    "  nvidia-smi differs by %s at the end where the traced allocations "
			    "differ by %s: the difference is memory the trace does not hold "
			    "(\"unexplained\" above; `gpumemtrace accounting` on each)",
			    delta_size(b1, xa->end.smi, xb->end.smi),
			    delta_size(b2, xa->end.traced, xb->end.traced));
	}
	if (d->acct_a.nvml_why || d->acct_b.nvml_why)
		cli_wrapf(f, 3, "  (no NVML figures in %s: %s)", d->acct_a.nvml_why ? "A" : "B",
			  d->acct_a.nvml_why ? d->acct_a.nvml_why : d->acct_b.nvml_why);
}

/* The device table's row: 88 columns, or 80 with less spacing. */
static void dev_row(FILE *f, bool narrow, const char *const v[8])
{
	static const int wide_w[8] = {4, 10, 10, 11, 8, 12, 12, 11},
			 narrow_w[8] = {3, 9, 9, 10, 7, 11, 11, 10};
	const int *w = narrow ? narrow_w : wide_w;
	fprintf(f, "  %-*s %*s %*s %*s %*s  %*s %*s %*s\n", w[0], v[0], w[1], v[1], w[2], v[2],
		w[3], v[3], w[4], v[4], w[5], v[5], w[6], v[6], w[7], v[7]);
}

static void print_human(FILE *f, struct diff_ctx *d)
{
	char b1[40], b2[40], b3[40], b4[40], b5[40], b6[40], b7[40];
	cli_wrapf(f, 5, "A  %s (%s, %" PRIu64 " events)", d->path_a, state_text(&d->a->t),
		  d->a->t.events);
	cli_wrapf(f, 5, "B  %s (%s, %" PRIu64 " events)", d->path_b, state_text(&d->b->t),
		  d->b->t.events);
	cli_partial_line(f, &d->a->t, true);
	if (strcmp(d->path_a, d->path_b) != 0)
		cli_partial_line(f, &d->b->t, true);

	size_t ndiff = 0, nsame = 0;
	for (size_t i = 0; i < d->env.n; i++) {
		const struct env_item *e = &d->env.v[i];
		ndiff += !env_same(e);
		nsame += env_same(e) && e->a;
	}
	fprintf(f, "\nenvironment: %zu different, %zu the same\n", ndiff, nsame);
	if (ndiff) {
		fprintf(f, "  %-36s %-30s %s\n", "", "A", "B");
		for (size_t i = 0; i < d->env.n; i++) {
			const struct env_item *e = &d->env.v[i];
			if (!env_same(e))
				env_row(f, e->key, e->a ? e->a : "(none)", e->b ? e->b : "(none)",
					"");
		}
	}
	print_alloc_env(f, d);

	/* 88 columns; 80 with the spacing that the figures leave */
	bool narrow = cli_text_width(f) < 88;
	fprintf(f, "\ndevice memory (B - A)\n");
	dev_row(f, narrow,
		(const char *[8]){"dev", "peak A", "peak B", "delta", "%", "live end A",
				  "live end B", "delta"});
	if (!d->ndevs)
		fprintf(f, "  (no devices)\n");
	for (size_t i = 0; i < d->ndevs; i++) {
		struct rp_level la = check_measure_dev(d->a, d->devs[i]),
				lb = check_measure_dev(d->b, d->devs[i]);
		char dev[24];
		snprintf(dev, sizeof(dev), "%" PRId64, d->devs[i]);
		dev_row(f, narrow,
			(const char *[8]){dev, fmt_size(b1, la.peak), fmt_size(b2, lb.peak),
					  delta_size(b3, la.peak, lb.peak),
					  delta_pct(b4, la.peak, lb.peak), fmt_size(b5, la.bytes),
					  fmt_size(b6, lb.bytes),
					  delta_size(b7, la.bytes, lb.bytes)});
	}
	print_smi(f, d);
	bool other = false;
	for (int k = BK_MANAGED; k < BK_POOL; k++)
		other |= d->a->rp.buckets[k].peak || d->b->rp.buckets[k].peak;
	if (other) {
		fprintf(f, "\nother memory (peaks)\n  %-20s %10s %10s %11s %8s\n", "kind", "A", "B",
			"delta", "%");
		for (int k = BK_MANAGED; k < BK_POOL; k++) {
			uint64_t pa = d->a->rp.buckets[k].peak, pb = d->b->rp.buckets[k].peak;
			if (pa || pb)
				fprintf(f, "  %-20s %10s %10s %11s %8s\n", bucket_label[k],
					fmt_size(b1, pa), fmt_size(b2, pb), delta_size(b3, pa, pb),
					delta_pct(b4, pa, pb));
		}
	}

	uint32_t *apis;
	size_t napis = all_apis(d, &apis), shown = 0;
	for (size_t i = 0; i < napis; i++) {
		struct cm_call *ca, *cb;
		call_pair(d, apis[i], &ca, &cb);
		uint64_t na = ca ? ca->count : 0, nb = cb ? cb->count : 0;
		uint64_t ba = ca ? ca->bytes : 0, bb = cb ? cb->bytes : 0;
		if (na == nb && ba == bb)
			continue;
		if (!shown++)
			fprintf(f, "\ncalls that differ\n  %-32s %10s %10s %10s %11s\n", "api", "A",
				"B", "delta", "bytes delta");
		fprintf(f, "  %-32s %10" PRIu64 " %10" PRIu64 " %+10" PRId64 " %11s\n",
			api_name(apis[i]), na, nb, sdelta(na, nb), delta_size(b1, ba, bb));
	}
	if (!shown)
		fprintf(f, "\ncalls: the same counts for every API\n");
	free(apis);

	size_t cnt[5] = {0};
	for (size_t i = 0; i < d->nrows; i++)
		cnt[d->rows[i].status]++;
	char depth[32] = "";
	if (!strcmp(d->by, "stack"))
		snprintf(depth, sizeof(depth), ", depth %d", d->depth);
	fputc('\n', f);
	cli_wrapf(f, 2,
		  "allocation sites at the peak (by %s%s): %zu added, %zu removed, %zu grew, "
		  "%zu shrank, %zu unchanged",
		  d->by, depth, cnt[ST_ADDED], cnt[ST_REMOVED], cnt[ST_GREW], cnt[ST_SHRANK],
		  d->same_sites);
	/* 51 columns of figures; narrower than them and a site: the site under */
	int room = cli_text_width(f) - 51;
	bool under = room < RB_SITE_MIN;
	const char *const none[1] = {""};
	if (under)
		room = cli_text_width(f) - 6;
	if (d->nrows)
		fprintf(f, "  %-8s %-4s %10s %10s %11s%s%s\n", "change", "dev", "A", "B", "delta",
			under ? "\n      " : "  ", "site");
	for (size_t i = 0; i < d->nrows; i++) {
		const struct site_row *r = &d->rows[i];
		fprintf(f, "  %-8s %-4" PRId64 " %10s %10s %11s%s", status_name[r->status],
			r->device, fmt_size(b1, r->a_bytes), fmt_size(b2, r->b_bytes),
			delta_size(b3, r->a_bytes, r->b_bytes), under ? "\n      " : "  ");
		cli_site_line(f, r->key, room, none, 1);
	}
}

static void json_moment(FILE *f, const struct acct_dev *x, bool end)
{
	const struct acct_moment *m = x ? (end ? &x->end : &x->peak) : NULL;
	if (!m || !m->have) {
		fputs("null", f);
		return;
	}
	fputs("{\"nvidia_smi_bytes\": ", f);
	if (m->nvml)
		fprintf(f, "%" PRIu64, m->smi);
	else
		fputs("null", f);
	fprintf(f,
		", \"unsampled\": %s, \"traced_bytes\": %" PRIu64
		", \"stream_ordered_bytes\": %" PRIu64 ", \"contexts_bytes\": %" PRIu64
		", \"unexplained_bytes\": ",
		m->unsampled ? "true" : "false", m->traced, m->async, m->contexts);
	if (m->nvml)
		fprintf(f, "%" PRId64, m->unexplained);
	else
		fputs("null", f);
	const struct acct_route *r = likely(x, m);
	fputs(", \"likely\": ", f);
	json_opt_str(f, r ? r->key : NULL);
	fputc('}', f);
}

static void json_smi_env(FILE *f, struct diff_ctx *d)
{
	fputs(",\n \"allocator_environment\": [", f);
	const char *sep = "";
	for (size_t i = 0; i < gmt_fw_nenv; i++) {
		const char *k = gmt_fw_env[i].name;
		if (!gmt_fw_env[i].shown)
			continue;
		fprintf(f, "%s{\"key\": \"%s\", \"a\": ", sep, k);
		json_opt_str(f, find_env(&d->a->t, k));
		fputs(", \"b\": ", f);
		json_opt_str(f, find_env(&d->b->t, k));
		fputc('}', f);
		sep = ", ";
	}
	/* a setting with two names: the one the framework did not read */
	fputs("],\n \"allocator_environment_ignored\": [", f);
	sep = "";
	for (int side = 0; side < 2; side++)
		for (size_t i = 0; i < gmt_fw_nenv; i++) {
			const struct trace *t = side ? &d->b->t : &d->a->t;
			struct fw_in_force c;
			if (!gmt_fw_env[i].current)
				continue;
			fw_in_force_of(t->env, t->nenv, gmt_fw_env[i].current, &c);
			if (!c.ignored)
				continue;
			fprintf(f,
				"%s{\"trace\": \"%c\", \"key\": \"%s\", \"read\": \"%s\", "
				"\"error\": %s}",
				sep, side ? 'b' : 'a', c.ignored, c.name,
				c.conflict ? "true" : "false");
			sep = ", ";
		}
	fprintf(f, "],\n \"nvidia_smi\": {\"a_available\": %s, \"b_available\": %s, \"devices\": [",
		d->acct_a.nvml_why ? "false" : "true", d->acct_b.nvml_why ? "false" : "true");
	for (size_t i = 0; i < d->ndevs; i++) {
		const struct acct_dev *xa = acct_dev_of(&d->acct_a, d->devs[i]),
				      *xb = acct_dev_of(&d->acct_b, d->devs[i]);
		fprintf(f, "%s\n  {\"index\": %" PRId64 ", \"at_peak\": {\"a\": ", i ? "," : "",
			d->devs[i]);
		json_moment(f, xa, false);
		fputs(", \"b\": ", f);
		json_moment(f, xb, false);
		fputs("}, \"at_end\": {\"a\": ", f);
		json_moment(f, xa, true);
		fputs(", \"b\": ", f);
		json_moment(f, xb, true);
		fputs("}}", f);
	}
	fputs("]}", f);
}

static void json_side(FILE *f, const char *path, const struct measure *m)
{
	fputs("{\"path\": ", f);
	json_cstr(f, path);
	fprintf(f, ", \"complete\": %s, \"events\": %" PRIu64, m->t.complete ? "true" : "false",
		m->t.events);
	cli_json_partial(f, &m->t);
	fputc('}', f);
}

static void print_json(FILE *f, struct diff_ctx *d)
{
	fputs("{\"a\": ", f);
	json_side(f, d->path_a, d->a);
	fputs(",\n \"b\": ", f);
	json_side(f, d->path_b, d->b);
	fputs(",\n \"environment\": {\"differences\": [", f);
	size_t k = 0;
	for (size_t i = 0; i < d->env.n; i++) {
		const struct env_item *e = &d->env.v[i];
		if (env_same(e))
			continue;
		fputs(k++ ? ",\n   {\"key\": " : "\n   {\"key\": ", f);
		json_cstr(f, e->key);
		fputs(", \"a\": ", f);
		json_opt_str(f, e->a);
		fputs(", \"b\": ", f);
		json_opt_str(f, e->b);
		fputc('}', f);
	}
	fputs("],\n  \"same\": [", f);
	k = 0;
	for (size_t i = 0; i < d->env.n; i++) {
		const struct env_item *e = &d->env.v[i];
		if (!env_same(e) || (!e->a && !e->b))
			continue;
		if (k++)
			fputs(", ", f);
		json_cstr(f, e->key);
	}
	fputs("]}", f);
	json_smi_env(f, d);
	fputs(",\n \"devices\": [", f);
	for (size_t i = 0; i < d->ndevs; i++) {
		struct rp_level la = check_measure_dev(d->a, d->devs[i]),
				lb = check_measure_dev(d->b, d->devs[i]);
		fprintf(f,
			"%s\n  {\"index\": %" PRId64 ", \"a_peak_bytes\": %" PRIu64
			", \"b_peak_bytes\": %" PRIu64 ", \"peak_delta_bytes\": %" PRId64
			", \"peak_delta_pct\": ",
			i ? "," : "", d->devs[i], la.peak, lb.peak, sdelta(la.peak, lb.peak));
		json_pct(f, la.peak, lb.peak);
		fprintf(f,
			", \"a_live_bytes_at_end\": %" PRIu64 ", \"b_live_bytes_at_end\": %" PRIu64
			", \"live_at_end_delta_bytes\": %" PRId64 "}",
			la.bytes, lb.bytes, sdelta(la.bytes, lb.bytes));
	}
	fputs("],\n \"memory\": {", f);
	for (int b = 0; b < BK_COUNT; b++) {
		const struct rp_level *la = &d->a->rp.buckets[b], *lb = &d->b->rp.buckets[b];
		fprintf(f,
			"%s\n  \"%s\": {\"a_peak_bytes\": %" PRIu64 ", \"b_peak_bytes\": %" PRIu64
			", \"peak_delta_bytes\": %" PRId64 ", \"a_live_bytes_at_end\": %" PRIu64
			", \"b_live_bytes_at_end\": %" PRIu64 "}",
			b ? "," : "", bucket_key[b], la->peak, lb->peak, sdelta(la->peak, lb->peak),
			la->bytes, lb->bytes);
	}
	fputs("},\n \"calls\": [", f);
	uint32_t *apis;
	size_t napis = all_apis(d, &apis);
	for (size_t i = 0; i < napis; i++) {
		struct cm_call *ca, *cb;
		call_pair(d, apis[i], &ca, &cb);
		uint64_t na = ca ? ca->count : 0, nb = cb ? cb->count : 0;
		uint64_t ba = ca ? ca->bytes : 0, bb = cb ? cb->bytes : 0;
		fputs(i ? ",\n  {\"api\": " : "\n  {\"api\": ", f);
		json_cstr(f, api_name(apis[i]));
		fprintf(f,
			", \"a_count\": %" PRIu64 ", \"b_count\": %" PRIu64
			", \"count_delta\": %" PRId64 ", \"a_failed\": %" PRIu64
			", \"b_failed\": %" PRIu64 ", \"a_bytes\": %" PRIu64
			", \"b_bytes\": %" PRIu64 ", \"bytes_delta\": %" PRId64 "}",
			na, nb, sdelta(na, nb), ca ? ca->failed : 0, cb ? cb->failed : 0, ba, bb,
			sdelta(ba, bb));
	}
	free(apis);
	fprintf(f, "],\n \"group_by\": \"%s\", \"depth\": %d, \"sites_unchanged\": %zu,\n", d->by,
		d->depth, d->same_sites);
	fputs(" \"sites\": [", f);
	for (size_t i = 0; i < d->nrows; i++) {
		const struct site_row *r = &d->rows[i];
		fprintf(f, "%s\n  {\"device\": %" PRId64 ", \"status\": \"%s\", \"site\": ",
			i ? "," : "", r->device, status_name[r->status]);
		json_cstr(f, r->key);
		fprintf(f,
			", \"a_bytes\": %" PRIu64 ", \"b_bytes\": %" PRIu64
			", \"delta_bytes\": %" PRId64 ", \"a_allocations\": %" PRIu64
			", \"b_allocations\": %" PRIu64 "}",
			r->a_bytes, r->b_bytes, sdelta(r->a_bytes, r->b_bytes), r->a_count,
			r->b_count);
	}
	fputs("]}\n", f);
}

int cmd_diff(int argc, char **argv)
{
	static const char *const group_names[] = {"stack", "function", "library"};
	bool json = false;
	struct site_args sa = {0};
	int group = GROUP_STACK; /* the choices are in enum order */
	int64_t depth = 3;
	const struct option opts[] = {
	    OPT_CHOICE("by", &group, "stack|function|library", "grouping",
		       "group sites by stack (the site and --depth callers,\n"
		       "the default), function (the site's function) or library",
		       .argh = "GROUP"),
	    OPT_INT("depth", &depth, "N", 0, 1000, "callers in a stack key (default 3)"),
	    OPT_BOOL("json", &json, "one JSON object instead of tables (keys: docs/cli.md)"),
	    OPT_SITES(&sa),
	    OPT_END(),
	};
	const char **args;
	int npaths;
	int rc = opt_parse_sites(&usage, opts, argc, argv, &args, &npaths, &sa);
	if (rc >= 0)
		return rc;
	const char *paths[2] = {npaths > 0 ? args[0] : NULL, npaths > 1 ? args[1] : NULL};
	const char *by = group_names[group];
	free(args);
	if (npaths > 2)
		return say_usage_error(CMD, "expected two traces, A and B; got more");
	if (npaths < 2)
		return say_usage_error(CMD, npaths ? "missing trace B" : "missing traces A and B");

	struct cm_options opt = {.sites = true,
				 .by = (enum trace_group)group,
				 .depth = (int)depth,
				 .rules = &sa.opts,
				 .short_names = !json};
	struct measure ma, mb;
	rc = check_measure(&ma, CMD, paths[0], &opt);
	if (rc >= 0) {
		check_measure_free(&ma);
		return rc;
	}
	rc = check_measure(&mb, CMD, paths[1], &opt);
	if (rc >= 0) {
		check_measure_free(&ma);
		check_measure_free(&mb);
		return rc;
	}

	struct diff_ctx d = {.a = &ma,
			     .b = &mb,
			     .path_a = paths[0],
			     .path_b = paths[1],
			     .by = by,
			     .depth = (int)depth};
	int64_t *da, *db;
	size_t na = check_measure_devs(&ma, &da), nb = check_measure_devs(&mb, &db);
	d.devs = xrealloc(NULL, (na + nb + 1) * sizeof(*d.devs));
	for (size_t i = 0, j = 0; i < na || j < nb;) {
		if (j >= nb || (i < na && da[i] < db[j]))
			d.devs[d.ndevs++] = da[i++];
		else if (i >= na || db[j] < da[i])
			d.devs[d.ndevs++] = db[j++];
		else {
			d.devs[d.ndevs++] = da[i++];
			j++;
		}
	}
	free(da);
	free(db);
	collect_env(&d.env, &ma.t, &mb.t, d.devs, d.ndevs);
	rc = acct_compute(&d.acct_a, &ma.t);
	if (rc < 0)
		rc = acct_compute(&d.acct_b, &mb.t);
	if (rc >= 0) { /* a read error: said */
		acct_free(&d.acct_a);
		acct_free(&d.acct_b);
		check_measure_free(&ma);
		check_measure_free(&mb);
		free(d.devs);
		return rc;
	}
	d.rows = site_rows(&ma, &mb, &d.nrows, &d.same_sites);

	if (json)
		print_json(stdout, &d);
	else
		print_human(stdout, &d);
	fflush(stdout);
	int ra = trace_finish(&ma.t), rb = trace_finish(&mb.t);
	rc = ra > rb ? ra : rb;

	for (size_t i = 0; i < d.env.n; i++) {
		free(d.env.v[i].key);
		free(d.env.v[i].a);
		free(d.env.v[i].b);
	}
	free(d.env.v);
	acct_free(&d.acct_a);
	acct_free(&d.acct_b);
	free(d.rows);
	free(d.devs);
	check_measure_free(&ma);
	check_measure_free(&mb);
	site_args_done(CMD, &sa);
	return rc;
}
