/* nvidia-smi's figure for this process per device: see smi-footprint.h. */
#include "analysis/smi-footprint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/accounting.h"
#include "analysis/counters.h"
#include "analysis/report-base.h"
#include "common/events.h"

/* Stream-ordered allocations per device: live now, most ever. */
struct pool_pass {
	struct trace *t;
	struct replay rp;
	int64_t *dev;
	uint64_t *now, *most;
	size_t n;
};

static size_t pool_slot(struct pool_pass *p, int64_t device)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->dev[i] == device)
			return i;
	p->dev = xrealloc(p->dev, (p->n + 1) * sizeof(*p->dev));
	p->now = xrealloc(p->now, (p->n + 1) * sizeof(*p->now));
	p->most = xrealloc(p->most, (p->n + 1) * sizeof(*p->most));
	p->dev[p->n] = device;
	p->now[p->n] = p->most[p->n] = 0;
	return p->n++;
}

static void on_pool(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct pool_pass *p = ctx;
	const struct api_info *a = api_lookup(e->api);
	if (a && a->op == GMT_OP_FREE && !gmt_failed(e->result, e->flags)) {
		struct rp_live *l = replay_find(&p->rp, a->space, e->ptr);
		if (l && l->bucket == BK_DEVICE && api_lookup(l->api) &&
		    api_lookup(l->api)->kind == GMT_KIND_ASYNC) {
			size_t i = pool_slot(p, l->device);
			p->now[i] -= p->now[i] >= l->size ? l->size : p->now[i];
		}
	} else if (a && a->op == GMT_OP_ALLOC && a->kind == GMT_KIND_ASYNC &&
		   !gmt_failed(e->result, e->flags)) {
		size_t i = pool_slot(p, e->device);
		p->now[i] += e->size;
		if (p->now[i] > p->most[i])
			p->most[i] = p->now[i];
	}
	replay_apply(&p->rp, e);
}

static void nvml_peak(const struct trace *t, struct smi_footprint *s)
{
	uint64_t best = 0;
	for (size_t i = 0; i < t->nsamples; i++) {
		const struct trace_sample *x = &t->samples[i];
		if (x->device != s->device || !x->process_known)
			continue;
		s->nvml_samples++;
		best = x->process_used_bytes > best ? x->process_used_bytes : best;
	}
	if (!s->nvml_samples)
		return;
	if ((s->nvml_dropped = acct_nvml_inconsistent(t, s->device, true)))
		return; /* not nvidia-smi's figure: named, not used */
	s->source = SMI_NVML;
	s->bytes = best;
}

static void fw_peak(const struct counters_set *set, struct smi_footprint *s)
{
	const struct counters_series *c = counters_for_device(set, s->device);
	if (!c || !(c->has & (CNT_RESERVED | CNT_PEAK_RESERVED)))
		return;
	s->fw_known = true;
	s->fw_reserved = c->peak_reserved > c->max_reserved ? c->peak_reserved : c->max_reserved;
	s->fw_api = c->api;
}

int smi_footprint(struct trace *t, struct smi_footprint **out, size_t *n)
{
	struct acct a;
	int x = acct_compute(&a, t);
	struct pool_pass p = {.t = t};
	replay_init(&p.rp);
	int y = trace_replay(t, NULL, on_pool, &p);
	struct counters_set set;
	counters_load(t, &set);
	*out = xcalloc(a.ndevs + 1, sizeof(**out));
	*n = 0;
	for (size_t i = 0; i < a.ndevs; i++) {
		const struct acct_dev *d = &a.devs[i];
		struct smi_footprint *s = &(*out)[(*n)++];
		s->device = d->ordinal;
		size_t k = pool_slot(&p, d->ordinal);
		uint64_t at_peak = d->peak.async;
		s->traced = d->peak.traced;
		s->contexts = d->peak.contexts;
		s->pool_reserve = p.most[k] > at_peak ? p.most[k] - at_peak : 0;
		s->source = SMI_ESTIMATE;
		s->bytes = s->traced + s->contexts + s->pool_reserve;
		nvml_peak(t, s);
		fw_peak(&set, s);
	}
	counters_free(&set);
	free(p.dev);
	free(p.now);
	free(p.most);
	replay_free(&p.rp);
	acct_free(&a);
	return x >= 0 ? x : y;
}

const char *smi_source_text(const struct smi_footprint *s, char *buf, size_t size)
{
	char b1[32], b2[32], b3[32], b4[32];
	if (s->source == SMI_NVML) {
		snprintf(buf, size, "NVML's per-process peak, %zu sample%s", s->nvml_samples,
			 s->nvml_samples == 1 ? "" : "s");
		return buf;
	}
	int k = snprintf(buf, size,
			 "estimate: %s traced at the peak + %s contexts and module code + %s "
			 "pool reserve",
			 fmt_size(b1, s->traced), fmt_size(b2, s->contexts),
			 fmt_size(b3, s->pool_reserve));
	if (s->nvml_dropped && k > 0 && (size_t)k < size)
		snprintf(buf + k, size - (size_t)k,
			 "; NVML's per-process %s is more than the device: not used",
			 fmt_size(b4, s->nvml_dropped));
	else if (k > 0 && (size_t)k < size)
		snprintf(buf + k, size - (size_t)k, "; NVML did not sample this process");
	return buf;
}
