/* summary's model (summary.h): one pass for the live set, the calls and the
 * failures, a second for the phases when the trace has ranges.
 *
 * One read of the file: the metadata and the replay of the live set
 * (analysis/replay.c) together, which finds each peak, what was live there
 * (analysis/peakset.h) and the NVML reconciliation's figures. A trace with
 * ranges is read a second time for the phases: the ranges must all be known,
 * in time order, before the events are attributed to them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/hash.h"

#include "analysis/fwhist.h"
#include "analysis/oom.h"
#include "analysis/sites.h"
#include "analysis/summary.h"

static struct summary_dev *dev_get(struct summary *s, int64_t ordinal)
{
	for (size_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].ordinal == ordinal)
			return &s->devs[i];
	GROW(s->devs, s->ndevs, s->devs_cap);
	struct summary_dev *d = &s->devs[s->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	const struct trace_device *td = trace_device(&s->t, ordinal);
	d->name = td ? td->name : "";
	d->total = td ? td->total_bytes : 0;
	return d;
}

/* ---- the pass: the live set, calls and failures ------------------------ */

/* summary_pass_event's rare parts, out of line: an API not in by_api, a failure. */
static __attribute__((noinline)) struct summary_call *call_new(struct summary *s, uint32_t api)
{
	struct summary_call *c;
	HASH_FIND(hh, s->calls, &api, sizeof(api), c);
	if (!c) {
		c = xrealloc(NULL, sizeof(*c));
		memset(c, 0, sizeof(*c));
		c->api = api;
		HASH_ADD(hh, s->calls, api, sizeof(c->api), c);
	}
	if (api <= GMT_API_MAX_)
		s->by_api[api] = c;
	return c;
}

static __attribute__((noinline)) void call_failed(struct summary *s, struct summary_call *c,
						  const struct gmt_event *e)
{
	c->failed++;
	if (s->nfailures++ < SUMMARY_MAX_FAILURES) {
		if (!s->failures)
			s->failures = xrealloc(NULL, SUMMARY_MAX_FAILURES * sizeof(*s->failures));
		s->failures[s->nfailures_kept++] = (struct summary_failure){
		    e->time_ns, e->size, e->result, e->stack_id, e->api, e->api, e->device};
	}
}

/* A driver allocation or free: counted by (api, stack) until drv_fold. */
static __attribute__((noinline)) void drv_event(struct summary *s, const struct gmt_event *e)
{
	uint64_t key[2] = {e->api, e->stack_id};
	struct summary_drv *d = s->drv_last;
	if (!d || memcmp(d->key, key, sizeof(key)) != 0) {
		HASH_FIND(hh, s->drv, key, sizeof(key), d);
		if (!d) {
			d = xcalloc(1, sizeof(*d));
			memcpy(d->key, key, sizeof(key));
			HASH_ADD(hh, s->drv, key, sizeof(d->key), d);
		}
		s->drv_last = d;
	}
	d->count++;
	if (gmt_failed(e->result, e->flags)) {
		d->failed++;
		if (s->nfailures++ < SUMMARY_MAX_FAILURES) {
			if (!s->failures)
				s->failures =
				    xrealloc(NULL, SUMMARY_MAX_FAILURES * sizeof(*s->failures));
			s->failures[s->nfailures_kept++] = (struct summary_failure){
			    e->time_ns, e->size, e->result, e->stack_id, e->api, e->api, e->device};
		}
	} else {
		d->bytes += e->size;
	}
	acct_event(&s->acct, e);
}

/* The APIs drv_event takes: the driver's calls of an operation the runtime
 * has an API for (allocations, frees, pool trims), which the static runtime
 * makes for that API (site_api). */
static void drv_init(struct summary *s)
{
	bool rt_op[GMT_OP_CTX_DESTROY + 1] = {false};
	for (uint32_t a = 0; a <= GMT_API_MAX_; a++) {
		const struct api_info *i = api_lookup(a);
		if (i && strncmp(i->name, "cuda", 4) == 0 && i->op >= 0 &&
		    i->op <= GMT_OP_CTX_DESTROY)
			rt_op[i->op] = true;
	}
	for (uint32_t a = 0; a <= GMT_API_MAX_; a++) {
		const struct api_info *i = api_lookup(a);
		s->drv_api[a] = i && strncmp(i->name, "cuda", 4) != 0 && i->op >= 0 &&
				i->op <= GMT_OP_CTX_DESTROY && rt_op[i->op];
	}
}

static struct summary_call *call_get(struct summary *s, uint32_t api)
{
	struct summary_call *c = api <= GMT_API_MAX_ ? s->by_api[api] : NULL;
	return c ? c : call_new(s, api);
}

/* After the pass: each driver call counts as the API it stands for. */
static void drv_fold(struct summary *s)
{
	struct summary_drv *d, *dt;
	HASH_ITER(hh, s->drv, d, dt)
	{
		struct summary_call *c =
		    call_get(s, site_api(&s->t, d->key[1], (uint32_t)d->key[0]));
		c->count += d->count;
		c->failed += d->failed;
		c->bytes += d->bytes;
		HASH_DEL(s->drv, d);
		free(d);
	}
	s->drv_last = NULL;
	for (size_t i = 0; i < s->nfailures_kept; i++)
		s->failures[i].api = site_api(&s->t, s->failures[i].stack_id, s->failures[i].api);
}

void summary_pass_event(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	struct summary *s = ctx;
	if (rp->seq == rp->buckets[BK_DEVICE].peak_seq || rp->ndevs > 1)
		fwt_note_peak(&s->peak_ptrs, e, rp); /* a device's peak: for the history */
	if (e->api <= GMT_API_MAX_ && s->drv_api[e->api]) {
		drv_event(s, e);
		return;
	}
	/* known APIs by index, no hash lookup per event */
	struct summary_call *c = e->api <= GMT_API_MAX_ ? s->by_api[e->api] : NULL;
	if (!c)
		c = call_new(s, e->api);
	c->count++;
	if (gmt_failed(e->result, e->flags))
		call_failed(s, c, e);
	else
		c->bytes += e->size;
	acct_event(&s->acct, e); /* last: a tail call */
}

/* ---- with ranges, a second pass: the phases ---------------------------- */

static void on_phase_event(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	struct summary *s = ctx;
	uint64_t live = phase_device_bytes(rp);
	phase_advance(&s->phases, e->time_ns, s->last_live);
	phase_charge(&s->phases, e->tid); /* frees: phase_attach's hook */
	phase_note_live(&s->phases, live);
	if (phase_of(&s->phases, e->tid) == s->phases.none && live > s->phases.none->peak)
		s->phases.none->peak = live;
	s->last_live = live;
}

/* ---- what was live at each peak ---------------------------------------- */

/* Largest bytes first, then most allocations, then the lower stack id. */
static int rank_cmp(uint64_t xbytes, uint64_t xcount, uint64_t xstack, uint64_t ybytes,
		    uint64_t ycount, uint64_t ystack)
{
	if (xbytes != ybytes)
		return xbytes < ybytes ? 1 : -1;
	if (xcount != ycount)
		return xcount < ycount ? 1 : -1;
	return xstack < ystack ? -1 : xstack > ystack;
}

static int site_cmp(const void *a, const void *b)
{
	const struct summary_site *x = a, *y = b;
	return rank_cmp(x->bytes, x->count, x->stack_id, y->bytes, y->count, y->stack_id);
}

static int lib_cmp(const void *a, const void *b)
{
	const struct acct_lib *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->library, y->library);
}

static int api_kind(uint32_t api)
{
	const struct api_info *a = api_lookup(api);
	return a && a->kind >= 0 && a->kind <= GMT_KIND_MAX_ ? a->kind : 0;
}

/* Live device bytes on dev's device by kind, into kinds[]. */
static void kinds_now(struct replay *rp, int64_t ordinal, uint64_t *kinds)
{
	GMT_EACH_SPACE(sp)
	{
		struct rp_live *l, *lt;
		RP_EACH(rp, sp, l, lt)
		{
			if (l->bucket == BK_DEVICE && l->device == ordinal)
				kinds[api_kind(l->api)] += l->size;
		}
	}
}

struct peak_fill {
	struct summary_dev *dev;
	struct summary_site *groups;
};

static void peak_add(void *ctx, uint64_t stack_id, uint32_t api, uint64_t bytes, uint64_t count,
		     uint64_t big, uint64_t rounding)
{
	struct peak_fill *pf = ctx;
	struct summary_site *g;
	HASH_FIND(hh, pf->groups, &stack_id, sizeof(stack_id), g);
	if (!g) {
		g = xrealloc(NULL, sizeof(*g));
		memset(g, 0, sizeof(*g));
		g->stack_id = stack_id;
		HASH_ADD(hh, pf->groups, stack_id, sizeof(g->stack_id), g);
	}
	g->bytes += bytes;
	g->count += count;
	pf->dev->kind_peak[api_kind(api)] += bytes;
}

/* Groups what was live on dev's device at its peak by stack id and by
 * library; keeps the top sites. */
static void snapshot(struct summary *s, struct summary_dev *dev)
{
	struct peak_fill pf = {dev, NULL};
	peakset_each(&s->ps, dev->ordinal, peak_add, &pf);
	struct summary_site *groups = pf.groups, *g, *tmp;
	size_t n = HASH_COUNT(groups), i = 0;
	struct summary_site *all = xrealloc(NULL, n * sizeof(*all));
	HASH_ITER(hh, groups, g, tmp)
	{
		HASH_DEL(groups, g);
		all[i++] = *g;
		free(g);
	}
	if (n)
		qsort(all, n, sizeof(*all), site_cmp);
	/* by library: the libraries are few, a list will do */
	dev->libs = xrealloc(NULL, n * sizeof(*dev->libs));
	dev->nlibs = 0;
	for (i = 0; i < n; i++) {
		const char *lib = trace_library(&s->t, all[i].stack_id);
		size_t k = 0;
		while (k < dev->nlibs && strcmp(dev->libs[k].library, lib) != 0)
			k++;
		if (k == dev->nlibs)
			dev->libs[dev->nlibs++] = (struct acct_lib){lib, 0, 0};
		dev->libs[k].bytes += all[i].bytes;
		dev->libs[k].count += all[i].count;
	}
	if (dev->nlibs)
		qsort(dev->libs, dev->nlibs, sizeof(*dev->libs), lib_cmp);
	dev->distinct_sites = n;
	dev->nsites = n < SUMMARY_TOP_SITES ? n : SUMMARY_TOP_SITES;
	dev->sites = all;
	for (i = 0; i < dev->nsites; i++)
		memset(&all[i].hh, 0, sizeof(all[i].hh));
}

static int dev_cmp(const void *a, const void *b)
{
	const struct summary_dev *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

static int call_cmp(struct summary_call *a, struct summary_call *b)
{
	return a->api < b->api ? -1 : a->api > b->api;
}

const struct summary_kind summary_kinds[NKINDS] = {
    {GMT_KIND_DEVICE, "device", "device (cudaMalloc, cuMemAlloc)"},
    {GMT_KIND_ASYNC, "stream_ordered", "stream-ordered (cudaMallocAsync)"},
    {GMT_KIND_VMM_PHYS, "vmm_physical", "mapped memory (cuMemCreate)"},
};

static void frame_text(FILE *f, const struct trace_frame *fr)
{
	char buf[1024];
	fputs(trace_frame_text(fr, buf, sizeof(buf)), f);
	if (fr->in_cuda)
		fputs(" [all frames in CUDA libraries]", f);
}

/* " <- caller <- caller's caller": the site alone does not say which path
 * allocated (a caching allocator is one site for every tensor). */
static void callers_text(FILE *f, struct summary *s, uint64_t stack_id, int site_depth)
{
	char buf[2048] = "";
	fputs(trace_callers_text(&s->t, stack_id, site_depth, 3, buf, sizeof(buf)), f);
}

static int row_cmp(const void *a, const void *b)
{
	const struct summary_row *x = a, *y = b;
	return rank_cmp(x->bytes, x->count, x->stack_id, y->bytes, y->count, y->stack_id);
}

/* The text's rows: stacks that differ only below the 3 callers printed
 * read as one row (on an H100, PyTorch's allocator under seven deeper
 * callers made seven identical rows). --json keeps one entry per stack. */
void summary_site_rows(struct summary *s, struct summary_dev *dev)
{
	struct summary_row *byname = NULL, *r, *tmp;
	for (size_t i = 0; i < dev->distinct_sites; i++) {
		const struct summary_site *st = &dev->sites[i];
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		if (!m)
			xalloc_failed();
		struct trace_frame fr;
		if (trace_site(&s->t, st->stack_id, &fr)) {
			frame_text(m, &fr);
			callers_text(m, s, st->stack_id, fr.depth);
		} else {
			fputs("(no stack)", m);
		}
		if (fclose(m) || !text)
			xalloc_failed();
		HASH_FIND(hh, byname, text, len, r);
		if (r) {
			free(text);
		} else {
			r = xrealloc(NULL, sizeof(*r));
			*r = (struct summary_row){.text = text, .stack_id = st->stack_id};
			HASH_ADD_KEYPTR(hh, byname, r->text, len, r);
		}
		r->bytes += st->bytes;
		r->count += st->count;
		r->stacks++;
	}
	size_t n = HASH_COUNT(byname), i = 0;
	dev->rows = xrealloc(NULL, (n ? n : 1) * sizeof(*dev->rows));
	HASH_ITER(hh, byname, r, tmp)
	{
		HASH_DEL(byname, r);
		dev->rows[i++] = *r;
		free(r);
	}
	if (n)
		qsort(dev->rows, n, sizeof(*dev->rows), row_cmp);
	dev->distinct_rows = n;
	dev->nrows = n < SUMMARY_TOP_SITES ? n : SUMMARY_TOP_SITES;
}

struct phase **summary_phases(struct summary *s, size_t *n)
{
	size_t all;
	struct phase **ps = phase_list(&s->phases, &all);
	*n = 0;
	for (size_t i = 0; i < all; i++)
		if (ps[i] != s->phases.none && (ps[i]->allocs || ps[i]->frees || ps[i]->seen_open))
			ps[(*n)++] = ps[i];
	if (s->phases.none->allocs || s->phases.none->frees)
		ps[(*n)++] = s->phases.none;
	return ps;
}

/* A driver failure counted as a runtime API (the static runtime) keeps the
 * driver's code, but out of memory reads as the runtime says it. */
const char *summary_failure_result(const struct summary_failure *x)
{
	if (x->api != x->recorded_api && x->result == 2)
		return result_name(x->api, x->result);
	return result_name(x->recorded_api, x->result);
}

/* A failed call's case, as oom names it (matched by time, size, device). */
static const char *failure_case(const struct oom_result *r, const struct summary_failure *x)
{
	for (size_t i = 0; i < r->nfails; i++) {
		const struct gmt_event *e = &r->fails[i].e;
		if (e->time_ns == x->time_ns && e->size == x->size && e->device == x->device)
			return oom_case_name[r->fails[i].kase];
	}
	return NULL;
}

void summary_failure_cases(struct summary *s, const char **kase, bool *any, bool *recovered)
{
	struct oom_result r;
	oom_compute(&s->t, &r); /* a read error is the summary's own to report */
	for (size_t i = 0; i < s->nfailures_kept; i++)
		kase[i] = failure_case(&r, &s->failures[i]);
	*any = r.nfails > 0;
	*recovered = r.cases[OOM_RECOVERED] > 0;
	oom_free(&r);
}

void summary_free(struct summary *s)
{
	struct summary_drv *d, *dt;
	HASH_ITER(hh, s->drv, d, dt)
	{
		HASH_DEL(s->drv, d);
		free(d);
	}
	for (size_t i = 0; i < s->ndevs; i++) {
		free(s->devs[i].sites);
		for (size_t k = 0; k < s->devs[i].distinct_rows; k++)
			free(s->devs[i].rows[k].text);
		free(s->devs[i].rows);
		free(s->devs[i].libs);
	}
	free(s->devs);
	struct summary_call *c, *ct;
	HASH_ITER(hh, s->calls, c, ct)
	{
		HASH_DEL(s->calls, c);
		free(c);
	}
	free(s->failures);
	if (s->has_acct)
		acct_free(&s->acct);
	if (s->has_phases)
		phase_free(&s->phases);
	counters_free(&s->counters);
	fwt_free(&s->fwt);
	free(s->peak_ptrs.v);
	peakset_free(&s->ps);
	replay_free(&s->rp);
	trace_close(&s->t);
}

/* What the framework's segments held at each device's peak. */
static int fw_capture(struct summary *s)
{
	int64_t *devs = xcalloc(s->ndevs + 1, sizeof(*devs));
	uint64_t *times = xcalloc(s->ndevs + 1, sizeof(*times));
	uint64_t *ptrs = xcalloc(s->ndevs + 1, sizeof(*ptrs));
	for (size_t i = 0; i < s->ndevs; i++) {
		devs[i] = s->devs[i].ordinal;
		times[i] = s->devs[i].lv.peak_seq ? s->devs[i].lv.peak_time_ns : UINT64_MAX;
		ptrs[i] = fwt_peak_ptr(&s->peak_ptrs, devs[i]);
	}
	int rc = fwt_capture(&s->t, s->ndevs, devs, times, ptrs, &s->fwt);
	free(ptrs);
	s->has_fw = true;
	free(devs);
	free(times);
	return rc;
}

void summary_pass_begin(struct summary *s)
{
	memset(s, 0, sizeof(*s));
	drv_init(s);
	replay_init(&s->rp);
	peakset_attach(&s->ps, &s->rp);
	acct_begin(&s->acct, &s->t, &s->rp);
	s->has_acct = true; /* acct_end or acct_free */
}

int summary_pass_end(struct summary *s)
{
	int rc = -1;
	s->hdr = &s->t.hdr;
	drv_fold(s);
	counters_load(&s->t, &s->counters);
	if (s->t.nsamples || s->t.nvml_missing)
		acct_end(&s->acct, &s->ps);
	else
		s->has_acct = false, acct_free(&s->acct);
	if (s->t.nranges) {
		phase_init(&s->phases, &s->t);
		s->has_phases = true;
		struct replay rp2;
		replay_init(&rp2);
		phase_attach(&s->phases, &rp2);
		rc = trace_replay(&s->t, &rp2, on_phase_event, s);
		replay_free(&rp2);
		if (rc >= 0)
			return rc;
	}

	for (size_t i = 0; i < s->t.ndevs; i++)
		dev_get(s, s->t.devs[i].ordinal);
	/* devices seen only in the replay (an allocation on device -1) */
	for (size_t i = 0; i < s->rp.ndevs; i++)
		dev_get(s, s->rp.devs[i].ordinal);
	if (s->ndevs > 1)
		qsort(s->devs, s->ndevs, sizeof(*s->devs), dev_cmp);
	for (size_t i = 0; i < s->ndevs; i++) {
		struct summary_dev *d = &s->devs[i];
		for (size_t k = 0; k < s->rp.ndevs; k++)
			if (s->rp.devs[k].ordinal == d->ordinal)
				d->lv = s->rp.devs[k].lv;
		kinds_now(&s->rp, d->ordinal, d->kind_end);
		if (d->lv.peak_seq) {
			snapshot(s, d);
			for (size_t k = 0; k < d->nsites; k++) {
				struct summary_site *st = &d->sites[k];
				st->has_frame = trace_site(&s->t, st->stack_id, &st->frame);
			}
		}
	}
	HASH_SORT(s->calls, call_cmp);
	if (fwhist_present(&s->t))
		rc = fw_capture(s);
	return rc;
}

int summary_read(struct summary *s, const char *cmd, const char *path,
		 const struct site_opts *sites, bool short_names)
{
	summary_pass_begin(s);
	int rc = trace_open_replay(&s->t, cmd, path, &s->rp, summary_pass_event, s);
	if (rc >= 0)
		return rc;
	s->path = path;
	s->t.site_opts = sites;
	s->t.short_names = short_names;
	return summary_pass_end(s);
}

struct summary_proc summary_proc_row(const struct summary *s)
{
	struct summary_proc r = {
	    .complete = s->t.complete, .failures = s->nfailures, .events = s->t.events};
	for (size_t i = 0; i < s->ndevs; i++) {
		const struct summary_dev *d = &s->devs[i];
		if (d->lv.peak > r.peak) {
			r.peak = d->lv.peak;
			r.peak_time = summary_rel(s, d->lv.peak_time_ns);
		}
		r.live_end += d->lv.bytes;
		r.allocs_end += d->lv.count;
	}
	return r;
}

struct summary_proc summary_proc_total(const struct summary_proc *rows, int n)
{
	struct summary_proc tot = {.complete = true};
	for (int i = 0; i < n; i++) {
		tot.peak += rows[i].peak;
		tot.live_end += rows[i].live_end;
		tot.allocs_end += rows[i].allocs_end;
		tot.failures += rows[i].failures;
		tot.events += rows[i].events;
		tot.complete &= rows[i].complete;
	}
	return tot;
}
