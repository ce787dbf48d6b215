/* Reconciliation of nvidia-smi with the trace: see accounting.h.
 *
 * One replay finds each device's peak, what was live there (analysis/peakset.h),
 * the libraries that allocated, and the contexts; the end snapshot is its
 * final state. The summary feeds the same pass from its own replay. */
#include "analysis/accounting.h"
#include "analysis/frameworks.h"
#include "analysis/counters.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_EVIDENCE 512

/* A context, live from its creation to its destruction (primary contexts:
 * to the release that drops the last reference). */
struct ctx_live {
	UT_hash_handle hh;
	uint64_t ctx;
	int64_t device;
	uint64_t refs, cost;
	bool measured;
};

struct stack_seen {
	UT_hash_handle hh;
	uint64_t stack_id;
};

/* Contexts' cost on one device: now, and when the device last peaked. */
struct ctx_sum {
	int64_t ordinal;
	uint64_t contexts, live, unmeasured;
};

/* Per replay device (same index as rp->devs): its peak's extras. */
struct peak_extra {
	uint64_t seq;	   /* the peak they belong to */
	uint64_t until_ns; /* the end of its plateau (acct_moment's; 0: not yet) */
	struct ctx_sum ctx;
};

/* The peak's plateau: device bytes within 1/20 (5%) of the peak. */
#define ACCT_PLATEAU_DIV 20

/* After an event at t, not a new peak: a drop below the plateau ends it
 * (for now), a return to it goes on with it. */
static inline void plateau_step(struct peak_extra *x, const struct rp_level *lv, uint64_t t)
{
	if (!x->seq || t <= lv->peak_time_ns)
		return;
	if (lv->bytes >= lv->peak - lv->peak / ACCT_PLATEAU_DIV)
		x->until_ns = 0;
	else if (!x->until_ns)
		x->until_ns = t;
}

struct acct_pass {
	struct acct *a;
	struct replay *rp;
	struct ctx_live *ctxs;
	struct ctx_sum *ctx_now;
	size_t nctx_now;
	struct peak_extra *extra;
	size_t nextra;
	struct stack_seen *alloc_stacks;
	uint8_t *seen_bits; /* stack ids below SEEN_BITS already in alloc_stacks */
	uint64_t vmm_creates;
};

#define SEEN_BITS (1ull << 24) /* 2 MiB at most; larger ids use the hash only */

static struct acct_dev *adev(struct acct *a, int64_t ordinal)
{
	for (size_t i = 0; i < a->ndevs; i++)
		if (a->devs[i].ordinal == ordinal)
			return &a->devs[i];
	a->devs = xrealloc(a->devs, (a->ndevs + 1) * sizeof(*a->devs));
	struct acct_dev *d = &a->devs[a->ndevs++];
	memset(d, 0, sizeof(*d));
	d->ordinal = ordinal;
	d->name = "";
	return d;
}

static struct ctx_sum *ctx_now(struct acct_pass *p, int64_t ordinal)
{
	for (size_t i = 0; i < p->nctx_now; i++)
		if (p->ctx_now[i].ordinal == ordinal)
			return &p->ctx_now[i];
	p->ctx_now = xrealloc(p->ctx_now, (p->nctx_now + 1) * sizeof(*p->ctx_now));
	p->ctx_now[p->nctx_now] = (struct ctx_sum){.ordinal = ordinal};
	return &p->ctx_now[p->nctx_now++];
}

static void ctx_count(struct acct_pass *p, const struct ctx_live *c, int sign)
{
	struct ctx_sum *cs = ctx_now(p, c->device);
	cs->contexts += (uint64_t)sign * c->cost;
	cs->live += (uint64_t)sign;
	cs->unmeasured += (uint64_t)sign * !c->measured;
}

static void ctx_event(struct acct_pass *p, const struct gmt_event *e, const struct api_info *ai)
{
	if (gmt_failed(e->result, e->flags) || !e->ptr)
		return;
	struct ctx_live *c = NULL;
	HASH_FIND(hh, p->ctxs, &e->ptr, sizeof(e->ptr), c);
	if (ai->op == GMT_OP_CTX_CREATE) {
		if (c) { /* a primary context retained again: costs nothing more */
			c->refs++;
			return;
		}
		c = xcalloc(1, sizeof(*c));
		c->ctx = e->ptr;
		c->device = e->device;
		c->refs = 1;
		c->cost = e->size;
		c->measured = e->flags & (GMT_EV_HAS_AUX | GMT_EV_HAS_AUX2); /* before may be 0 */
		HASH_ADD(hh, p->ctxs, ctx, sizeof(c->ctx), c);
		ctx_count(p, c, 1);
		struct acct_dev *d = adev(p->a, e->device);
		d->ctx_events++;
		d->ctx_measured += c->measured;
		if (e->time_ns <= p->a->t->first_time_ns)
			d->first_event_ctx += c->cost;
		return;
	}
	if (!c)
		return;
	if (e->api == GMT_API_cuDevicePrimaryCtxRelease_v2 && c->refs > 1) {
		c->refs--;
		return;
	}
	ctx_count(p, c, -1);
	HASH_DEL(p->ctxs, c);
	free(c);
}

struct group {
	UT_hash_handle hh;
	uint64_t stack_id, bytes, count;
};

struct moment_fill {
	struct acct_moment *m;
	struct group *groups;
};

static void moment_add(void *ctx, uint64_t stack_id, uint32_t api, uint64_t bytes, uint64_t count,
		       uint64_t big, uint64_t rounding)
{
	struct moment_fill *mf = ctx;
	struct acct_moment *m = mf->m;
	const struct api_info *ai = api_lookup(api);
	int kind = ai ? ai->kind : 0;
	m->traced += bytes;
	if (kind == GMT_KIND_ASYNC)
		m->async += bytes;
	else if (kind == GMT_KIND_VMM_PHYS)
		m->vmm += bytes;
	else
		m->device += bytes;
	m->big_allocs += big;
	m->rounding += rounding;
	struct group *g;
	HASH_FIND(hh, mf->groups, &stack_id, sizeof(stack_id), g);
	if (!g) {
		g = xcalloc(1, sizeof(*g));
		g->stack_id = stack_id;
		HASH_ADD(hh, mf->groups, stack_id, sizeof(g->stack_id), g);
	}
	g->bytes += bytes;
	g->count += count;
}

/* The moment's libraries, from its groups by stack. */
static void moment_libs(struct trace *t, struct moment_fill *mf)
{
	struct acct_moment *m = mf->m;
	struct group *g, *gt;
	/* by library: the libraries are few, a list will do */
	m->libs = xcalloc(HASH_COUNT(mf->groups), sizeof(*m->libs));
	HASH_ITER(hh, mf->groups, g, gt)
	{
		const char *lib = trace_library(t, g->stack_id);
		size_t k = 0;
		while (k < m->nlibs && strcmp(m->libs[k].library, lib) != 0)
			k++;
		if (k == m->nlibs)
			m->libs[m->nlibs++] = (struct acct_lib){lib, 0, 0};
		m->libs[k].bytes += g->bytes;
		m->libs[k].count += g->count;
		HASH_DEL(mf->groups, g);
		free(g);
	}
	for (size_t i = 1; i < m->nlibs; i++)
		for (size_t j = i;
		     j > 0 && (m->libs[j - 1].bytes < m->libs[j].bytes ||
			       (m->libs[j - 1].bytes == m->libs[j].bytes &&
				strcmp(m->libs[j - 1].library, m->libs[j].library) > 0));
		     j--) {
			struct acct_lib x = m->libs[j];
			m->libs[j] = m->libs[j - 1];
			m->libs[j - 1] = x;
		}
}

/* What is live on the device at the end of the pass. */
static void snapshot_end(struct acct_pass *p, struct acct_moment *m, int64_t ordinal,
			 uint64_t time_ns)
{
	struct moment_fill mf = {m, NULL};
	m->have = true;
	m->time_ns = time_ns;
	GMT_EACH_SPACE(sp)
	{
		struct rp_live *l, *lt;
		RP_EACH(p->rp, sp, l, lt)
		{
			if (l->bucket != BK_DEVICE || l->device != ordinal)
				continue;
			const struct api_info *ai = api_lookup(l->api);
			bool big = ai && ai->kind == GMT_KIND_DEVICE && l->size > PK_BIG;
			moment_add(&mf, l->stack_id, l->api, l->size, 1, big,
				   big ? (PK_PAGE - l->size % PK_PAGE) % PK_PAGE : 0);
		}
	}
	moment_libs(p->a->t, &mf);
	const struct ctx_sum *cs = ctx_now(p, ordinal);
	m->contexts = cs->contexts;
	m->contexts_live = cs->live;
	m->contexts_unmeasured = cs->unmeasured;
}

/* What was live on the device at its peak (none: m->have stays false). */
static void snapshot_peak(struct acct_pass *p, const struct peakset *ps, struct acct_moment *m,
			  int64_t ordinal)
{
	const struct replay *rp = p->rp;
	for (size_t i = 0; i < rp->ndevs; i++) {
		if (rp->devs[i].ordinal != ordinal || !rp->devs[i].lv.peak_seq)
			continue;
		struct moment_fill mf = {m, NULL};
		m->have = true;
		m->time_ns = rp->devs[i].lv.peak_time_ns;
		peakset_each(ps, ordinal, moment_add, &mf);
		moment_libs(p->a->t, &mf);
		const struct peak_extra *x = &p->extra[i];
		m->until_ns = x->until_ns;
		m->contexts = x->ctx.contexts;
		m->contexts_live = x->ctx.live;
		m->contexts_unmeasured = x->ctx.unmeasured;
	}
}

/* acct_event's rare parts, out of line so that the per-event path saves
 * no registers: an allocation's stack not seen yet, a device new to the
 * pass, a new peak. */
static __attribute__((noinline)) void stack_first_seen(struct acct_pass *p, uint64_t id)
{
	bool bit = id < SEEN_BITS;
	if (bit && !p->seen_bits)
		p->seen_bits = xcalloc(SEEN_BITS / 8, 1);
	struct stack_seen *s = NULL;
	if (!bit || !(p->seen_bits[id / 8] & (1u << (id % 8))))
		HASH_FIND(hh, p->alloc_stacks, &id, sizeof(id), s);
	else
		s = p->alloc_stacks; /* seen: any non-NULL will do */
	if (bit)
		p->seen_bits[id / 8] |= (uint8_t)(1u << (id % 8));
	if (!s) {
		s = xcalloc(1, sizeof(*s));
		s->stack_id = id;
		HASH_ADD(hh, p->alloc_stacks, stack_id, sizeof(s->stack_id), s);
	}
}

static __attribute__((noinline)) void extra_grow(struct acct_pass *p, const struct replay *rp)
{
	p->extra = xrealloc(p->extra, rp->ndevs * sizeof(*p->extra));
	memset(p->extra + p->nextra, 0, (rp->ndevs - p->nextra) * sizeof(*p->extra));
	p->nextra = rp->ndevs;
}

/* acct_event's loop over the devices from device i on. */
static void extra_from(struct acct_pass *p, const struct gmt_event *e, size_t i)
{
	const struct replay *rp = p->rp;
	for (; i < rp->ndevs; i++) {
		const struct rp_level *lv = &rp->devs[i].lv;
		struct peak_extra *x = &p->extra[i];
		if (lv->peak_seq != x->seq) { /* a new peak, at this event */
			x->seq = lv->peak_seq;
			x->until_ns = 0;
			x->ctx = *ctx_now(p, rp->devs[i].ordinal);
		} else {
			plateau_step(x, lv, e->time_ns);
		}
	}
}

/* acct_event whole, for the events that need more than its fast path. */
static __attribute__((noinline)) void acct_event_all(struct acct_pass *p, const struct gmt_event *e,
						     const struct api_info *ai)
{
	const struct replay *rp = p->rp;
	if (ai && (ai->op == GMT_OP_CTX_CREATE || ai->op == GMT_OP_CTX_DESTROY))
		ctx_event(p, e, ai);
	if (ai && ai->op == GMT_OP_ALLOC && !gmt_failed(e->result, e->flags) &&
	    replay_kind_bucket(ai->kind, e->aux) >= 0) { /* trace_alloc_bucket(e) >= 0 */
		stack_first_seen(p, e->stack_id);
		p->vmm_creates += ai->kind == GMT_KIND_VMM_PHYS;
	}
	if (p->nextra < rp->ndevs)
		extra_grow(p, rp);
	extra_from(p, e, 0);
}

/* What acct_event_all does, on a path with only tail calls (no registers
 * saved): anything rare (a context event, a stack not seen yet, a device
 * new to the pass, a new peak) goes out of line. */
void acct_event(struct acct *a, const struct gmt_event *e)
{
	struct acct_pass *p = a->pass;
	const struct replay *rp = p->rp;
	const struct api_info *ai = api_lookup(e->api);
	if (p->nextra < rp->ndevs ||
	    (ai && (ai->op == GMT_OP_CTX_CREATE || ai->op == GMT_OP_CTX_DESTROY))) {
		acct_event_all(p, e, ai);
		return;
	}
	if (ai && ai->op == GMT_OP_ALLOC && !gmt_failed(e->result, e->flags) &&
	    replay_kind_bucket(ai->kind, e->aux) >= 0) {
		uint64_t id = e->stack_id;
		if (id >= SEEN_BITS || !p->seen_bits ||
		    !(p->seen_bits[id / 8] & (1u << (id % 8)))) {
			acct_event_all(p, e, ai);
			return;
		}
		p->vmm_creates += ai->kind == GMT_KIND_VMM_PHYS;
	}
	for (size_t i = 0; i < rp->ndevs; i++) {
		const struct rp_level *lv = &rp->devs[i].lv;
		struct peak_extra *x = &p->extra[i];
		if (lv->peak_seq != x->seq) {
			extra_from(p, e, i);
			return;
		}
		plateau_step(x, lv, e->time_ns);
	}
}

/* The sample for a moment: of the device's samples (this process's usage
 * when NVML reported it, else the whole device's), the highest taken within
 * ACCT_WINDOW_NS after the moment; else the nearest in time. For the peak,
 * only samples taken in its plateau count (the highest of them): one from
 * after the memory was freed would make the peak look unexplained by minus
 * the freed bytes. */
uint64_t acct_nvml_inconsistent(const struct trace *t, int64_t ordinal, bool process)
{
	const struct trace_device *td = trace_device(t, ordinal);
	uint64_t total = td ? td->total_bytes : 0, worst = 0;
	for (size_t i = 0; i < t->nsamples; i++) {
		const struct trace_sample *s = &t->samples[i];
		if (s->device != ordinal || (process && !s->process_known))
			continue;
		uint64_t v = process ? s->process_used_bytes : s->used_bytes;
		uint64_t tot = total ? total : s->total_bytes;
		if (tot && v > tot && v > worst)
			worst = v;
	}
	return worst;
}

static void pick_sample(const struct trace *t, struct acct_moment *m, int64_t ordinal, bool peak)
{
	bool process = false;
	for (size_t i = 0; i < t->nsamples; i++)
		process |= t->samples[i].device == ordinal && t->samples[i].process_known;
	m->nvml_process = process;
	if ((m->nvml_dropped = acct_nvml_inconsistent(t, ordinal, process)))
		return; /* not nvidia-smi's figure: none of them is used */
	const struct trace_sample *best = NULL, *near = NULL;
	uint64_t near_d = UINT64_MAX;
	for (size_t i = 0; i < t->nsamples; i++) {
		const struct trace_sample *s = &t->samples[i];
		if (s->device != ordinal || (process && !s->process_known))
			continue;
		uint64_t v = process ? s->process_used_bytes : s->used_bytes;
		if (peak && (s->time_ns < m->time_ns || (m->until_ns && s->time_ns >= m->until_ns)))
			continue;
		if (s->time_ns >= m->time_ns &&
		    (peak || s->time_ns - m->time_ns <= ACCT_WINDOW_NS) &&
		    (!best || v > (process ? best->process_used_bytes : best->used_bytes)))
			best = s;
		uint64_t dist =
		    s->time_ns > m->time_ns ? s->time_ns - m->time_ns : m->time_ns - s->time_ns;
		if (dist <= near_d) { /* the later of two as near */
			near_d = dist;
			near = s;
		}
	}
	if (!best)
		best = near;
	if (!best) {
		m->unsampled = peak && t->nsamples > 0;
		return;
	}
	m->nvml = true;
	m->nvml_process = process;
	m->smi = process ? best->process_used_bytes : best->used_bytes;
	m->sample_time_ns = best->time_ns;
	m->sample_reason = best->reason;
}

static void reconcile(struct acct_moment *m)
{
	if (!m->nvml)
		return;
	m->unexplained = (int64_t)m->smi - (int64_t)m->traced - (int64_t)m->contexts;
	m->flagged = m->unexplained > 0 && (uint64_t)m->unexplained > ACCT_FLAG_BYTES &&
		     (double)m->unexplained > ACCT_FLAG_SHARE * (double)m->smi;
}

/* NVML's reading of a context wanders by a few MiB between samples. */
#define ACCT_CTX_SLACK (4ull << 20)

/* ---- likely routes ------------------------------------------------------ */

static void add_route(struct acct_dev *d, const char *key, const char *text, int score,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void add_route(struct acct_dev *d, const char *key, const char *text, int score,
		      const char *fmt, ...)
{
	d->routes = xrealloc(d->routes, (d->nroutes + 1) * sizeof(*d->routes));
	struct acct_route *r = &d->routes[d->nroutes++];
	r->key = key;
	r->text = text;
	r->score = score;
	r->evidence = xrealloc(NULL, MAX_EVIDENCE);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->evidence, MAX_EVIDENCE, fmt, ap);
	va_end(ap);
}

static bool has_word(const char *s, const char *const *words)
{
	for (size_t i = 0; words[i]; i++)
		if (strcasestr(s, words[i]))
			return true;
	return false;
}

static const char *env_get(const struct trace *t, const char *key)
{
	for (size_t i = 0; i < t->nenv; i++)
		if (strcmp(t->env[i].key, key) == 0)
			return t->env[i].value;
	return NULL;
}

/* Libraries that carry a static CUDA runtime (the framework table's):
 * their allocations reach the driver through cuGetProcAddress, never
 * through libcudart. By file name: a vendored copy counts too. */
static bool static_runtime_lib(const char *base)
{
	return gmt_frameworks[fw_of_library(base)].static_runtime;
}

static int route_cmp(const void *a, const void *b)
{
	const struct acct_route *x = a, *y = b;
	return y->score - x->score;
}

/* Notes about lookups the hooks could not follow. */
static void route_missed_lookup(const struct trace *t, struct acct_dev *d)
{
	static const char *const lookup_words[] = {
	    "lookup",	"dlsym",   "dlvsym",	"GetProcAddress", "EntryPoint", "entry point",
	    "DEEPBIND", "dlmopen", "unwrapped", "not followed",	  "unhooked",	NULL};
	size_t nlook = 0;
	const char *first_note = NULL;
	for (size_t i = 0; i < t->nnotes; i++)
		if (has_word(t->notes[i], lookup_words) && nlook++ == 0)
			first_note = t->notes[i];
	if (nlook)
		add_route(d, "missed_lookup",
			  "an entry-point lookup the hooks could not follow: memory allocated "
			  "through a function we never wrapped",
			  90, "the trace notes \"%.300s\"%s", first_note,
			  nlook > 1 ? " (and more notes like it)" : "");
}

static void route_before_tracer(struct trace *t, struct acct_dev *d, const struct acct_moment *m,
				uint64_t gap)
{
	char b1[32], b2[32], b3[32], b4[32], b5[32];
	for (size_t i = 0; i < t->nsamples; i++) {
		const struct trace_sample *s = &t->samples[i];
		if (s->device != d->ordinal || (m->nvml_process && !s->process_known))
			continue;
		uint64_t v = m->nvml_process ? s->process_used_bytes : s->used_bytes;
		/* The library's first sample is taken as the trace file is made,
		 * inside the first traced call, which may have just created the
		 * context (seen on an H100: 518 MiB, all of it the context). Only
		 * usage beyond that context's cost points before the tracer. */
		uint64_t ctx = d->first_event_ctx;
		if (s->time_ns <= t->first_time_ns && v > ctx + ACCT_CTX_SLACK)
			add_route(d, "before_tracer",
				  m->nvml_process
				      ? "memory taken before the tracer loaded, or by another "
					"process sharing this process's context (MPS)"
				      : "other processes on the device (NVML gave only the "
					"device's usage)",
				  2 * (v - ctx) >= gap ? 80 : 40,
				  "the first NVML sample (%s) already showed %s, %s more than the "
				  "contexts' %s, before the first traced event (%s)",
				  trace_fmt_time(b1, trace_rel(t, s->time_ns)), fmt_size(b2, v),
				  fmt_size(b4, v - ctx), fmt_size(b5, ctx),
				  trace_fmt_time(b3, trace_rel(t, t->first_time_ns)));
		break;
	}
}

/* Libraries with a static runtime that allocated nothing we saw. */
static void route_static_runtime(struct acct_pass *p, struct acct_dev *d)
{
	struct trace *t = p->a->t;
	char libs[MAX_EVIDENCE] = "";
	size_t nlibs = 0, len = 0;
	const char *charged = NULL; /* one that did allocate through our hooks */
	for (size_t i = 0; i < t->nmods; i++) {
		const char *base = t->mods[i].library;
		if (!base || !static_runtime_lib(base))
			continue;
		bool allocated = false;
		struct stack_seen *s, *st;
		HASH_ITER(hh, p->alloc_stacks, s, st)
		{
			if (strcmp(trace_library(t, s->stack_id), base) == 0) {
				allocated = true;
				break;
			}
		}
		if (allocated && !charged)
			charged = base;
		if (allocated || strstr(libs, base))
			continue;
		nlibs++;
		if (len + strlen(base) + 3 < sizeof(libs) - 8)
			len += (size_t)snprintf(libs + len, sizeof(libs) - len, "%s%s",
						len ? ", " : "", base);
	}
	/* Frameworks load many such libraries and use few (PyTorch: cuFFT,
	 * cuRAND, cuSOLVER...): idle ones are weak evidence, and weaker still
	 * where another one's allocations show the route is hooked. */
	if (nlibs)
		add_route(d, "static_runtime",
			  "a library with its own static CUDA runtime allocating through a route "
			  "the hooks missed",
			  charged ? 30 : 70,
			  "loaded with no traced allocation charged to %s: %s%s%s%s",
			  nlibs > 1 ? "them" : "it", libs, charged ? " (but allocations of " : "",
			  charged ? charged : "",
			  charged ? ", which reaches the driver the same way, were traced)" : "");
}

/* Page rounding and pools' reserves: traced bytes that nvidia-smi counts higher. */
static void route_rounding(struct acct_dev *d, const struct acct_moment *m, uint64_t gap)
{
	char b1[32], b2[32];
	if (m->rounding)
		add_route(d, "granularity",
			  "allocation granularity: nvidia-smi counts whole 2 MiB pages",
			  2 * m->rounding >= gap ? 75 : 30,
			  "%" PRIu64 " allocations over 1 MiB live then; rounding each up to 2 MiB "
			  "pages adds %s",
			  m->big_allocs, fmt_size(b1, m->rounding));

	/* A pool keeps what was freed up to its release threshold (PyTorch's
	 * cudaMallocAsync backend sets it to the maximum): nvidia-smi then counts
	 * the pool's high-water mark, at least the stream-ordered bytes live at
	 * the device's peak (seen on an H100: 1.43 GiB unexplained at the end,
	 * 854 MiB stream-ordered at the peak, 65 MiB at the end). */
	uint64_t async_hw = d->peak.async > m->async ? d->peak.async : m->async;
	if (async_hw)
		add_route(d, "pool_reserve",
			  "stream-ordered pools hold more than they hand out (the pool's reserve)",
			  2 * async_hw >= gap ? 75 : 50,
			  "%s in stream-ordered allocations live then, %s at the device's peak; "
			  "a pool keeps freed memory up to its release threshold",
			  fmt_size(b1, m->async), fmt_size(b2, d->peak.async));
}

/* What the environment says: NCCL's cuMem buffers, module loading. */
static void route_environment(struct acct_pass *p, struct acct_dev *d)
{
	struct trace *t = p->a->t;
	const char *cumem = env_get(t, "NCCL_CUMEM_ENABLE");
	if (cumem && strcmp(cumem, "0") != 0 && !p->vmm_creates)
		add_route(d, "nccl_cumem",
			  "NCCL buffers from cuMem (VMM) that we did not see created", 60,
			  "NCCL_CUMEM_ENABLE=%.64s and no cuMemCreate traced", cumem);

	/* Module code lands after the context's cost was measured either way:
	 * lazily at a kernel's first launch, or eagerly as each library loaded
	 * later registers its kernels (on an H100, PyTorch's unexplained rest
	 * was 112 MiB lazy and 442 MiB eager, NCCL's 268 MiB and 72 MiB). */
	const char *lazy = env_get(t, "CUDA_MODULE_LOADING");
	if (d->ctx_measured && (!lazy || strcasecmp(lazy, "LAZY") == 0))
		add_route(d, "lazy_loading",
			  "module code loaded lazily, after the context's cost was measured", 35,
			  "%s",
			  lazy ? "CUDA_MODULE_LOADING=LAZY"
			       : "CUDA_MODULE_LOADING unset: lazy loading is the default "
				 "since CUDA 12.2");
	else if (d->ctx_measured)
		add_route(d, "module_code",
			  "module code of libraries loaded after the context was created", 35,
			  "CUDA_MODULE_LOADING=%.32s: each library loads all its kernels when it "
			  "is loaded, after the context's cost was measured",
			  lazy);
}

static void find_routes(struct acct_pass *p, struct acct_dev *d)
{
	struct trace *t = p->a->t;
	const struct acct_moment *m = d->peak.flagged ? &d->peak : &d->end;
	uint64_t gap = (uint64_t)m->unexplained;
	route_missed_lookup(t, d);
	route_before_tracer(t, d, m, gap);
	route_static_runtime(p, d);
	route_rounding(d, m, gap);
	route_environment(p, d);
	add_route(d, "driver",
		  "driver-internal memory: kernels' local memory, printf and malloc heaps, graph "
		  "memory",
		  10, "%s",
		  d->nroutes ? "always possible" : "nothing in the trace points elsewhere");
	if (d->nroutes > 1)
		qsort(d->routes, d->nroutes, sizeof(*d->routes), route_cmp);
}

/* ---- computing ---------------------------------------------------------- */

static void pass_free(struct acct_pass *p)
{
	struct ctx_live *c, *ct;
	HASH_ITER(hh, p->ctxs, c, ct)
	{
		HASH_DEL(p->ctxs, c);
		free(c);
	}
	struct stack_seen *s, *st;
	HASH_ITER(hh, p->alloc_stacks, s, st)
	{
		HASH_DEL(p->alloc_stacks, s);
		free(s);
	}
	free(p->ctx_now);
	free(p->extra);
	free(p->seen_bits);
	free(p);
}

static int dev_cmp(const void *a, const void *b)
{
	const struct acct_dev *x = a, *y = b;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

void acct_begin(struct acct *a, struct trace *t, struct replay *rp)
{
	memset(a, 0, sizeof(*a));
	a->t = t;
	struct acct_pass *p = xcalloc(1, sizeof(*p));
	p->a = a;
	p->rp = rp;
	a->pass = p;
}

uint64_t acct_contexts_now(const struct acct *a, int64_t ordinal)
{
	const struct acct_pass *p = a->pass;
	for (size_t i = 0; p && i < p->nctx_now; i++)
		if (p->ctx_now[i].ordinal == ordinal)
			return p->ctx_now[i].contexts;
	return 0;
}

static void fill_cache(const struct counters_set *set, int64_t ordinal, struct acct_moment *m)
{
	const struct counters_series *s = counters_for_device(set, ordinal);
	const struct counters_point *p = counters_for_moment(s, m->time_ns, m->device);
	if (!p || !(p->has & CNT_ALLOCATED))
		return;
	m->cache = (struct acct_cache){
	    .known = true,
	    .has_reserved = p->has & CNT_RESERVED,
	    .api = s->api,
	    .device_name = s->device_name,
	    .time_ns = p->time_ns,
	    .reserved = p->reserved,
	    .allocated = p->allocated,
	};
}

void acct_end(struct acct *a, const struct peakset *ps)
{
	struct acct_pass *p = a->pass;
	struct trace *t = a->t;
	if (!t->nsamples)
		a->nvml_why = t->nvml_missing ? "NVML could not be used (see the note in the trace)"
			      : t->hdr.version < 2
				  ? "a format 1 trace: written before NVML sampling existed"
				  : "the trace has no NVML samples (sampling was off, or the "
				    "process ended before the first one)";
	for (size_t i = 0; i < t->ndevs; i++)
		adev(a, t->devs[i].ordinal);
	for (size_t i = 0; i < p->rp->ndevs; i++)
		adev(a, p->rp->devs[i].ordinal);
	if (a->ndevs > 1)
		qsort(a->devs, a->ndevs, sizeof(*a->devs), dev_cmp);
	uint64_t end = trace_end_ns(t);
	for (size_t i = 0; i < a->ndevs; i++) {
		struct acct_dev *d = &a->devs[i];
		const struct trace_device *td = trace_device(t, d->ordinal);
		d->name = td ? td->name : "";
		d->total = td ? td->total_bytes : 0;
		snapshot_end(p, &d->end, d->ordinal, end);
		snapshot_peak(p, ps, &d->peak, d->ordinal);
	}
	for (size_t i = 0; i < a->ndevs; i++) {
		struct acct_dev *d = &a->devs[i];
		for (size_t k = 0; k < t->nsamples; k++)
			d->nsamples += t->samples[k].device == d->ordinal;
		if (!d->peak.have) { /* never any device bytes: the start stands in */
			d->peak.time_ns = t->first_time_ns;
			d->peak.libs = xcalloc(1, sizeof(*d->peak.libs));
		}
		pick_sample(t, &d->peak, d->ordinal, true);
		pick_sample(t, &d->end, d->ordinal, false);
		reconcile(&d->peak);
		reconcile(&d->end);
		if (d->peak.flagged || d->end.flagged)
			find_routes(p, d);
	}
	struct counters_set set;
	counters_load(t, &set);
	for (size_t i = 0; i < a->ndevs && set.n; i++) {
		fill_cache(&set, a->devs[i].ordinal, &a->devs[i].peak);
		fill_cache(&set, a->devs[i].ordinal, &a->devs[i].end);
	}
	counters_free(&set);
	pass_free(p);
	a->pass = NULL;
}

static void on_event(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	acct_event(ctx, e);
}

int acct_compute(struct acct *a, struct trace *t)
{
	struct replay rp;
	struct peakset ps;
	replay_init(&rp);
	peakset_attach(&ps, &rp);
	acct_begin(a, t, &rp);
	int rc = trace_replay(t, &rp, on_event, a);
	acct_end(a, &ps);
	peakset_free(&ps);
	replay_free(&rp);
	return rc;
}

void acct_free(struct acct *a)
{
	if (a->pass) /* begun, never ended */
		pass_free(a->pass);
	for (size_t i = 0; i < a->ndevs; i++) {
		free(a->devs[i].peak.libs);
		free(a->devs[i].end.libs);
		for (size_t k = 0; k < a->devs[i].nroutes; k++)
			free(a->devs[i].routes[k].evidence);
		free(a->devs[i].routes);
	}
	free(a->devs);
	memset(a, 0, sizeof(*a));
}
