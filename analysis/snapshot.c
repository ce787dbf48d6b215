/* The live set at one moment, and device-memory kinds: see snapshot.h. */
#include <stdlib.h>
#include <string.h>

#include "analysis/snapshot.h"

const char *const dev_kind_label[DK_COUNT] = {"cudaMalloc / cuMemAlloc", "stream-ordered pools",
					      "VMM (cuMemCreate)"};
const char *const dev_kind_key[DK_COUNT] = {"device", "stream_ordered", "vmm"};

int dev_kind_of(const struct rp_live *l)
{
	if (l->bucket != BK_DEVICE)
		return -1;
	const struct api_info *a = api_lookup(l->api);
	if (!a)
		return DK_DEVICE;
	return a->kind == GMT_KIND_ASYNC      ? DK_ASYNC
	       : a->kind == GMT_KIND_VMM_PHYS ? DK_VMM
					      : DK_DEVICE;
}

struct stop_at {
	struct replay rp;
	uint64_t target;  /* replay ordinal to stop after; 0: never stop */
	uint64_t stop_ns; /* stop before an event after this; 0: never */
	bool at_fail;	  /* stop after the first failed device allocation */
	uint64_t when_ns;
	bool done, failed;
};

static void apply_until(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct stop_at *s = ctx;
	if (s->done)
		return;
	if (s->stop_ns && e->time_ns > s->stop_ns) {
		s->done = true;
		return;
	}
	replay_apply(&s->rp, e);
	s->when_ns = e->time_ns;
	if (s->target && s->rp.seq == s->target)
		s->done = true;
	const struct api_info *a = s->at_fail ? api_lookup(e->api) : NULL;
	if (a && a->op == GMT_OP_ALLOC && gmt_failed(e->result, e->flags) &&
	    gmt_device_memory(a->kind, e->aux))
		s->done = s->failed = true;
}

static void each_live(struct stop_at *s, snapshot_fn fn, void *ctx)
{
	GMT_EACH_SPACE(sp)
	{
		struct rp_live *l, *tmp;
		RP_EACH(&s->rp, sp, l, tmp)
		{
			if (dev_kind_of(l) >= 0 && l->size)
				fn(ctx, l);
		}
	}
}

int snapshot_live_oom(struct trace *t, uint64_t fw_oom_ns, snapshot_fn fn, void *ctx,
		      uint64_t *when_ns, bool *found)
{
	struct stop_at s = {.at_fail = true};
	replay_init(&s.rp);
	int rc = trace_replay(t, NULL, apply_until, &s);
	*found = rc < 0 && s.failed;
	if (rc < 0 && !s.failed && fw_oom_ns) {
		replay_free(&s.rp);
		memset(&s, 0, sizeof(s));
		replay_init(&s.rp);
		s.stop_ns = fw_oom_ns;
		rc = trace_replay(t, NULL, apply_until, &s);
		s.when_ns = fw_oom_ns;
		*found = rc < 0;
	}
	if (*found) {
		*when_ns = s.when_ns;
		each_live(&s, fn, ctx);
	}
	replay_free(&s.rp);
	return rc;
}

int snapshot_live(struct trace *t, bool at_end, snapshot_fn fn, void *ctx, uint64_t *when_ns)
{
	struct stop_at s = {0};
	replay_init(&s.rp);
	int rc = trace_replay(t, NULL, apply_until, &s);
	if (rc >= 0)
		goto out;
	if (!at_end) {
		uint64_t target = s.rp.buckets[BK_DEVICE].peak_seq;
		replay_free(&s.rp);
		memset(&s, 0, sizeof(s));
		replay_init(&s.rp);
		s.target = target;
		if (target && (rc = trace_replay(t, NULL, apply_until, &s)) >= 0)
			goto out;
	}
	*when_ns = at_end ? trace_end_ns(t) : s.when_ns;
	each_live(&s, fn, ctx);
	rc = -1;
out:
	replay_free(&s.rp);
	return rc;
}

/* ---- the same in one read of the file ---------------------------------- */

/* What was freed after the device bucket's peak but allocated by it, per
 * (device, stack, api), tagged with the peak it counts for: a new peak makes
 * older tags stale (analysis/peakset.c does the same per device). */
struct snap_group {
	UT_hash_handle hh;
	struct snap_key {
		int64_t device;
		uint64_t stack_id;
		uint64_t api;
	} k;
	uint64_t epoch, bytes;
};

struct snap_read {
	struct replay rp;
	struct snap_group *groups;
	uint64_t last_peak, when_ns;
	bool at_end;
};

static void on_end_of(void *ctx, const struct rp_live *l, bool counted)
{
	struct snap_read *s = ctx;
	uint64_t peak = s->rp.buckets[BK_DEVICE].peak_seq;
	if (counted || s->at_end || dev_kind_of(l) < 0 || !l->size || !peak || l->seq > peak)
		return;
	struct snap_key k = {l->device, l->stack_id, l->api};
	struct snap_group *g;
	HASH_FIND(hh, s->groups, &k, sizeof(k), g);
	if (!g) {
		g = xcalloc(1, sizeof(*g));
		g->k = k;
		HASH_ADD(hh, s->groups, k, sizeof(g->k), g);
	}
	if (g->epoch != peak) {
		g->epoch = peak;
		g->bytes = 0;
	}
	g->bytes += l->size;
}

static void note_peak_time(void *ctx, const struct gmt_event *e, struct replay *rp)
{
	struct snap_read *s = ctx;
	if (rp->buckets[BK_DEVICE].peak_seq != s->last_peak) {
		s->last_peak = rp->buckets[BK_DEVICE].peak_seq;
		s->when_ns = e->time_ns;
	}
}

int snapshot_live_read(struct trace *t, const char *cmd, const char *path, bool at_end,
		       snapshot_fn fn, void *ctx, uint64_t *when_ns)
{
	struct snap_read s = {.at_end = at_end};
	replay_init(&s.rp);
	s.rp.on_change = on_end_of;
	s.rp.on_change_ctx = &s;
	int rc = trace_open_replay(t, cmd, path, &s.rp, note_peak_time, &s);
	if (rc < 0) {
		uint64_t peak = at_end ? UINT64_MAX : s.rp.buckets[BK_DEVICE].peak_seq;
		*when_ns = at_end ? trace_end_ns(t) : s.when_ns;
		GMT_EACH_SPACE(sp)
		{
			struct rp_live *l, *tmp;
			RP_EACH(&s.rp, sp, l, tmp)
			{
				if (dev_kind_of(l) >= 0 && l->size && l->seq <= peak)
					fn(ctx, l);
			}
		}
		struct snap_group *g, *gt;
		HASH_ITER(hh, s.groups, g, gt)
		{
			if (g->epoch != peak || !g->bytes)
				continue;
			struct rp_live l = {0};
			l.device = g->k.device;
			l.stack_id = g->k.stack_id;
			l.api = (uint32_t)g->k.api;
			l.size = g->bytes;
			l.bucket = BK_DEVICE;
			fn(ctx, &l);
		}
	}
	struct snap_group *g, *gt;
	HASH_ITER(hh, s.groups, g, gt)
	{
		HASH_DEL(s.groups, g);
		free(g);
	}
	replay_free(&s.rp);
	return rc;
}

/* ---- every event, with the live memory by kind ------------------------- */

struct walk {
	snapshot_event_fn fn;
	void *ctx;
	struct replay rp;
	uint64_t kinds[SNAPSHOT_DEVS][DK_COUNT];
	bool changed[SNAPSHOT_DEVS];
};

static void walk_change(void *ctx, const struct rp_live *l, bool counted)
{
	struct walk *w = ctx;
	int k = dev_kind_of(l);
	if (k < 0 || l->device < 0 || l->device >= SNAPSHOT_DEVS)
		return;
	uint64_t *v = &w->kinds[l->device][k];
	*v = counted ? *v + l->size : *v - (l->size < *v ? l->size : *v);
	w->changed[l->device] = true;
}

static void walk_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct walk *w = ctx;
	replay_apply(&w->rp, e);
	w->fn(w->ctx, e, (const uint64_t(*)[DK_COUNT])w->kinds, w->changed);
	memset(w->changed, 0, sizeof(w->changed));
}

static void plain_event(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct walk *w = ctx;
	w->fn(w->ctx, e, NULL, NULL);
}

int snapshot_walk(struct trace *t, bool live, snapshot_event_fn fn, void *ctx)
{
	struct walk *w = xcalloc(1, sizeof(*w));
	w->fn = fn;
	w->ctx = ctx;
	replay_init(&w->rp);
	w->rp.on_change = walk_change;
	w->rp.on_change_ctx = w;
	int rc = trace_replay(t, NULL, live ? walk_event : plain_event, w);
	replay_free(&w->rp);
	free(w);
	return rc;
}

/* ---- device memory by stack ----------------------------------------------- */

static struct snapshot_stack *stack_get(struct snapshot_stack **stacks, uint64_t stack_id)
{
	struct snapshot_stack *s;
	HASH_FIND(hh, *stacks, &stack_id, sizeof(stack_id), s);
	if (!s) {
		s = xcalloc(1, sizeof(*s));
		s->stack_id = stack_id;
		HASH_ADD(hh, *stacks, stack_id, sizeof(s->stack_id), s);
	}
	return s;
}

static void stack_alloc(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	const struct api_info *a = api_lookup(e->api);
	if (!a || a->op != GMT_OP_ALLOC || gmt_failed(e->result, e->flags) ||
	    replay_kind_bucket(a->kind, e->aux) != BK_DEVICE)
		return;
	struct snapshot_stack *s = stack_get(ctx, e->stack_id);
	s->v[0]++;
	s->v[1] += (int64_t)e->size;
}

static void stack_live(void *ctx, const struct rp_live *l)
{
	struct snapshot_stack *s = stack_get(ctx, l->stack_id);
	s->v[2]++;
	s->v[3] += (int64_t)l->size;
}

int snapshot_stacks(struct trace *t, bool at_end, struct snapshot_stack **out)
{
	*out = NULL;
	int rc = trace_replay(t, NULL, stack_alloc, out);
	uint64_t when = 0;
	if (rc < 0)
		rc = snapshot_live(t, at_end, stack_live, out, &when);
	return rc;
}

void snapshot_stacks_free(struct snapshot_stack **stacks)
{
	struct snapshot_stack *s, *tmp;
	HASH_ITER(hh, *stacks, s, tmp)
	{
		HASH_DEL(*stacks, s);
		free(s);
	}
}
