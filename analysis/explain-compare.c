/* explain A B (explain.h): why one run needed more than the other, from
 * the differences of the GPU, the driver (and so the context), the
 * allocator environment, the libraries and the sites that grew. Evidence
 * commands here take both traces: `gpumemtrace diff A B`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/explain-int.h"

#define CTX_SLACK (16ull << 20) /* contexts wander by a few MiB between runs */

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static const char *signed_size(char *buf, uint64_t a, uint64_t b)
{
	char s[32];
	snprintf(buf, 40, "%s%s", b >= a ? "+" : "-", fmt_size(s, absdiff(a, b)));
	return buf;
}

static uint64_t smi_or_peak(const struct ex_dev *d)
{
	return d->smi ? d->smi_bytes : d->peak;
}

static void cmp_peak(const struct ex_dev *a, const struct ex_dev *b, struct ex_findings *out)
{
	char s[6][40];
	struct ex_finding *x =
	    ex_add(out, "compare-peak", b->ordinal, absdiff(smi_or_peak(a), smi_or_peak(b)));
	if (smi_or_peak(a) == smi_or_peak(b) && a->peak == b->peak)
		ex_answer(x, "A and B needed the same: traced peak %s%s%s", fmt_size(s[1], b->peak),
			  a->smi && b->smi ? ", nvidia-smi " : "",
			  a->smi && b->smi ? fmt_size(s[3], b->smi_bytes) : "");
	else
		ex_answer(x, "B needed %s %s than A: traced peak %s against %s%s%s%s%s",
			  fmt_size(s[0], absdiff(smi_or_peak(a), smi_or_peak(b))),
			  smi_or_peak(b) >= smi_or_peak(a) ? "more" : "less",
			  fmt_size(s[1], b->peak), fmt_size(s[2], a->peak),
			  a->smi && b->smi ? ", nvidia-smi " : "",
			  a->smi && b->smi ? fmt_size(s[3], b->smi_bytes) : "",
			  a->smi && b->smi ? " against " : "",
			  a->smi && b->smi ? fmt_size(s[4], a->smi_bytes) : "");
	ex_ev(x, "diff", "traced peak: A %s, B %s (%s)", fmt_size(s[0], a->peak),
	      fmt_size(s[1], b->peak), signed_size(s[2], a->peak, b->peak));
	if (a->smi && b->smi)
		ex_ev(x, "diff", "nvidia-smi: A %s, B %s (%s)", fmt_size(s[0], a->smi_bytes),
		      fmt_size(s[1], b->smi_bytes), signed_size(s[2], a->smi_bytes, b->smi_bytes));
	if (smi_or_peak(a) == smi_or_peak(b) && a->peak == b->peak)
		ex_change(x, "The findings below say how the runs differ; none of it changed "
			     "the peak.");
	else
		ex_change(x, "The findings below name the differences that account for it.");
}

/* compare-peak with no other finding: say so, instead of pointing to
 * findings that are not there. */
static void peak_alone(struct ex_finding *x, const struct ex_dev *a, const struct ex_dev *b)
{
	if (smi_or_peak(a) == smi_or_peak(b) && a->peak == b->peak)
		ex_change(x, "Nothing to explain: the settings, GPU, driver and libraries are the "
			     "same, and so are the peaks.");
	else
		ex_change(x, "The GPU, driver, allocator settings and libraries are the same, and "
			     "no library's share moved by 1 MiB or more at the peak: `gpumemtrace "
			     "diff A B` lists the sites that grew, with their stacks.");
}

static void cmp_gpu(const struct ex_dev *a, const struct ex_recog *ra, const struct ex_dev *b,
		    const struct ex_recog *rb, struct ex_findings *out)
{
	if (a->total == b->total && strcmp(a->name, b->name) == 0)
		return;
	char s[6][40];
	bool pre = ra->mode == MODE_BFC_PREALLOC || rb->mode == MODE_BFC_PREALLOC;
	struct ex_finding *x =
	    ex_add(out, "compare-gpu", b->ordinal, pre ? absdiff(a->biggest, b->biggest) : 0);
	ex_answer(x, "the GPUs differ: A has %s (%s), B %s (%s)%s", fmt_size(s[0], a->total),
		  *a->name ? a->name : "?", fmt_size(s[1], b->total), *b->name ? b->name : "?",
		  pre ? ": a preallocation is a fraction of the device, so the bigger GPU "
			"takes more"
		      : "");
	ex_ev(x, "summary", "device memory: A %s, B %s", fmt_size(s[0], a->total),
	      fmt_size(s[1], b->total));
	if (pre)
		ex_ev(x, "growth", "largest allocation: A %s, B %s", fmt_size(s[0], a->biggest),
		      fmt_size(s[1], b->biggest));
	ex_change(
	    x, "%s",
	    pre ? "Compare what the program uses, not what was preallocated: set "
		  "XLA_PYTHON_CLIENT_PREALLOCATE=false (JAX) or TF_FORCE_GPU_ALLOW_GROWTH=true "
		  "(TF) on both, or the same XLA_CLIENT_MEM_FRACTION."
		: "A different GPU brings a different context size and, with cuDNN and "
		  "cuBLAS, other algorithms and workspaces: compare on the same model.");
}

static void cmp_driver(const struct ex_dev *a, const struct ex_dev *b, struct ex_findings *out)
{
	if (a->driver_version == b->driver_version &&
	    absdiff(a->contexts, b->contexts) <= CTX_SLACK)
		return;
	char s[4][40];
	struct ex_finding *x =
	    ex_add(out, "compare-driver", b->ordinal, absdiff(a->contexts, b->contexts));
	if (!a->contexts && !b->contexts)
		ex_answer(x,
			  "the drivers differ (CUDA %d.%d against %d.%d): a context's size "
			  "follows the driver (neither trace measured its context)",
			  a->driver_version / 1000, a->driver_version % 1000 / 10,
			  b->driver_version / 1000, b->driver_version % 1000 / 10);
	else
		ex_answer(x, "the CUDA contexts differ by %s (A %s, B %s)%s",
			  fmt_size(s[0], absdiff(a->contexts, b->contexts)),
			  fmt_size(s[1], a->contexts), fmt_size(s[2], b->contexts),
			  a->driver_version != b->driver_version ? ": the drivers differ" : "");
	ex_ev(x, "accounting", "driver's CUDA version: A %d.%d, B %d.%d", a->driver_version / 1000,
	      a->driver_version % 1000 / 10, b->driver_version / 1000,
	      b->driver_version % 1000 / 10);
	ex_change(x, "A context's size follows the driver, the GPU and CUDA_MODULE_LOADING (EAGER "
		     "loads every kernel at start-up): use the same on both to compare.");
}

/* A variable that says which process of a job this is (the framework
 * table's rows of no framework that change no memory). */
static bool job_key(const char *k)
{
	for (size_t i = 0; i < gmt_fw_nenv; i++)
		if (gmt_fw_env[i].fw == GMT_FW_NONE && !gmt_fw_env[i].what &&
		    strcmp(gmt_fw_env[i].name, k) == 0)
			return true;
	return false;
}

/* A setting one run set by a name its framework ignored. */
static void env_ignored(const char *side, const struct ex_recog *r, struct ex_finding *x)
{
	const struct fw_in_force *c[] = {&r->alloc_conf, &r->mem_fraction};
	for (size_t i = 0; i < 2; i++)
		if (c[i]->ignored)
			ex_ev(x, "diff", "%s: %s=%s is %s while %s is set", side, c[i]->ignored,
			      c[i]->ignored_value, c[i]->conflict ? "an error" : "ignored",
			      c[i]->name);
}

/* Keys set in one trace and unset or different in the other, once each. */
static size_t env_diff(const struct ex_facts *a, const struct ex_facts *b, struct ex_finding *x)
{
	size_t n = 0;
	for (int pass = 0; pass < 2; pass++) {
		const struct ex_facts *p = pass ? b : a, *q = pass ? a : b;
		for (size_t i = 0; i < p->nenv; i++) {
			const char *k = p->env[i].key, *v = p->env[i].value;
			const char *w = explain_env(q, k);
			if (job_key(k) || (w && strcmp(v, w) == 0) || (pass && w))
				continue;
			const char *va = pass ? w : v, *vb = pass ? v : w;
			ex_ev(x, "diff", "%s: A %s, B %s", k, va ? va : "unset", vb ? vb : "unset");
			n++;
		}
	}
	return n;
}

static void cmp_env(const struct ex_facts *a, const struct ex_recog *ra, const struct ex_facts *b,
		    const struct ex_recog *rb, struct ex_findings *out)
{
	struct ex_finding x;
	memset(&x, 0, sizeof(x));
	size_t n = env_diff(a, b, &x);
	env_ignored("A", ra, &x);
	env_ignored("B", rb, &x);
	if (!n && ra->mode == rb->mode)
		return;
	const struct ex_dev *da = &a->devs[0], *db = &b->devs[0];
	struct ex_finding *y =
	    ex_add(out, "compare-env", db->ordinal, absdiff(smi_or_peak(da), smi_or_peak(db)));
	memcpy(y->ev, x.ev, sizeof(x.ev));
	y->nev = x.nev;
	if (ra->mode != rb->mode)
		ex_answer(y, "the allocators differ: A %s (%s), B %s (%s)", ra->mode_name,
			  ra->mode_why, rb->mode_name, rb->mode_why);
	else
		ex_answer(y, "the allocator's environment differs in %zu setting%s", n,
			  n == 1 ? "" : "s");
	ex_change(y, "Run both with the same settings to compare the programs; the single-trace "
		     "findings (`gpumemtrace explain A`, `explain B`) say what each setting does.");
}

/* The traced programs of both runs, when their builds differ (another
 * name or build id): one line, not each "only in" one run. */
static size_t programs_differ(const struct ex_facts *a, const struct ex_facts *b,
			      struct ex_finding *x)
{
	const struct ex_module *pa = NULL, *pb = NULL;
	for (size_t i = 0; i < a->nmods; i++)
		pa = a->mods[i].program ? &a->mods[i] : pa;
	for (size_t i = 0; i < b->nmods; i++)
		pb = b->mods[i].program ? &b->mods[i] : pb;
	if (!pa || !pb)
		return 0;
	if (strcmp(pa->library, pb->library) != 0)
		ex_ev(x, "diff", "the program: %s in A, %s in B", pa->library, pb->library);
	else if (*pa->build_id && *pb->build_id && strcmp(pa->build_id, pb->build_id) != 0)
		ex_ev(x, "diff", "the program %s: another build (build id %.12s against %.12s)",
		      pa->library, pa->build_id, pb->build_id);
	else
		return 0;
	return 1;
}

/* Not a library the program chose: the tracer itself (another build of it
 * changes no memory of the program's), or the program (programs_differ). */
static bool lib_skipped(const struct ex_module *m)
{
	return m->program || fw_of_library(m->library) == GMT_FW_TRACER;
}

static void cmp_libs(const struct ex_facts *a, const struct ex_facts *b, struct ex_findings *out)
{
	struct ex_finding x;
	memset(&x, 0, sizeof(x));
	size_t n = programs_differ(a, b, &x);
	for (int pass = 0; pass < 2; pass++) {
		const struct ex_facts *p = pass ? b : a, *q = pass ? a : b;
		for (size_t i = 0; i < p->nmods; i++) {
			const struct ex_module *m = &p->mods[i], *o = NULL;
			if (lib_skipped(m))
				continue;
			for (size_t k = 0; k < q->nmods && !o; k++)
				if (strcmp(q->mods[k].library, m->library) == 0)
					o = &q->mods[k];
			if (!o) {
				n++;
				ex_ev(&x, "diff", "%s: only in %s", m->library, pass ? "B" : "A");
			} else if (!pass && *m->build_id && *o->build_id &&
				   strcmp(m->build_id, o->build_id) != 0) {
				n++;
				ex_ev(&x, "diff",
				      "%s: another build (build id %.12s against %.12s)",
				      m->library, m->build_id, o->build_id);
			}
		}
	}
	if (!n)
		return;
	struct ex_finding *y = ex_add(out, "compare-libs", -1, 0);
	memcpy(y->ev, x.ev, sizeof(x.ev));
	y->nev = x.nev;
	ex_answer(y, "%zu loaded librar%s differ%s between the runs (version or presence)", n,
		  n == 1 ? "y" : "ies", n == 1 ? "s" : "");
	ex_change(y, "Other versions of a framework, cuDNN, cuBLAS or NCCL choose other "
		     "algorithms, workspaces and buffers: pin them to compare.");
}

/* One library in two runs: by name, or each run's own program (the same
 * code built shared or static, or renamed, is still "the program"). */
static bool same_lib(const char *la, const struct ex_facts *fa, const char *lb,
		     const struct ex_facts *fb)
{
	return strcmp(la, lb) == 0 || (fa->program && fb->program && strcmp(la, fa->program) == 0 &&
				       strcmp(lb, fb->program) == 0);
}

static const char *lib_name(const char *lib, const struct ex_facts *fa, const struct ex_facts *fb,
			    char *buf, size_t size)
{
	if (!fa->program || !fb->program || strcmp(fa->program, fb->program) == 0 ||
	    (strcmp(lib, fa->program) != 0 && strcmp(lib, fb->program) != 0))
		return lib;
	snprintf(buf, size, "the program (%s in A, %s in B)", fa->program, fb->program);
	return buf;
}

static void cmp_sites(const struct ex_facts *fa, const struct ex_facts *fb, struct ex_findings *out)
{
	const struct ex_dev *a = &fa->devs[0], *b = &fb->devs[0];
	struct ex_finding x;
	memset(&x, 0, sizeof(x));
	uint64_t top = 0;
	char s[3][40], nm[200];
	for (int pass = 0; pass < 2; pass++) {
		const struct ex_dev *p = pass ? b : a, *q = pass ? a : b;
		const struct ex_facts *fp = pass ? fb : fa, *fq = pass ? fa : fb;
		for (size_t i = 0; i < p->nlibs; i++) {
			uint64_t w = 0;
			bool seen = false;
			for (size_t k = 0; k < q->nlibs; k++)
				if (same_lib(q->libs[k].library, fq, p->libs[i].library, fp)) {
					w = q->libs[k].bytes;
					seen = true;
				}
			if ((pass && seen) || absdiff(w, p->libs[i].bytes) < (1u << 20))
				continue;
			uint64_t va = pass ? w : p->libs[i].bytes, vb = pass ? p->libs[i].bytes : w;
			ex_ev(&x, "diff", "%s: A %s, B %s (%s)",
			      lib_name(p->libs[i].library, fa, fb, nm, sizeof(nm)),
			      fmt_size(s[0], va), fmt_size(s[1], vb), signed_size(s[2], va, vb));
			if (absdiff(va, vb) > top)
				top = absdiff(va, vb);
		}
	}
	if (!x.nev)
		return;
	struct ex_finding *y = ex_add(out, "compare-sites", b->ordinal, top);
	memcpy(y->ev, x.ev, sizeof(x.ev));
	y->nev = x.nev;
	ex_answer(y, "%zu librar%s held different amounts (up to %s apart)", x.nev,
		  x.nev == 1 ? "y" : "ies", fmt_size(s[0], top));
	ex_change(y, "`gpumemtrace diff A B` lists the sites that grew, with their stacks.");
}

void explain_compare(const struct ex_facts *a, const struct ex_recog *ra, const struct ex_facts *b,
		     const struct ex_recog *rb, struct ex_findings *out)
{
	memset(out, 0, sizeof(*out));
	if (a->ndevs && b->ndevs) {
		const struct ex_dev *da = &a->devs[0], *db = &b->devs[0];
		cmp_peak(da, db, out);
		cmp_gpu(da, ra, db, rb, out);
		cmp_driver(da, db, out);
		cmp_env(a, ra, b, rb, out);
		cmp_sites(a, b, out);
	}
	cmp_libs(a, b, out);
	if (a->ndevs && b->ndevs && out->n == 1) /* the peak alone: nothing found to name */
		peak_alone(&out->v[0], &a->devs[0], &b->devs[0]);
	/* the headline first, then its reasons largest first */
	struct ex_findings rest = {out->v + 1, out->n ? out->n - 1 : 0, 0};
	if (a->ndevs && b->ndevs)
		ex_sort(&rest);
	else
		ex_sort(out);
}
