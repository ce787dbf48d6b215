/* The oom aggregator: see oom.h. */
#include "analysis/oom.h"

#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "analysis/report-base.h"

#define RESULT_OOM 2 /* CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation */
#define NEARLY_ALL 0.9

struct site_acc {
	UT_hash_handle hh;
	uint64_t stack_id, bytes, count;
};

struct oomrun {
	struct trace *t;
	struct replay rp;
	struct oom_result *res;
};

/* Each MEMINFO record goes to the latest stored out-of-memory failure of
 * its thread at or before it (the library writes it right after the failed
 * call returns); a failure keeps the earliest record it gets. */
static void match_meminfo(struct oomrun *r)
{
	const struct trace *t = r->t;
	for (size_t i = 0; i < t->nmeminfo; i++) {
		const struct trace_meminfo *m = &t->meminfo[i];
		struct oom_failure *best = NULL;
		for (size_t k = 0; k < r->res->nooms; k++) {
			struct oom_failure *o = &r->res->ooms[k];
			if ((int)o->e.tid != m->tid || o->e.time_ns > m->time_ns)
				continue;
			if (!best || o->e.time_ns >= best->e.time_ns)
				best = o;
		}
		if (best && (!best->mi || m->time_ns < best->mi->time_ns))
			best->mi = m;
	}
}

static int holder_cmp(const void *a, const void *b)
{
	const struct oom_holder *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Keeps the `cap` largest of `all` (n entries) in out. */
static size_t keep_top(struct oom_holder *all, size_t n, struct oom_holder *out, size_t cap)
{
	if (n)
		qsort(all, n, sizeof(*all), holder_cmp);
	size_t k = n < cap ? n : cap;
	memcpy(out, all, k * sizeof(*all));
	return k;
}

static void analyse(struct oomrun *r, struct oom_failure *o)
{
	struct trace *t = r->t;
	const struct gmt_event *e = &o->e;
	o->held = replay_dev(&r->rp, e->device)->lv.bytes;
	o->held_all = r->rp.buckets[BK_DEVICE].bytes;
	/* by library and by site: the device's live allocations */
	struct site_acc *sites = NULL, *sa, *st;
	struct oom_holder *libs = NULL;
	size_t nlibs = 0;
	int spaces[2] = {GMT_SPACE_ADDR, GMT_SPACE_VMM_HANDLE};
	for (int s = 0; s < 2; s++) {
		struct rp_live *l, *lt;
		RP_EACH(&r->rp, spaces[s], l, lt)
		{
			if (l->bucket != BK_DEVICE || l->device != e->device)
				continue;
			HASH_FIND(hh, sites, &l->stack_id, sizeof(l->stack_id), sa);
			if (!sa) {
				sa = xrealloc(NULL, sizeof(*sa));
				memset(sa, 0, sizeof(*sa));
				sa->stack_id = l->stack_id;
				HASH_ADD(hh, sites, stack_id, sizeof(sa->stack_id), sa);
			}
			sa->bytes += l->size;
			sa->count++;
		}
	}
	size_t nsites = HASH_COUNT(sites), k = 0;
	struct oom_holder *all = xrealloc(NULL, (nsites + 1) * sizeof(*all));
	HASH_ITER(hh, sites, sa, st)
	{
		all[k++] = (struct oom_holder){NULL, sa->stack_id, sa->bytes, sa->count};
		const char *lib = trace_library(t, sa->stack_id);
		size_t j = 0;
		while (j < nlibs && strcmp(libs[j].name, lib) != 0)
			j++;
		if (j == nlibs) {
			libs = xrealloc(libs, (nlibs + 1) * sizeof(*libs));
			libs[nlibs++] = (struct oom_holder){lib, 0, 0, 0};
		}
		libs[j].bytes += sa->bytes;
		libs[j].count += sa->count;
		HASH_DEL(sites, sa);
		free(sa);
	}
	o->sites_total = nsites;
	o->nsites = keep_top(all, nsites, o->sites, OOM_TOP_SITES);
	o->libs_total = nlibs;
	o->nlibs = keep_top(libs, nlibs, o->libs, OOM_TOP_LIBS);
	free(all);
	free(libs);
}

static void judge(struct trace *t, struct oom_failure *o)
{
	const struct gmt_event *e = &o->e;
	char b1[32], b2[32], b3[32], b4[32];
	uint64_t req = e->size;
	if (o->mi) {
		uint64_t fr = o->mi->free_bytes, tot = o->mi->total_bytes;
		uint64_t used = tot > fr ? tot - fr : 0;
		uint64_t other = used > o->held ? used - o->held : 0;
		if (fr >= req) {
			o->verdict = "fragmentation";
			snprintf(o->why, sizeof(o->why),
				 "%s was free, more than the %s requested, yet no free block was "
				 "large enough",
				 fmt_size(b1, fr), fmt_size(b2, req));
		} else if (other > o->held) {
			o->verdict = "other processes";
			snprintf(o->why, sizeof(o->why),
				 "only %s free of %s; %s in use was not allocated by this process "
				 "(other processes, CUDA contexts), more than the %s it held",
				 fmt_size(b1, fr), fmt_size(b2, tot), fmt_size(b3, other),
				 fmt_size(b4, o->held));
		} else {
			o->verdict = "real exhaustion";
			snprintf(o->why, sizeof(o->why),
				 "only %s free of %s; this process held %s, most of the memory in "
				 "use (%s by others)",
				 fmt_size(b1, fr), fmt_size(b2, tot), fmt_size(b3, o->held),
				 fmt_size(b4, other));
		}
		return;
	}
	uint64_t tot = rb_dev_total(t, e->device);
	if (tot && (o->held + req > tot || (double)o->held >= NEARLY_ALL * (double)tot)) {
		o->verdict = "real exhaustion";
		snprintf(o->why, sizeof(o->why),
			 "free memory unknown (no MEMINFO record); this process held %s of the "
			 "device's %s, so %s could not fit",
			 fmt_size(b1, o->held), fmt_size(b2, tot), fmt_size(b3, req));
	} else if (tot) {
		o->verdict = "unknown";
		snprintf(o->why, sizeof(o->why),
			 "free memory unknown (no MEMINFO record); this process held %s of the "
			 "device's %s: the other %s was held by other processes or too "
			 "fragmented",
			 fmt_size(b1, o->held), fmt_size(b2, tot), fmt_size(b3, tot - o->held));
	} else {
		o->verdict = "unknown";
		snprintf(o->why, sizeof(o->why),
			 "free memory unknown (no MEMINFO record) and the device's total too (no "
			 "DEVICE record); this process held %s",
			 fmt_size(b1, o->held));
	}
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct oomrun *r = ctx;
	replay_apply(&r->rp, e);
	if (!gmt_failed(e->result, e->flags))
		return;
	const struct api_info *a = api_lookup(e->api);
	if (a && a->op == GMT_OP_ALLOC && e->result == RESULT_OOM) {
		r->res->ooms_total++;
		if (r->res->nooms < OOM_MAX) {
			struct oom_failure *o = &r->res->ooms[r->res->nooms++];
			memset(o, 0, sizeof(*o));
			o->e = *e;
			analyse(r, o);
		}
		return;
	}
	r->res->others_total++;
	for (size_t i = 0; i < r->res->nothers; i++)
		if (r->res->others[i].api == e->api && r->res->others[i].result == e->result) {
			r->res->others[i].count++;
			return;
		}
	if (r->res->nothers < OOM_MAX_OTHER)
		r->res->others[r->res->nothers++] =
		    (struct oom_other){e->api, e->result, 1, e->time_ns};
}

int oom_compute(struct trace *t, struct oom_result *out)
{
	memset(out, 0, sizeof(*out));
	struct oomrun r = {.t = t, .res = out};
	out->ooms = xrealloc(NULL, OOM_MAX * sizeof(*out->ooms));
	replay_init(&r.rp);
	int x = trace_replay(t, NULL, on_event, &r);
	match_meminfo(&r);
	for (size_t k = 0; k < out->nooms; k++)
		judge(t, &out->ooms[k]);
	replay_free(&r.rp);
	return x;
}

void oom_free(struct oom_result *r)
{
	free(r->ooms);
	r->ooms = NULL;
	r->nooms = 0;
}
