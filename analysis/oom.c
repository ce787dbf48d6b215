/* The oom aggregator: see oom.h. One replay gathers the failures, what was
 * live at each (by site and library), the contexts (analysis/accounting)
 * and what each failing thread did next; then MEMINFO records and NVML
 * samples are matched to the failures and each is judged (oom-judge.c). */
#include "analysis/oom.h"

#include <stdlib.h>
#include <string.h>

#include "reader/hash.h"

#include "analysis/accounting.h"
#include "analysis/frameworks.h"
#include "analysis/fwhist.h"
#include "analysis/peakset.h"
#include "analysis/report-base.h"
#include "common/events.h"

struct site_acc {
	UT_hash_handle hh;
	uint64_t stack_id, bytes, count;
};

/* The out-of-memory failures of one thread that wait for its next device
 * allocation: a retry, a back-off, or something else. */
struct chain {
	int tid;
	bool active;
	uint32_t id;
	size_t start; /* first failure index of the chain */
	uint32_t api;
	uint64_t last_size; /* the latest failed request */
	uint64_t freed, freed_count;
};

struct oomrun {
	struct trace *t;
	struct replay rp;
	struct peakset ps;
	struct acct acct;
	struct oom_result *res;
	struct chain *chains;
	size_t nchains;
	uint32_t next_chain;
	/* the framework's errors, each as a failure of its own, taken in the
	 * replay at its time (what was live then), and what was held */
	struct oom_failure *fw_snap;
	uint64_t *fw_held;
	size_t fw_next;
};

/* A framework's error explains a failed call at most this long before it
 * (BFC waits up to 10 s for frees before it raises, frameworks.md §2.4; the
 * exception then unwinds the program). */
#define FW_JOIN_NS 30000000000ull
/* The history's entries are stamped in whole microseconds on the wall
 * clock and mapped onto the trace's (fwhist_time_ns): an oom entry may read
 * a little before the failed call it follows. */
#define FW_HIST_SLACK_NS 10000000ull

/* Each MEMINFO record goes to the latest stored failure of its thread at
 * or before it (the library writes it right after the failed call
 * returns); a failure keeps the earliest record it gets. */
static void match_meminfo(struct oomrun *r)
{
	const struct trace *t = r->t;
	for (size_t i = 0; i < t->nmeminfo; i++) {
		const struct trace_meminfo *m = &t->meminfo[i];
		struct oom_failure *best = NULL;
		for (size_t k = 0; k < r->res->nfails; k++) {
			struct oom_failure *o = &r->res->fails[k];
			if ((int)o->e.tid != m->tid || o->e.time_ns > m->time_ns)
				continue;
			if (!best || o->e.time_ns >= best->e.time_ns)
				best = o;
		}
		if (best && (!best->mi || m->time_ns < best->mi->time_ns))
			best->mi = m;
	}
}

/* The NVML sample of the failure's device that speaks for it: the first
 * within OOM_SAMPLE_WINDOW_NS after it (the library takes one on a failure),
 * else the last within that long before it. */
static const struct trace_sample *match_sample(const struct trace *t, const struct gmt_event *e)
{
	const struct trace_sample *before = NULL;
	for (size_t i = 0; i < t->nsamples; i++) {
		const struct trace_sample *s = &t->samples[i];
		if (s->device != e->device)
			continue;
		if (s->time_ns >= e->time_ns)
			return s->time_ns - e->time_ns <= OOM_SAMPLE_WINDOW_NS ? s : before;
		if (e->time_ns - s->time_ns <= OOM_SAMPLE_WINDOW_NS)
			before = s;
	}
	return before;
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
	if (k) /* all is NULL when nothing was live */
		memcpy(out, all, k * sizeof(*all));
	return k;
}

/* What was live on the failure's device, by site and by library. */
static void holders(struct oomrun *r, struct oom_failure *o)
{
	struct trace *t = r->t;
	struct site_acc *sites = NULL, *sa, *st;
	struct oom_holder *libs = NULL;
	size_t nlibs = 0;
	int spaces[2] = {GMT_SPACE_ADDR, GMT_SPACE_VMM_HANDLE};
	for (int s = 0; s < 2; s++) {
		struct rp_live *l, *lt;
		RP_EACH(&r->rp, spaces[s], l, lt)
		{
			if (l->bucket != BK_DEVICE || l->device != o->e.device)
				continue;
			HASH_FIND(hh, sites, &l->stack_id, sizeof(l->stack_id), sa);
			if (!sa) {
				sa = xcalloc(1, sizeof(*sa));
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

static struct chain *chain_of(struct oomrun *r, int tid)
{
	for (size_t i = 0; i < r->nchains; i++)
		if (r->chains[i].tid == tid)
			return &r->chains[i];
	r->chains = xrealloc(r->chains, (r->nchains + 1) * sizeof(*r->chains));
	struct chain *c = &r->chains[r->nchains++];
	memset(c, 0, sizeof(*c));
	c->tid = tid;
	return c;
}

/* The chain's failures learn what came next (e: NULL at the trace's end). */
static void chain_end(struct oomrun *r, struct chain *c, const struct gmt_event *e)
{
	struct oom_next n = {.freed = c->freed, .freed_count = c->freed_count};
	if (e) {
		n.seen = true;
		n.ok = !gmt_failed(e->result, e->flags);
		n.size = e->size;
		n.time_ns = e->time_ns;
		n.same_api = e->api == c->api;
	}
	for (size_t k = c->start; k < r->res->nfails; k++) {
		struct oom_failure *o = &r->res->fails[k];
		if ((int)o->e.tid == c->tid && o->in_chain) {
			o->next = n;
			o->in_chain = false;
		}
	}
	c->active = false;
}

/* Whether request `size` answers a failed `last` on the same thread: the
 * same size (a retry) or a smaller one not far below (a back-off). */
static bool related(uint64_t size, uint64_t last)
{
	return size == last || (size < last && (double)size >= OOM_BACKOFF_MIN * (double)last);
}

/* Frees and device allocations on threads with failures pending. Before
 * replay_apply: a free's size is looked up while still live. */
static void follow(struct oomrun *r, const struct gmt_event *e, const struct api_info *a)
{
	if (!r->nchains)
		return;
	struct chain *c = NULL;
	for (size_t i = 0; i < r->nchains && !c; i++)
		if (r->chains[i].tid == (int)e->tid && r->chains[i].active)
			c = &r->chains[i];
	if (!c)
		return;
	if (a->op == GMT_OP_FREE && !gmt_failed(e->result, e->flags)) {
		struct rp_live *l = replay_find(&r->rp, a->space, e->ptr);
		if (l && l->bucket == BK_DEVICE) {
			c->freed += l->size;
			c->freed_count++;
		}
		return;
	}
	if (a->op != GMT_OP_ALLOC || !gmt_device_memory(a->kind, e->aux))
		return;
	bool failed_oom = gmt_failed(e->result, e->flags) && gmt_out_of_memory(e->result);
	if (failed_oom && e->api == c->api && related(e->size, c->last_size)) {
		c->last_size = e->size; /* the chain goes on: this failure joins it */
		return;
	}
	chain_end(r, c, e);
}

static void record(struct oomrun *r, const struct gmt_event *e, const struct api_info *a)
{
	struct oom_result *res = r->res;
	res->fails_total++;
	bool dev = gmt_device_memory(a->kind, e->aux), oom = gmt_out_of_memory(e->result);
	res->oom_calls_total += dev && oom;
	if (res->nfails == OOM_MAX)
		return;
	struct oom_failure *o = &res->fails[res->nfails++];
	memset(o, 0, sizeof(*o));
	o->e = *e;
	o->device = dev;
	o->oom_result = oom;
	if (dev) {
		o->held = replay_dev(&r->rp, e->device)->lv.bytes;
		o->held_all = r->rp.buckets[BK_DEVICE].bytes;
		o->contexts = acct_contexts_now(&r->acct, e->device);
		holders(r, o);
	}
	if (!dev || !oom)
		return;
	struct chain *c = chain_of(r, (int)e->tid);
	o->in_chain = true;
	if (c->active) {
		o->chain = c->id;
		o->chain_freed = c->freed;
		o->chain_freed_count = c->freed_count;
		return; /* follow() kept it going */
	}
	c->active = true;
	c->id = o->chain = ++r->next_chain;
	c->start = res->nfails - 1;
	c->api = e->api;
	c->last_size = e->size;
	c->freed = c->freed_count = 0;
}

static void count_other(struct oom_result *res, const struct gmt_event *e)
{
	res->others_total++;
	for (size_t i = 0; i < res->nothers; i++)
		if (res->others[i].api == e->api && res->others[i].result == e->result) {
			res->others[i].count++;
			return;
		}
	if (res->nothers < OOM_MAX_OTHER)
		res->others[res->nothers++] = (struct oom_other){e->api, e->result, 1, e->time_ns};
}

/* The largest successful device allocation, and the largest request
 * besides it (failed ones too): a preallocated pool has no rival. */
static void watch_largest(struct oomrun *r, const struct gmt_event *e)
{
	struct oom_result *res = r->res;
	if (gmt_failed(e->result, e->flags) || e->size <= res->largest.size) {
		res->second = e->size > res->second ? e->size : res->second;
		return;
	}
	res->second = res->largest.size > res->second ? res->largest.size : res->second;
	res->largest = *e;
	res->largest_ctx = acct_contexts_now(&r->acct, e->device);
}

/* The framework's errors up to time `until`, each as a failure of its own
 * with what was live then (used where no failed call is its). */
static void snap_fw(struct oomrun *r, uint64_t until)
{
	struct fwoom_list *l = &r->res->fw;
	for (; r->fw_next < l->n && l->v[r->fw_next].time_ns <= until; r->fw_next++) {
		const struct fwoom *f = &l->v[r->fw_next];
		struct oom_failure *o = &r->fw_snap[r->fw_next];
		memset(o, 0, sizeof(*o));
		o->e = (struct gmt_event){.time_ns = f->time_ns,
					  .tid = (uint64_t)f->tid,
					  .device = f->device,
					  .size = f->request.known ? f->request.bytes : 0};
		o->fw = f;
		o->fw_only = true;
		o->oom_result = true;
		o->device = !f->host;
		o->held = replay_dev(&r->rp, f->device)->lv.bytes;
		o->held_all = r->rp.buckets[BK_DEVICE].bytes;
		o->contexts = acct_contexts_now(&r->acct, f->device);
		r->fw_held[r->fw_next] = o->held;
		if (o->device)
			holders(r, o);
	}
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct oomrun *r = ctx;
	snap_fw(r, e->time_ns);
	const struct api_info *a = api_lookup(e->api);
	if (a)
		follow(r, e, a);
	replay_apply(&r->rp, e);
	acct_event(&r->acct, e);
	if (a && a->op == GMT_OP_ALLOC && a->kind != GMT_KIND_ASYNC &&
	    gmt_device_memory(a->kind, e->aux))
		watch_largest(r, e);
	if (!gmt_failed(e->result, e->flags))
		return;
	if (a && a->op == GMT_OP_ALLOC && a->kind != GMT_KIND_POOL)
		record(r, e, a);
	else
		count_other(r->res, e);
}

/* The figures judge() weighs: total, free, this process, others. */
static void figures(const struct trace *t, struct oom_failure *o)
{
	uint64_t dev_total = rb_dev_total(t, o->e.device);
	const struct trace_sample *s = o->sample;
	if (o->mi) {
		o->total = o->mi->total_bytes;
		o->free_bytes = o->mi->free_bytes;
		o->total_known = o->free_known = true;
	} else if (s && s->total_bytes) {
		/* NVML's total includes memory the driver reserves; its free is
		 * what cuMemGetInfo says */
		o->total = dev_total ? dev_total : s->total_bytes;
		o->free_bytes = s->total_bytes > s->used_bytes ? s->total_bytes - s->used_bytes : 0;
		o->total_known = o->free_known = true;
	} else if (dev_total) {
		o->total = dev_total;
		o->total_known = true;
	}
	o->this_process = o->held + o->contexts;
	if (s && s->process_known && s->process_used_bytes >= o->held) {
		o->this_process = s->process_used_bytes;
		o->nvml_process = true;
	}
	uint64_t used = o->total > o->free_bytes ? o->total - o->free_bytes : 0;
	/* NVML's figures of a device that reported one above its total are
	 * none of them used (the rule of accounting, summary, check --max-smi) */
	uint64_t bad = s && s->process_known ? acct_nvml_inconsistent(t, o->e.device, true) : 0;
	if (bad && o->nvml_process && o->this_process <= o->total)
		o->this_process = bad; /* named by the figure that spoiled them */
	if (o->total_known && o->this_process > o->total) {
		/* more than the device has: that source is wrong (a simulated or
		 * stale NVML, contexts counted twice); say which, and keep a
		 * consistent one: traced + contexts, else what was in use */
		o->dropped = o->this_process;
		o->dropped_nvml = o->nvml_process;
		o->nvml_process = false;
		if (o->dropped_nvml && o->held + o->contexts <= o->total) {
			o->this_process = o->held + o->contexts;
		} else {
			o->this_process = o->free_known && used > o->held ? used : o->held;
			o->from_meminfo = o->free_known;
		}
	}
	if (o->free_known)
		o->others = used > o->this_process ? used - o->this_process : 0;
}

/* The failure a framework's error explains: the latest out-of-memory
 * failure of its device at most FW_JOIN_NS before it, not recovered, not
 * yet explained; on its thread where one is. -1: none. */
static long fw_target(const struct oom_result *res, const struct fwoom *f)
{
	long best = -1;
	bool best_tid = false;
	uint64_t until = f->time_ns + (fwoom_from_history(f) ? FW_HIST_SLACK_NS : 0);
	for (size_t k = 0; k < res->nfails; k++) {
		const struct oom_failure *o = &res->fails[k];
		if (!o->device || !o->oom_result || o->fw || o->kase == OOM_RECOVERED ||
		    o->kase == OOM_NOT_AN_OOM || (f->device >= 0 && o->e.device != f->device) ||
		    o->e.time_ns > until || until - o->e.time_ns > FW_JOIN_NS)
			continue;
		bool same = (int)o->e.tid == f->tid;
		if (same || !best_tid) {
			best = (long)k;
			best_tid = same;
		}
	}
	return best;
}

/* Each framework error to its failed calls (the one it explains and the
 * unexplained ones before it on that thread within FW_JOIN_NS: its retry
 * chains), else to a failure of its own; judged. */
static void join_fw(struct oomrun *r)
{
	struct oom_result *res = r->res;
	struct fwoom_list *l = &res->fw;
	bool *joined = xcalloc(l->n + 1, sizeof(*joined));
	bool abnormal = res->end == OOM_END_STATUS || res->end == OOM_END_NO_TRAILER;
	for (size_t i = 0; i < l->n; i++) {
		struct fwoom *f = &l->v[i];
		/* seen by the observer only: caught, unless the process then
		 * ended badly with nothing after it */
		f->caught = f->observer && !f->raised && !(abnormal && i + 1 == l->n) &&
			    !fwoom_history_ended(f);
		long k = fw_target(res, f);
		if (k < 0)
			continue;
		joined[i] = true;
		/* and the failures before it on that thread that nothing else
		 * explains: its retry chains (BFC retries for up to 10 s) */
		const struct oom_failure tk = res->fails[k];
		for (size_t j = 0; j < res->nfails; j++) {
			struct oom_failure *o = &res->fails[j];
			if ((long)j != k &&
			    (o->fw || !o->device || !o->oom_result || o->kase == OOM_RECOVERED ||
			     o->kase == OOM_NOT_AN_OOM || o->e.tid != tk.e.tid ||
			     o->e.device != tk.e.device || o->e.time_ns > tk.e.time_ns ||
			     tk.e.time_ns - o->e.time_ns > FW_JOIN_NS))
				continue;
			o->fw = f;
			o->caught = f->caught;
			oom_judge_fw(o, o->held);
		}
	}
	size_t extra = 0;
	for (size_t i = 0; i < l->n; i++)
		extra += !joined[i];
	res->fw_only_total = extra;
	if (extra) { /* merged in time order */
		struct oom_failure *all = xrealloc(NULL, (res->nfails + extra) * sizeof(*all));
		size_t a = 0, n = 0;
		for (size_t i = 0; i < l->n; i++) {
			if (joined[i])
				continue;
			struct oom_failure *o = &r->fw_snap[i];
			o->caught = o->fw->caught;
			if (o->device)
				o->sample = match_sample(r->t, &o->e);
			figures(r->t, o);
			oom_judge_fw(o, r->fw_held[i]);
			while (a < res->nfails && res->fails[a].e.time_ns <= o->e.time_ns)
				all[n++] = res->fails[a++];
			all[n++] = *o;
		}
		while (a < res->nfails)
			all[n++] = res->fails[a++];
		free(res->fails);
		res->fails = all;
		res->nfails = n;
	}
	free(joined);
}

/* A back-off: BFC asks 0.9x the failed size (kBackpedalFactor, §2.6c);
 * a rounded 0.9 stays above this share. */
#define BACKOFF_STEP_MIN 0.85
/* BFC's retry rounds wait up to 10 s for frees (§2.4), then start again
 * from the first size. */
#define ROUND_NS 11000000000ull

/* Whether the trace shows an allocator that retries a failed request
 * itself: a framework whose allocator does (its library, its own errors,
 * counters or history), or a retry that recovered (else the thread's frees
 * between the attempts say it, same_error). */
static bool retrying_allocator(const struct trace *t, const struct oom_result *res)
{
	for (size_t k = 0; k < res->nfails; k++)
		if (res->fails[k].kase == OOM_RECOVERED)
			return true;
	static const enum gmt_fw_id ids[] = {GMT_FW_PYTORCH, GMT_FW_CUPY, GMT_FW_TENSORFLOW,
					     GMT_FW_JAX, GMT_FW_XLA};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (fw_loaded(t, ids[i], false))
			return true;
	return res->fw.n || t->ncounters || fwhist_present(t);
}

/* Whether failure o is another attempt of the error whose latest attempt
 * is p and first is first: the framework's own error names both, or the
 * thread asked again at once with nothing allocated between (one retry
 * chain): the same size after freeing (PyTorch, CuPy; a program without a
 * retrying allocator that asks again without freeing met two errors),
 * BFC's 0.9x back-off, or BFC's next round from the first size. A program
 * that catches the error and asks for less (a halved batch) is a new
 * error. */
static bool same_error(const struct oom_failure *o, const struct oom_failure *p,
		       const struct oom_failure *first, bool retrier)
{
	if (o->fw && p->fw) /* else the rule: a retry the framework's error did not name */
		return o->fw == p->fw;
	/* nothing allocated on the thread between: one retry chain, or p's
	 * chain ended at o (a new round from a larger size) */
	bool adjacent = (o->chain && o->chain == p->chain) ||
			(p->next.seen && !p->next.ok && p->next.time_ns == o->e.time_ns);
	if (!adjacent || o->e.api != p->e.api || o->e.device != p->e.device)
		return false;
	uint64_t dt = o->e.time_ns - p->e.time_ns, s = o->e.size, ps = p->e.size;
	bool freed = o->chain_freed_count > p->chain_freed_count;
	return (s == ps && dt <= OOM_RETRY_NS && (retrier || freed)) ||
	       (s < ps && (double)s >= BACKOFF_STEP_MIN * (double)ps && dt <= OOM_RETRY_NS) ||
	       (s == first->e.size && s != ps && o->e.time_ns - first->e.time_ns <= ROUND_NS);
}

/* Numbers the out-of-memory errors and their attempts (oom_failure.error),
 * counts them, and the cases by each error's last attempt. */
static void group_errors(const struct trace *t, struct oom_result *res)
{
	bool retrier = retrying_allocator(t, res);
	size_t *last = xcalloc(res->nfails + 1, sizeof(*last)); /* by error - 1 */
	size_t *first = xcalloc(res->nfails + 1, sizeof(*first));
	uint32_t n = 0;
	uint64_t kept_calls = 0;
	for (size_t k = 0; k < res->nfails; k++) {
		struct oom_failure *o = &res->fails[k];
		o->attempt = o->attempts = 1;
		o->first_ns = o->e.time_ns;
		o->first_size = o->e.size;
		if (!o->device || !o->oom_result)
			continue;
		kept_calls += !o->fw_only;
		uint32_t err = 0; /* the latest error of this thread it continues */
		for (uint32_t q = n; q > 0 && !err; q--) {
			const struct oom_failure *p = &res->fails[last[q - 1]];
			if ((int)p->e.tid != (int)o->e.tid)
				continue;
			err = !p->fw_only && !o->fw_only &&
				      same_error(o, p, &res->fails[first[q - 1]], retrier)
				  ? q
				  : UINT32_MAX;
		}
		if (err && err != UINT32_MAX) {
			const struct oom_failure *f1 = &res->fails[first[err - 1]];
			o->error = err;
			o->attempt = res->fails[last[err - 1]].attempt + 1;
			o->first_ns = f1->e.time_ns;
			o->first_size = f1->e.size;
			if (o->chain && o->chain == f1->chain) {
				o->retry_freed = o->chain_freed - f1->chain_freed;
				o->retry_freed_count = o->chain_freed_count - f1->chain_freed_count;
			}
			last[err - 1] = k;
			continue;
		}
		o->error = ++n;
		first[n - 1] = last[n - 1] = k;
	}
	for (size_t k = 0; k < res->nfails; k++) {
		struct oom_failure *o = &res->fails[k];
		if (o->error)
			o->attempts = res->fails[last[o->error - 1]].attempt;
		if (oom_final(o))
			res->cases[o->kase]++;
	}
	/* calls past OOM_MAX: one error each; framework errors past FWOOM_MAX */
	res->ooms_total = n + (res->oom_calls_total - kept_calls) + (res->fw.total - res->fw.n);
	free(last);
	free(first);
}

int oom_compute(struct trace *t, struct oom_result *out)
{
	memset(out, 0, sizeof(*out));
	struct oomrun r = {.t = t, .res = out};
	out->fails = xrealloc(NULL, OOM_MAX * sizeof(*out->fails));
	fwoom_add_history(t);
	fwoom_collect(t, &out->fw);
	fwoom_history_blocks(t, &out->fw); /* the cache at PyTorch's own OOM entries */
	r.fw_snap = xcalloc(out->fw.n + 1, sizeof(*r.fw_snap));
	r.fw_held = xcalloc(out->fw.n + 1, sizeof(*r.fw_held));
	replay_init(&r.rp);
	peakset_attach(&r.ps, &r.rp);
	acct_begin(&r.acct, t, &r.rp);
	int x = trace_replay(t, NULL, on_event, &r);
	snap_fw(&r, UINT64_MAX);
	if (out->largest.size)
		out->largest_peak = replay_dev(&r.rp, out->largest.device)->lv.peak;
	for (size_t i = 0; i < r.nchains; i++)
		if (r.chains[i].active)
			chain_end(&r, &r.chains[i], NULL);
	acct_end(&r.acct, &r.ps);
	acct_free(&r.acct);
	peakset_free(&r.ps);
	match_meminfo(&r);
	for (size_t k = 0; k < out->nfails; k++) {
		struct oom_failure *o = &out->fails[k];
		if (o->device)
			o->sample = match_sample(t, &o->e);
		figures(t, o);
		oom_judge(o);
	}
	oom_find_end(t, out);
	join_fw(&r);
	/* errors past FWOOM_MAX: counted as raised without a failed call */
	out->fw_only_total += out->fw.total - out->fw.n;
	group_errors(t, out);
	oom_find_blind(t, out);
	oom_find_hidden(t, out);
	const struct oom_result *one = out;
	out->verdict = oom_verdict(&one, 1);
	free(r.fw_snap);
	free(r.fw_held);
	free(r.chains);
	replay_free(&r.rp);
	return x;
}

void oom_free(struct oom_result *r)
{
	free(r->fails);
	r->fails = NULL;
	r->nfails = 0;
	fwoom_free(&r->fw);
}
