/* explain's adapter (explain.h): the other aggregators' results and one
 * replay of its own, read into struct ex_facts. When accounting, growth or
 * oom change their APIs, only this file changes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/events.h"
#include "analysis/accounting.h"
#include "analysis/counters.h"
#include "analysis/explain.h"
#include "analysis/fwgrowth.h"
#include "analysis/fwhist.h"
#include "analysis/growth.h"
#include "analysis/oom.h"
#include "analysis/report-base.h"

#define RETRY_WINDOW 5000000000ull /* a retry comes within 5 s of its failure */
#define MAX_PENDING  16
#define REGION_MIN   (1ull << 20)
#define SEG_SMALL    (2ull << 20)
#define SEG_MID	     (20ull << 20)

static struct ex_dev *fdev(struct ex_facts *f, int64_t ordinal)
{
	for (size_t i = 0; i < f->ndevs; i++)
		if (f->devs[i].ordinal == ordinal)
			return &f->devs[i];
	return NULL;
}

/* ---- accounting ---- */

static void from_moment(struct ex_dev *d, const struct acct_moment *m, bool at_peak)
{
	d->smi = true;
	d->smi_at_peak = at_peak;
	d->smi_process = m->nvml_process;
	d->smi_bytes = m->smi;
	d->smi_traced = m->traced;
	d->smi_async = m->async;
	d->contexts = m->contexts;
	d->unexplained = m->unexplained;
}

static int from_accounting(struct trace *t, bool has_device, int64_t device, struct ex_facts *f)
{
	struct acct a;
	int x = acct_compute(&a, t);
	for (size_t i = 0; i < a.ndevs; i++) {
		const struct acct_dev *ad = &a.devs[i];
		if (has_device && ad->ordinal != device)
			continue;
		f->devs = xrealloc(f->devs, (f->ndevs + 1) * sizeof(*f->devs));
		struct ex_dev *d = &f->devs[f->ndevs++];
		memset(d, 0, sizeof(*d));
		d->ordinal = ad->ordinal;
		const struct trace_device *td = trace_device(t, ad->ordinal);
		d->name = td && td->name ? td->name : "";
		d->total = ad->total;
		d->driver_version = td ? td->driver_version : 0;
		d->peak = ad->peak.traced;
		d->peak_ns = ad->peak.have ? (uint64_t)trace_rel(t, ad->peak.time_ns) : 0;
		d->peak_until_ns = ad->peak.have && ad->peak.until_ns
				       ? (uint64_t)trace_rel(t, ad->peak.until_ns)
				       : 0;
		d->end = ad->end.traced;
		d->async_peak = ad->peak.async;
		d->async_end = ad->end.async;
		d->vmm_peak = ad->peak.vmm;
		/* nvidia-smi at the peak when sampled then, else at the end; the
		 * libraries at the same moment */
		const struct acct_moment *m = &ad->peak;
		if (ad->peak.nvml && !ad->peak.unsampled)
			from_moment(d, &ad->peak, true);
		else if (ad->end.nvml)
			from_moment(d, m = &ad->end, false);
		if (ad->end.nvml) {
			d->smi_end = true;
			d->end_smi_bytes = ad->end.smi;
			d->end_smi_traced = ad->end.traced;
			d->end_smi_async = ad->end.async;
			d->end_contexts = ad->end.contexts;
			d->end_unexplained = ad->end.unexplained;
		}
		for (size_t k = 0; k < m->nlibs && d->nlibs < EX_MAX_LIBS; k++)
			d->libs[d->nlibs++] = (struct ex_lib){m->libs[k].library, m->libs[k].bytes};
		if (ad->nroutes) {
			d->route_key = ad->routes[0].key;
			d->route_text = ad->routes[0].text; /* static strings */
		}
		d->verdict = "undetermined";
	}
	acct_free(&a);
	return x;
}

/* ---- growth ---- */

static void from_growth_dev(struct trace *t, const struct growth_result *g,
			    const struct growth_dev *gd, struct ex_dev *d)
{
	d->verdict = growth_kind_name(gd->v.kind);
	growth_reason(g, gd, d->verdict_reason, sizeof(d->verdict_reason));
	d->iterations = growth_iterations(g);
	if (gd->v.steps)
		d->warmup_end_ns = (uint64_t)trace_rel(t, growth_x_time(g, gd->v.last_rise));
	if (gd->v.kind != GV_LEAK)
		return;
	d->has_rate_step = growth_rate_per_step(g, gd, &d->rate_step);
	d->rate_s = growth_rate_per_s(g, gd);
	/* the site rules pick the first frame of the user's code */
	rb_site(t, gd->site_stack, d->leak_site, sizeof(d->leak_site));
}

/* PyTorch's own history (run --framework-history) says what the tensors
 * keep per iteration, which the cache's segments only approximate (a 1 MiB
 * leak read as 1.43 MiB, at the op that grew the cache): where it gives a
 * verdict, that verdict, its rate and the line that keeps the tensors are
 * the device's (growth prints both). */
static void from_tensors_dev(struct trace *t, const struct fwg_result *fw, const struct fwg_dev *fd,
			     struct ex_dev *d)
{
	const struct growth_verdict *v = &fd->v;
	if (v->kind != GV_LEAK && v->kind != GV_NO_LEAK)
		return;
	char b[3][32], driver[200];
	snprintf(driver, sizeof(driver), "%s", d->verdict ? d->verdict : "none");
	d->verdict = growth_kind_name(v->kind);
	d->iterations = fw->ntimes > 1 ? fw->ntimes - 1 : 0;
	if (v->kind != GV_LEAK) {
		snprintf(d->verdict_reason, sizeof(d->verdict_reason),
			 "PyTorch's own history: its tensors keep nothing more from one of %" PRIu64
			 " iterations to the next (the driver's view of its cache: %s)",
			 d->iterations, driver);
		d->leak_site[0] = '\0';
		return;
	}
	double rate = v->rate > 0 ? v->rate : 0;
	snprintf(d->verdict_reason, sizeof(d->verdict_reason),
		 "PyTorch's own history: its tensors keep +%s per iteration (%s to %s over %" PRIu64
		 " iterations); the driver's view of its cache, in segments: %s",
		 fmt_size(b[0], (uint64_t)rate), fmt_size(b[1], v->from_level),
		 fmt_size(b[2], v->to_level), d->iterations, driver);
	d->has_rate_step = true;
	d->rate_step = rate;
	double span = fw->ntimes > 1 ? (double)(fw->times[fw->ntimes - 1] - fw->times[0]) / 1e9 : 0;
	d->rate_s = span > 0 ? rate * (double)d->iterations / span : 0;
	d->leak_site[0] = '\0';
	if (fd->nsites)
		rb_site(t, fd->sites[0].stack_id, d->leak_site, sizeof(d->leak_site));
}

static int from_growth(struct trace *t, bool has_device, int64_t device, struct ex_facts *f)
{
	struct growth_params p = {.has_device = has_device, .device = device, .ncols = 60};
	struct growth_result g;
	struct fwg_result fw = {0};
	int x = growth_compute(t, &p, &g);
	if (x < 0 && fwhist_present(t))
		x = fwg_compute(t, &g, &fw);
	for (size_t i = 0; i < g.ndevs; i++) {
		struct ex_dev *d = fdev(f, g.devs[i].ordinal);
		if (d)
			from_growth_dev(t, &g, &g.devs[i], d);
	}
	for (size_t i = 0; fw.ntimes >= 3 && i < fw.ndevs; i++) {
		struct ex_dev *d = fdev(f, fw.devs[i].device);
		if (d)
			from_tensors_dev(t, &fw, &fw.devs[i], d);
	}
	fwg_free(&fw);
	growth_result_free(&g);
	return x;
}

/* ---- the explain pass: the framework's regions, its segments at each
 * device's peak, the largest allocation, and OOMs retried after frees ---- */

struct stack_class {
	UT_hash_handle hh;
	uint64_t stack_id;
	bool fw;
	const char *lib;
};

struct pending {
	uint64_t index, tid, size, time_ns, freed;
	int64_t device;
};

struct xpass {
	struct trace *t;
	struct ex_facts *f;
	struct replay rp;
	struct stack_class *classes;
	uint64_t *seg_now; /* per ex_dev: small, mid, large, bytes */
	struct pending pend[MAX_PENDING];
	size_t npend;
	uint64_t recovered[OOM_MAX], recovered_freed[OOM_MAX], recovered_ns[OOM_MAX];
	size_t nrecovered;
};

static const struct stack_class *classify(struct xpass *p, uint64_t stack_id)
{
	struct stack_class *c;
	HASH_FIND(hh, p->classes, &stack_id, sizeof(stack_id), c);
	if (c)
		return c;
	c = xrealloc(NULL, sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->stack_id = stack_id;
	c->lib = trace_library(p->t, stack_id);
	/* the allocator's own allocations: the framework's, or the program's
	 * when no framework's library allocates (an emulator, plain CUDA) */
	const char *k = explain_lib_class(c->lib);
	c->fw = strcmp(k, "framework") == 0 || strcmp(k, "other") == 0;
	HASH_ADD(hh, p->classes, stack_id, sizeof(c->stack_id), c);
	return c;
}

static void on_change(void *ctx, const struct rp_live *l, bool counted)
{
	struct xpass *p = ctx;
	if (l->bucket != BK_DEVICE)
		return;
	if (!counted)
		for (size_t i = 0; i < p->npend; i++)
			if (p->pend[i].device == l->device)
				p->pend[i].freed += l->size;
	struct ex_dev *d = fdev(p->f, l->device);
	if (!d || !classify(p, l->stack_id)->fw)
		return;
	d->fw_frees += !counted;
	uint64_t *s = &p->seg_now[4 * (size_t)(d - p->f->devs)];
	int k = l->size == SEG_SMALL ? 0 : l->size == SEG_MID ? 1 : 2;
	s[k] = counted ? s[k] + 1 : s[k] - 1;
	s[3] = counted ? s[3] + l->size : s[3] - l->size;
}

static void on_alloc(struct xpass *p, const struct gmt_event *e, struct ex_dev *d, int kind)
{
	const struct stack_class *c = classify(p, e->stack_id);
	if (e->size > d->biggest) {
		d->biggest = e->size;
		d->biggest_ns = (uint64_t)trace_rel(p->t, e->time_ns);
		d->biggest_lib = c->lib;
	}
	if (c->fw) {
		d->fw_allocs++;
		d->fw_vmm += kind == GMT_KIND_VMM_PHYS;
		if (e->size >= REGION_MIN && d->nregions < EX_MAX_REGIONS)
			d->regions[d->nregions++] = e->size;
	}
	for (size_t i = 0; i < p->npend; i++) {
		struct pending *q = &p->pend[i];
		if (q->tid != e->tid || q->size != e->size)
			continue;
		if (q->freed && p->nrecovered < OOM_MAX) {
			p->recovered[p->nrecovered] = q->index;
			p->recovered_freed[p->nrecovered] = q->freed;
			p->recovered_ns[p->nrecovered++] = e->time_ns - q->time_ns;
		}
		p->pend[i] = p->pend[--p->npend];
		break;
	}
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct xpass *p = ctx;
	replay_apply(&p->rp, e);
	for (size_t i = 0; i < p->npend;) /* forget failures never retried */
		if (e->time_ns - p->pend[i].time_ns > RETRY_WINDOW)
			p->pend[i] = p->pend[--p->npend];
		else
			i++;
	const struct api_info *a = api_lookup(e->api);
	if (!a || a->op != GMT_OP_ALLOC)
		return;
	struct ex_dev *d = fdev(p->f, e->device);
	if (gmt_failed(e->result, e->flags)) {
		for (size_t i = 0; i < p->npend; i++) /* the retry failed too */
			if (p->pend[i].tid == e->tid && p->pend[i].size == e->size) {
				p->pend[i] = p->pend[--p->npend];
				break;
			}
		if (gmt_out_of_memory(e->result) && p->npend < MAX_PENDING)
			p->pend[p->npend++] =
			    (struct pending){e->index, e->tid, e->size, e->time_ns, 0, e->device};
		return;
	}
	if (!d || replay_kind_bucket(a->kind, e->aux) != BK_DEVICE)
		return;
	on_alloc(p, e, d, a->kind);
	struct rp_dev *rd = replay_dev(&p->rp, e->device);
	if (rd->lv.peak_seq == p->rp.seq) { /* a new peak: the segments now */
		const uint64_t *s = &p->seg_now[4 * (size_t)(d - p->f->devs)];
		d->seg_small = s[0];
		d->seg_mid = s[1];
		d->seg_large = s[2];
		d->seg_bytes = s[3];
	}
}

/* ---- oom ---- */

/* The framework's error behind a failure, for the findings. */
static void fw_facts(struct ex_oom *xo, const struct oom_failure *o)
{
	const struct fwoom *w = o->fw;
	xo->fw = true;
	xo->fw_only = o->fw_only;
	xo->raised = w->raised != NULL;
	xo->caught = o->caught;
	xo->fw_name = fwoom_fw_name(w);
	xo->fw_source = w->source;
	snprintf(xo->fw_type, sizeof(xo->fw_type), "%s", w->type);
	const char *m = w->raised ? w->raised->message : "";
	int n = (int)strcspn(m, "\n");
	snprintf(xo->fw_message, sizeof(xo->fw_message), "%.*s%s", n < 200 ? n : 200, m,
		 n > 200 ? "..." : "");
	if (w->limit.bytes.known || o->kase == OOM_LIMIT) {
		xo->limit_knob = w->limit.knob;
		snprintf(xo->limit_what, sizeof(xo->limit_what), "%s", w->limit.what);
	}
	if (o->fw_only)
		xo->api = xo->fw_name;
}

static int from_oom(struct trace *t, struct ex_facts *f, const struct xpass *p)
{
	struct oom_result r;
	int x = oom_compute(t, &r);
	f->ooms_total = r.ooms_total;
	for (size_t i = 0; i < r.nblind && f->nblind < 4; i++)
		snprintf(f->blind[f->nblind++], sizeof(f->blind[0]), "%s", r.blind[i].text);
	snprintf(f->ending, sizeof(f->ending), "%s", r.ending);
	f->abnormal = r.end == OOM_END_STATUS || r.end == OOM_END_NO_TRAILER;
	f->hidden = r.hidden;
	f->pool_fw = r.pool_fw;
	snprintf(f->hidden_text, sizeof(f->hidden_text), "%s", r.hidden_text);
	bool fatal_seen = false;
	for (size_t i = 0; i < r.nfails; i++) {
		const struct oom_failure *o = &r.fails[i];
		if (o->kase == OOM_NOT_AN_OOM || !oom_final(o)) /* an error: its last attempt */
			continue;
		uint64_t retry_ns =
		    o->next.time_ns > o->e.time_ns ? o->next.time_ns - o->e.time_ns : 0;
		if (o->kase == OOM_RECOVERED) {
			f->retried++;
			f->retry_ns += retry_ns;
		}
		if (f->nooms >= EX_MAX_OOMS || !fdev(f, o->e.device))
			continue;
		struct ex_oom *xo = &f->ooms[f->nooms++];
		memset(xo, 0, sizeof(*xo));
		xo->device = o->e.device;
		xo->time_ns = (uint64_t)trace_rel(t, o->e.time_ns);
		xo->size = o->e.size;
		xo->api = api_name(o->e.api);
		xo->kase = oom_case_name[o->kase];
		xo->meminfo = o->free_known && o->total_known;
		xo->free_bytes = o->free_bytes;
		xo->total_bytes = o->total;
		xo->held = o->held;
		xo->others = o->others;
		xo->freed = o->next.freed;
		xo->retry_ns = retry_ns;
		xo->attempts = o->attempts;
		xo->first_ns = (uint64_t)trace_rel(t, o->first_ns);
		rb_site(t, o->e.stack_id, xo->site, sizeof(xo->site));
		snprintf(xo->why, sizeof(xo->why), "%s", o->why);
		xo->fatal = !fatal_seen && o->kase != OOM_RECOVERED && !o->caught;
		fatal_seen |= xo->fatal;
		if (o->fw)
			fw_facts(xo, o);
	}
	oom_free(&r);
	(void)p;
	return x;
}

/* ---- the framework's counters ---- */

static void from_series(struct trace *t, const struct counters_series *s, struct ex_dev *d)
{
	struct ex_counters *c = &d->counters;
	uint64_t start = t->hdr.start_mono_ns;
	const struct counters_point *p = NULL;
	for (size_t i = 0; i < s->n; i++) { /* a reading in the peak's plateau */
		const struct counters_point *q = &s->pts[i];
		uint64_t rel = (uint64_t)trace_rel(t, q->time_ns);
		if (rel < d->peak_ns || (d->peak_until_ns && rel > d->peak_until_ns))
			continue;
		if (!p || q->reserved > p->reserved ||
		    (q->reserved == p->reserved && q->allocated > p->allocated))
			p = q;
	}
	if (!p)
		p = counters_at(s, start + d->peak_ns);
	const struct counters_point *e = &s->pts[s->n - 1];
	*c = (struct ex_counters){.present = true,
				  .source = s->source,
				  .api = s->api,
				  .has = s->has,
				  .peak_ns = (uint64_t)trace_rel(t, p->time_ns),
				  .end_ns = (uint64_t)trace_rel(t, e->time_ns),
				  .allocated = p->allocated,
				  .reserved = p->reserved,
				  .inactive_split = p->inactive_split,
				  .end_allocated = e->allocated,
				  .end_reserved = e->reserved,
				  .end_inactive_split = e->inactive_split,
				  .peak_allocated = s->peak_allocated,
				  .peak_reserved = s->peak_reserved,
				  .limit = e->limit,
				  .alloc_retries = s->alloc_retries,
				  .ooms = s->ooms,
				  .readings = s->n};
}

/* The OOM observer's reading at a failure: the first within RETRY_WINDOW
 * after it (the framework raises once its own retry failed too). */
static const struct counters_point *oom_reading(const struct counters_series *s, uint64_t at)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->pts[i].reason == GMT_COUNTERS_WHY_OOM && s->pts[i].time_ns >= at &&
		    s->pts[i].time_ns - at <= RETRY_WINDOW)
			return &s->pts[i];
	return NULL;
}

static bool near_failure(const struct ex_facts *f, int64_t device, uint64_t rel)
{
	for (size_t i = 0; i < f->nooms; i++)
		if (f->ooms[i].device == device && strcmp(f->ooms[i].kase, "recovered-by-retry") &&
		    f->ooms[i].time_ns <= rel && rel - f->ooms[i].time_ns <= RETRY_WINDOW)
			return true;
	return false;
}

static void from_counters(struct trace *t, struct ex_facts *f)
{
	struct counters_set set;
	counters_load(t, &set);
	for (size_t i = 0; i < f->ndevs; i++) {
		const struct counters_series *s = counters_for_device(&set, f->devs[i].ordinal);
		if (!s || !s->n)
			continue;
		from_series(t, s, &f->devs[i]);
		/* PyTorch counts the retry before each OOM it raises too: the
		 * recovered ones are the rest */
		if (s->alloc_retries > s->ooms)
			f->counter_retries += s->alloc_retries - s->ooms;
		/* the FWOOM records list those errors themselves (from_oom) */
		for (size_t k = 0; k < s->n && !t->nfwooms; k++)
			if (s->pts[k].reason == GMT_COUNTERS_WHY_OOM &&
			    !near_failure(f, s->device, (uint64_t)trace_rel(t, s->pts[k].time_ns)))
				f->ooms_unseen++;
	}
	for (size_t i = 0; i < f->nooms; i++) {
		struct ex_oom *o = &f->ooms[i];
		const struct counters_point *p =
		    strcmp(o->kase, "recovered-by-retry")
			? oom_reading(counters_for_device(&set, o->device),
				      t->hdr.start_mono_ns + o->time_ns)
			: NULL;
		if (!p || !(p->has & CNT_ALLOCATED))
			continue;
		o->counters = true;
		o->c_allocated = p->allocated;
		o->c_reserved = p->reserved;
		o->c_inactive_split = p->inactive_split;
	}
	counters_free(&set);
}

static int explain_pass(struct trace *t, struct ex_facts *f, struct xpass *p)
{
	memset(p, 0, sizeof(*p));
	p->t = t;
	p->f = f;
	p->seg_now = xrealloc(NULL, (f->ndevs + 1) * 4 * sizeof(uint64_t));
	memset(p->seg_now, 0, (f->ndevs + 1) * 4 * sizeof(uint64_t));
	replay_init(&p->rp);
	p->rp.on_change = on_change;
	p->rp.on_change_ctx = p;
	return trace_replay(t, NULL, on_event, p);
}

static void xpass_free(struct xpass *p)
{
	struct stack_class *c, *ct;
	HASH_ITER(hh, p->classes, c, ct)
	{
		HASH_DEL(p->classes, c);
		free(c);
	}
	free(p->seg_now);
	replay_free(&p->rp);
}

static void modules(struct trace *t, struct ex_facts *f)
{
	const char *exe = t->exe ? strrchr(t->exe, '/') : NULL;
	exe = exe ? exe + 1 : t->exe;
	f->mods = xrealloc(NULL, (t->nmods + 1) * sizeof(*f->mods));
	for (size_t i = 0; i < t->nmods; i++) {
		struct ex_module *m = &f->mods[f->nmods++];
		m->library = t->mods[i].library ? t->mods[i].library : "";
		m->program = exe && *exe && strcmp(m->library, exe) == 0;
		if (m->program)
			f->program = m->library;
		m->build_id[0] = '\0';
		for (size_t k = 0; k < t->mods[i].build_id_len && k < 20; k++)
			snprintf(m->build_id + 2 * k, 3, "%02x", t->mods[i].build_id[k]);
	}
}

static int worse(int a, int b)
{
	return b > a ? b : a;
}

int explain_facts(struct trace *t, bool has_device, int64_t device, struct ex_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->path = t->path;
	f->history = t->fw && t->fw->entries;
	f->command = t->command ? t->command : "";
	f->env = t->env;
	f->nenv = t->nenv;
	f->duration_ns = (uint64_t)trace_duration_ns(t);
	modules(t, f);
	int x = from_accounting(t, has_device, device, f);
	x = worse(x, from_growth(t, has_device, device, f));
	struct xpass p;
	x = worse(x, explain_pass(t, f, &p));
	x = worse(x, from_oom(t, f, &p));
	xpass_free(&p);
	from_counters(t, f);
	for (size_t i = 0; i < f->ndevs; i++)
		f->devs[i].history = f->history;
	/* after the reads: a torn tail is known once the file is read */
	f->partial = trace_partial(t);
	f->lost = trace_lost_own(t);
	f->incomplete_why = trace_incomplete_why(t);
	return x;
}

void explain_facts_free(struct ex_facts *f)
{
	free(f->mods);
	free(f->devs);
	memset(f, 0, sizeof(*f));
}

int explain_allocator(struct trace *t, bool has_device, int64_t device, struct ex_recog *r)
{
	struct ex_facts f;
	memset(&f, 0, sizeof(f));
	f.path = t->path;
	f.command = t->command ? t->command : "";
	f.env = t->env;
	f.nenv = t->nenv;
	modules(t, &f);
	int x = from_accounting(t, has_device, device, &f);
	struct xpass p;
	x = worse(x, explain_pass(t, &f, &p));
	xpass_free(&p);
	explain_recognize(&f, r);
	explain_facts_free(&f);
	return x;
}
