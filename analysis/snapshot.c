/* The live set at one moment, and device-memory kinds: see snapshot.h. */
#include "analysis/snapshot.h"

#include <string.h>

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
	uint64_t target; /* replay ordinal to stop after; 0: never stop */
	uint64_t when_ns;
	bool done;
};

static void apply_until(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct stop_at *s = ctx;
	if (s->done)
		return;
	replay_apply(&s->rp, e);
	s->when_ns = e->time_ns;
	if (s->target && s->rp.seq == s->target)
		s->done = true;
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
	GMT_EACH_SPACE(sp)
	{
		struct rp_live *l, *tmp;
		RP_EACH(&s.rp, sp, l, tmp)
		{
			if (dev_kind_of(l) >= 0 && l->size)
				fn(ctx, l);
		}
	}
	rc = -1;
out:
	replay_free(&s.rp);
	return rc;
}
