/* explain's findings for one trace (explain.h): the framework and its
 * allocator mode, then one finding per question that the facts answer.
 * Figures and advice follow ../shared/notes/frameworks.md. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/explain.h"
#include "analysis/frameworks.h"
#include "analysis/explain-int.h"
#include "analysis/report-base.h"

/* ---- recognition ---- */

const char *explain_env(const struct ex_facts *f, const char *key)
{
	for (size_t i = 0; i < f->nenv; i++)
		if (strcmp(f->env[i].key, key) == 0)
			return f->env[i].value;
	return NULL;
}

/* conf with kv set: kv's key dropped from conf (commas inside [...] kept),
 * kv appended. */
static void conf_merge(char *buf, size_t size, const char *conf, const char *kv)
{
	size_t klen = strcspn(kv, ":"), n = 0;
	buf[0] = '\0';
	for (const char *p = conf; p && *p;) {
		const char *q = p;
		int depth = 0;
		while (*q && (*q != ',' || depth)) {
			depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
			q++;
		}
		size_t len = (size_t)(q - p);
		bool same = len > klen && strncmp(p, kv, klen) == 0 && p[klen] == ':';
		if (len && !same && n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s%.*s", n ? "," : "", (int)len,
					      p);
		p = *q ? q + 1 : q;
	}
	if (n < size)
		snprintf(buf + n, size - n, "%s%s", n ? "," : "", kv);
}

const char *explain_conf_advice(const struct ex_recog *r, const char *kv, char *buf, size_t size)
{
	const struct fw_in_force *c = &r->alloc_conf;
	char merged[300];
	if (!c->value) {
		snprintf(buf, size,
			 "PYTORCH_ALLOC_CONF=%s (PYTORCH_CUDA_ALLOC_CONF before PyTorch 2.9)", kv);
		return buf;
	}
	conf_merge(merged, sizeof(merged), c->value, kv);
	if (!c->older)
		snprintf(buf, size, "%s=%s", c->name, merged);
	else if (c->ignored)
		snprintf(buf, size,
			 "%s=%s (the older name, in force here: PyTorch reads it and ignores %s "
			 "while both are set)",
			 c->name, merged, c->ignored);
	else
		snprintf(buf, size, "%s=%s (the older name of PYTORCH_ALLOC_CONF, in force here)",
			 c->name, merged);
	return buf;
}

const char *explain_fraction_advice(const struct ex_recog *r, const char *value, char *buf,
				    size_t size)
{
	const struct fw_in_force *c = &r->mem_fraction;
	snprintf(buf, size, "%s%s%s (%s)", c->older ? c->name : "XLA_CLIENT_MEM_FRACTION",
		 value ? "=" : "", value ? value : "",
		 c->older
		     ? "the deprecated name, in force here: XLA_CLIENT_MEM_FRACTION replaces it"
		     : "XLA_PYTHON_CLIENT_MEM_FRACTION in older JAX");
	return buf;
}

static bool prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* The framework a row stands for, if explain tells its modes apart. */
static enum ex_fw fw_of_row(enum gmt_fw_id id)
{
	switch (id) {
	case GMT_FW_PYTORCH:
	case GMT_FW_JAX:
	case GMT_FW_TENSORFLOW:
	case GMT_FW_CUPY:
		return (enum ex_fw)id;
	default:
		return FW_NONE;
	}
}

/* The framework a library belongs to (FW_NONE: none). */
static enum ex_fw lib_fw(const char *lib)
{
	return fw_of_row(fw_of_library(lib));
}

int explain_lib_part(const char *lib)
{
	if (lib_fw(lib) != FW_NONE || strcmp(lib, "python") == 0)
		return 0;
	enum gmt_fw_id id = fw_of_library(lib);
	return gmt_frameworks[id].kind == GMT_FWK_LIBRARY && gmt_frameworks[id].own_memory
		   ? (int)id
		   : GMT_FW_COUNT;
}

const char *explain_lib_class(const char *lib)
{
	int k = explain_lib_part(lib);
	return k == 0 ? "framework" : k == GMT_FW_COUNT ? "other" : gmt_frameworks[k].name;
}

bool explain_doubling(const uint64_t *sz, size_t n)
{
	if (n < 3 || sz[n - 1] < 8 * sz[0])
		return false;
	size_t pow2 = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && sz[i] < sz[i - 1])
			return false;
		pow2 += (sz[i] & (sz[i] - 1)) == 0;
	}
	return 4 * pow2 >= 3 * n;
}

/* XLA_PYTHON_CLIENT_PREALLOCATE: anything but false/False/0 preallocates. */
static bool xla_prealloc_off(const char *v)
{
	return v && (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "0") == 0);
}

static void why(struct ex_recog *r, const char *key, const char *val)
{
	snprintf(r->mode_why, sizeof(r->mode_why), "%s=%s", key, val);
}

/* mode_why for a setting read by one of two names: the name in force, and
 * what of the other name is ignored. */
static void why_conf(struct ex_recog *r, const struct fw_in_force *c)
{
	size_t n = (size_t)snprintf(r->mode_why, sizeof(r->mode_why), "%s=%s", c->name, c->value);
	if (c->ignored && n < sizeof(r->mode_why))
		snprintf(r->mode_why + n, sizeof(r->mode_why) - n, "; %s=%s is ignored", c->ignored,
			 c->ignored_value);
}

static void recog_pytorch(const struct ex_facts *f, struct ex_recog *r)
{
	const char *nc = explain_env(f, "PYTORCH_NO_CUDA_MEMORY_CACHING");
	const struct fw_in_force *c = &r->alloc_conf;
	const char *conf = c->value;
	r->mode = MODE_PT_CACHING;
	snprintf(r->mode_why, sizeof(r->mode_why), "the default: PYTORCH_ALLOC_CONF unset");
	if (nc) { /* any value turns the cache off */
		r->mode = MODE_PT_NOCACHE;
		why(r, "PYTORCH_NO_CUDA_MEMORY_CACHING", nc);
	} else if (conf && strstr(conf, "cudaMallocAsync")) {
		r->mode = MODE_PT_ASYNC;
		why_conf(r, c);
	} else if (conf && (strstr(conf, "expandable_segments:True") ||
			    strstr(conf, "expandable_segments:true"))) {
		r->mode = MODE_PT_EXPANDABLE;
		why_conf(r, c);
	} else if (conf) {
		why_conf(r, c);
	}
}

static double xla_fraction(const struct ex_recog *r)
{
	const char *v = r->mem_fraction.value;
	double x = v ? strtod(v, NULL) : 0;
	return x > 0 && x <= 1 ? x : 0.75;
}

static void recog_xla(const struct ex_facts *f, struct ex_recog *r, const char *pattern_why)
{
	const char *pre = explain_env(f, "XLA_PYTHON_CLIENT_PREALLOCATE");
	const char *alc = explain_env(f, "XLA_PYTHON_CLIENT_ALLOCATOR");
	const char *grow = explain_env(f, "TF_FORCE_GPU_ALLOW_GROWTH");
	const char *tfa = explain_env(f, "TF_GPU_ALLOCATOR");
	r->mode = MODE_BFC_PREALLOC;
	snprintf(r->mode_why, sizeof(r->mode_why), "the default%s", pattern_why);
	if (r->fw == FW_JAX) {
		r->fraction = xla_fraction(r);
		if (alc && strcasecmp(alc, "platform") == 0) {
			r->mode = MODE_XLA_PLATFORM;
			why(r, "XLA_PYTHON_CLIENT_ALLOCATOR", alc);
		} else if (alc && strcasecmp(alc, "cuda_async") == 0) {
			r->mode = MODE_TF_ASYNC; /* XLA's stream-ordered allocator, TF's too */
			why(r, "XLA_PYTHON_CLIENT_ALLOCATOR", alc);
		} else if (xla_prealloc_off(pre)) {
			r->mode = MODE_BFC_GROWTH;
			why(r, "XLA_PYTHON_CLIENT_PREALLOCATE", pre);
		}
	} else if (tfa && strcmp(tfa, "cuda_malloc_async") == 0) {
		r->mode = MODE_TF_ASYNC;
		why(r, "TF_GPU_ALLOCATOR", tfa);
	} else if (grow && strcasecmp(grow, "true") == 0) {
		r->mode = MODE_BFC_GROWTH;
		why(r, "TF_FORCE_GPU_ALLOW_GROWTH", grow);
	}
}

/* The framework from the recorded environment, when no module names one. */
/* The framework a setting names: the first recorded variable one of them
 * reads (the framework table's variables). */
static enum ex_fw env_fw(const struct ex_facts *f)
{
	for (size_t i = 0; i < f->nenv; i++) {
		const char *k = f->env[i].key;
		for (size_t j = 0; j < gmt_fw_nenv; j++) {
			const struct gmt_fw_env *e = &gmt_fw_env[j];
			bool named =
			    e->how == GMT_ENV_PREFIX ? prefix(k, e->name) : strcmp(k, e->name) == 0;
			if (named && fw_of_row(e->fw) != FW_NONE)
				return fw_of_row(e->fw);
		}
	}
	return FW_NONE;
}

/* PyTorch's caching allocator at the driver: cudaMalloc'd segments of 2 MiB
 * and 20 MiB (two at least), larger ones rounded to 2 MiB. */
static bool caching_pattern(const struct ex_dev *d)
{
	size_t seg = 0;
	for (size_t i = 0; i < d->nregions; i++) {
		if (d->regions[i] % (2ull << 20))
			return false;
		seg += d->regions[i] == (2ull << 20) || d->regions[i] == (20ull << 20);
	}
	return d->nregions >= 3 && seg >= 2 && !d->fw_vmm;
}

/* Whether the allocations look like the mode a setting implies, on some
 * device: a setting alone (PYTORCH_CUDA_ALLOC_CONF exported in a shell) does
 * not make a plain CUDA program PyTorch. */
static bool env_agrees(const struct ex_facts *f, const struct ex_recog *r)
{
	for (size_t i = 0; i < f->ndevs; i++) {
		const struct ex_dev *d = &f->devs[i];
		size_t npow2 = 0; /* BFC's regions: powers of two, but for a 0.9 back-off */
		for (size_t k = 0; k < d->nregions; k++)
			npow2 += (d->regions[k] & (d->regions[k] - 1)) == 0;
		bool pow2 = d->nregions >= 2 && 4 * npow2 >= 3 * d->nregions;
		bool ok = false;
		switch (r->mode) {
		case MODE_PT_EXPANDABLE:
			ok = d->fw_vmm > 0;
			break;
		case MODE_PT_ASYNC:
		case MODE_TF_ASYNC:
			ok = d->async_peak > 0;
			break;
		case MODE_PT_NOCACHE:
		case MODE_XLA_PLATFORM: /* a driver free per buffer */
			ok = d->fw_allocs >= 4 && 2 * d->fw_frees >= d->fw_allocs;
			break;
		case MODE_PT_CACHING:
			ok = caching_pattern(d);
			break;
		case MODE_BFC_GROWTH:
			ok = pow2;
			break;
		case MODE_BFC_PREALLOC:
			ok = d->total && 2 * d->biggest >= d->total;
			break;
		default:
			break;
		}
		if (ok)
			return true;
	}
	return false;
}

/* The allocation pattern alone: no module and no setting names a framework. */
static void recog_pattern(const struct ex_facts *f, struct ex_recog *r)
{
	r->mode = MODE_DIRECT;
	snprintf(r->mode_why, sizeof(r->mode_why),
		 "no framework's library or setting, and no allocator's pattern");
	for (size_t i = 0; i < f->ndevs; i++) {
		const struct ex_dev *d = &f->devs[i];
		double share = d->total ? (double)d->biggest / (double)d->total : 0;
		/* a preallocation comes first, and little follows it */
		if (share >= 0.5 && d->nregions && d->nregions <= 2 &&
		    d->regions[0] == d->biggest) {
			r->mode = MODE_BFC_PREALLOC;
			/* JAX takes 75% of the total; TF the free memory less a
			 * reserve of 2 GiB at most */
			r->fw = share > 0.74 && share < 0.76		   ? FW_JAX
				: d->total - d->biggest <= (2300ull << 20) ? FW_TF
									   : FW_NONE;
			r->fraction = r->fw == FW_JAX ? 0.75 : 0;
			snprintf(r->mode_why, sizeof(r->mode_why),
				 "the allocation pattern: one allocation of %.0f%% of the device%s",
				 100 * share,
				 r->fw == FW_JAX  ? " (JAX's 75%)"
				 : r->fw == FW_TF ? " (TF's free memory less its reserve)"
						  : "");
		} else if (explain_doubling(d->regions, d->nregions)) {
			r->mode = MODE_BFC_GROWTH;
			snprintf(r->mode_why, sizeof(r->mode_why),
				 "the allocation pattern: regions doubling in size");
		} else if (caching_pattern(d)) {
			r->fw = FW_PYTORCH;
			r->mode = MODE_PT_CACHING;
			snprintf(
			    r->mode_why, sizeof(r->mode_why),
			    "the allocation pattern: cudaMalloc'd segments of 2 MiB and 20 MiB");
		} else if (d->async_peak && 2 * d->async_peak >= d->peak) {
			r->mode = MODE_ASYNC_POOL;
			snprintf(r->mode_why, sizeof(r->mode_why),
				 "the allocation pattern: stream-ordered allocations");
		} else {
			continue;
		}
		break;
	}
}

static enum ex_fw counters_fw(const char *source)
{
	return fw_of_row(fw_of_python(source));
}

/* The settings in force by whichever name (kept over a reset) */
static void settings_in_force(const struct ex_facts *f, struct ex_recog *r)
{
	fw_in_force_of(f->env, f->nenv, "PYTORCH_ALLOC_CONF", &r->alloc_conf);
	fw_in_force_of(f->env, f->nenv, "XLA_CLIENT_MEM_FRACTION", &r->mem_fraction);
}

void explain_recognize(const struct ex_facts *f, struct ex_recog *r)
{
	memset(r, 0, sizeof(*r));
	settings_in_force(f, r);
	/* TF loads XLA too: its own library decides */
	for (size_t i = 0; i < f->nmods; i++) {
		enum ex_fw w = lib_fw(f->mods[i].library);
		if (w == FW_NONE || (r->fw != FW_NONE && w != r->fw && w != FW_TF))
			continue;
		if (r->fw != w || fw_glob_any(gmt_frameworks[w].cuda_modules, f->mods[i].library))
			r->fw_module = f->mods[i].library; /* the telling one */
		r->fw = w;
	}
	if (r->fw == FW_NONE) /* no library names it: the framework's own counters do */
		for (size_t i = 0; i < f->ndevs && r->fw == FW_NONE; i++)
			r->fw = counters_fw(f->devs[i].counters.source);
	for (size_t i = 0; i < f->nooms && r->fw == FW_NONE; i++) /* or its own errors */
		r->fw = counters_fw(f->ooms[i].fw_source);
	const char *from_env = "";
	if (r->fw == FW_NONE && (r->fw = env_fw(f)) != FW_NONE)
		from_env = " (from the environment)";
	bool prealloc = false;
	for (size_t i = 0; i < f->ndevs; i++)
		prealloc |= f->devs[i].total && 2 * f->devs[i].biggest >= f->devs[i].total;
	const char *pw = prealloc ? ", and one allocation of half the device or more" : "";
	switch (r->fw) {
	case FW_PYTORCH:
		recog_pytorch(f, r);
		break;
	case FW_JAX:
	case FW_TF:
		recog_xla(f, r, pw);
		break;
	case FW_CUPY:
		r->mode = MODE_CUPY_POOL;
		snprintf(r->mode_why, sizeof(r->mode_why), "CuPy's memory pool (the default)");
		break;
	default:
		recog_pattern(f, r);
	}
	if (*from_env && !env_agrees(f, r)) { /* a setting exported in a shell, no more */
		memset(r, 0, sizeof(*r));
		settings_in_force(f, r);
		recog_pattern(f, r);
		from_env = "";
	}
	r->fw_name = r->fw == FW_NONE ? "no framework" : gmt_frameworks[r->fw].name;
	if (*from_env && !strchr(r->mode_why, '=')) /* a setting named already says so */
		snprintf(r->mode_why + strlen(r->mode_why),
			 sizeof(r->mode_why) - strlen(r->mode_why), "%s", from_env);
	static const char *const modes[] = {"direct driver calls",
					    "caching allocator",
					    "caching allocator with expandable segments",
					    "cudaMallocAsync (stream-ordered pool)",
					    "no caching",
					    "BFC, preallocated",
					    "BFC, growing (allow_growth)",
					    "platform allocator (one call per buffer)",
					    "CUDA's stream-ordered pool (cuda_malloc_async)",
					    "memory pool",
					    "stream-ordered pool"};
	r->mode_name = modes[r->mode];
	if (r->mode == MODE_TF_ASYNC && r->fw == FW_JAX)
		r->mode_name = "CUDA's stream-ordered pool (cuda_async)";
}

const char *explain_held_by(const struct ex_recog *r, char *buf, size_t size)
{
	const char *fw = r->fw == FW_NONE ? "the allocator" : r->fw_name;
	switch (r->mode) {
	case MODE_PT_CACHING:
	case MODE_PT_EXPANDABLE:
		snprintf(buf, size, "%s's caching allocator's segments", fw);
		break;
	case MODE_PT_ASYNC:
	case MODE_TF_ASYNC:
	case MODE_ASYNC_POOL:
		snprintf(buf, size, "%s's stream-ordered pool allocations", fw);
		break;
	case MODE_BFC_PREALLOC:
		snprintf(buf, size, "%s's preallocated pool", fw);
		break;
	case MODE_BFC_GROWTH:
		snprintf(buf, size, "%s's BFC regions", fw);
		break;
	case MODE_CUPY_POOL:
		snprintf(buf, size, "%s's memory pool", fw);
		break;
	default:
		return NULL;
	}
	return buf;
}

const char *explain_oom_next(const struct ex_recog *r, char *buf, size_t size)
{
	char es[400], ms[400];
	switch (r->mode) {
	case MODE_PT_CACHING:
		snprintf(
		    buf, size,
		    "next: PyTorch's cache may hold free space in pieces too small for this "
		    "request: `gpumemtrace fragmentation` shows its segments; %s grows segments "
		    "in place instead, %s stops large cached blocks from being split; else "
		    "lower the peak (a smaller batch)",
		    explain_conf_advice(r, "expandable_segments:True", es, sizeof(es)),
		    explain_conf_advice(r, "max_split_size_mb:N", ms, sizeof(ms)));
		break;
	case MODE_PT_EXPANDABLE:
		snprintf(buf, size,
			 "next: `gpumemtrace fragmentation` shows the cache's segments; %s stops "
			 "large cached blocks from being split; else lower the peak (a smaller "
			 "batch)",
			 explain_conf_advice(r, "max_split_size_mb:N", ms, sizeof(ms)));
		break;
	case MODE_CUPY_POOL:
	case MODE_BFC_GROWTH:
		snprintf(buf, size,
			 "next: `gpumemtrace fragmentation` shows what %s's pool holds; lower the "
			 "peak, or free the pool's unused blocks before the large request",
			 r->fw_name);
		break;
	default:
		return NULL;
	}
	return buf;
}

/* ---- building findings ---- */

const char *explain_severity_name(enum ex_severity s)
{
	return s == EX_PROBLEM ? "problem" : s == EX_EXPLAINS ? "explains" : "note";
}

/* Each finding's severity, by its id: what failed or is wrong, then what
 * explains the figures (the default, the comparisons too), then notes. */
static enum ex_severity severity_of(const char *id)
{
	static const char *const problems[] = {"leak", "oom-hidden", "partial-data"};
	static const char *const notes[] = {"warm-up", "growth-undetermined", "oom-invisible",
					    "nothing"};
	if (strncmp(id, "oom-", 4) == 0 && strcmp(id, "oom-retried") && strcmp(id, "oom-invisible"))
		return EX_PROBLEM; /* each case of a failed allocation */
	for (size_t i = 0; i < sizeof(problems) / sizeof(*problems); i++)
		if (strcmp(id, problems[i]) == 0)
			return EX_PROBLEM;
	for (size_t i = 0; i < sizeof(notes) / sizeof(*notes); i++)
		if (strcmp(id, notes[i]) == 0)
			return EX_NOTE;
	return EX_EXPLAINS;
}

struct ex_finding *ex_add(struct ex_findings *out, const char *id, int64_t device, uint64_t bytes)
{
	if (out->n == out->cap) {
		out->cap = out->cap ? 2 * out->cap : 8;
		out->v = xrealloc(out->v, out->cap * sizeof(*out->v));
	}
	struct ex_finding *x = &out->v[out->n++];
	memset(x, 0, sizeof(*x));
	x->id = id;
	x->severity = severity_of(id);
	x->device = device;
	x->bytes = bytes;
	return x;
}

void ex_answer(struct ex_finding *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->answer, sizeof(x->answer), fmt, ap);
	va_end(ap);
}

void ex_change(struct ex_finding *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->change, sizeof(x->change), fmt, ap);
	va_end(ap);
}

void ex_ev(struct ex_finding *x, const char *cmd, const char *fmt, ...)
{
	if (x->nev == EX_MAX_EVIDENCE)
		return;
	struct ex_evidence *e = &x->ev[x->nev++];
	snprintf(e->cmd, sizeof(e->cmd), "%s", cmd ? cmd : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
}

/* "accounting --device 0" when the trace has several devices. */
const char *ex_cmd(char *buf, size_t size, const char *name, const struct ex_facts *f,
		   const struct ex_dev *d)
{
	if (f->ndevs > 1)
		snprintf(buf, size, "%s --device %" PRId64, name, d->ordinal);
	else
		snprintf(buf, size, "%s", name);
	return buf;
}

const char *ex_counters_note(const char *what, char *buf, size_t size)
{
	snprintf(buf, size,
		 "run with `gpumemtrace run --framework-counters` to see %.180s (the "
		 "framework's own counters: driver calls do not show it)",
		 what);
	return buf;
}

static int by_severity(const void *a, const void *b)
{
	const struct ex_finding *x = a, *y = b;
	if (x->severity != y->severity)
		return x->severity < y->severity ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? 1 : -1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->id, y->id);
}

/* How to get the framework's counters, said whole once, in the first
 * finding that needs them; the later ones name only what they would add
 * (torch.oom-exhaust said it five times). */
static void word_counters_hints(struct ex_findings *out)
{
	bool said = false;
	for (size_t i = 0; i < out->n; i++)
		for (size_t k = 0; k < out->v[i].nev; k++) {
			struct ex_evidence *e = &out->v[i].ev[k];
			char what[200];
			if (!e->counters_hint)
				continue;
			snprintf(what, sizeof(what), "%.199s", e->text);
			if (said)
				snprintf(e->text, sizeof(e->text),
					 "the framework's counters (--framework-counters, above) "
					 "would also show %.180s",
					 what);
			else
				ex_counters_note(what, e->text, sizeof(e->text));
			e->counters_hint = false;
			said = true;
		}
}

void ex_sort(struct ex_findings *out)
{
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), by_severity);
	word_counters_hints(out);
}

void explain_findings_free(struct ex_findings *out)
{
	free(out->v);
	memset(out, 0, sizeof(*out));
}

/* ---- the findings of one trace ---- */

void explain_findings(const struct ex_facts *f, const struct ex_recog *r, struct ex_findings *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < f->ndevs; i++) {
		const struct ex_dev *d = &f->devs[i];
		ex_smi(f, r, d, out);
		ex_prealloc(f, r, d, out);
		ex_bfc_growth(f, r, d, out);
		ex_torch_cache(f, r, d, out);
		ex_pool_reserve(f, r, d, out);
		ex_growth(f, r, d, out);
	}
	ex_ooms(f, r, out);
	ex_partial(f, out);
	if (!out->n || (out->n == 1 && f->partial)) {
		struct ex_finding *x = ex_add(out, "nothing", -1, 0);
		ex_answer(x, "nothing to explain: no device memory was traced");
		ex_ev(x, "summary", "%zu device%s in the trace", f->ndevs,
		      f->ndevs == 1 ? "" : "s");
	}
	ex_sort(out);
}
