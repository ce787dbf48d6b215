/* explain's use of the framework's own counters (struct ex_counters, from
 * `run --framework-counters`): what driver calls cannot show, how much of
 * the cache tensors use. Each helper adds to a finding of
 * explain-findings.c or explain-verdicts.c, or says how to get them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/counters.h"
#include "analysis/explain-int.h"
#include "analysis/report-base.h"

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* Either the counters' figure or the note saying how to get it; returns
 * whether the counters were there. */
bool ex_cnt_or_note(struct ex_finding *x, const struct ex_dev *d, const char *what)
{
	x->needs_counters = !d->counters.present;
	if (d->counters.present)
		return true;
	if (d->history) { /* no rerun to ask for: the snapshot's blocks say it */
		x->needs_counters = false;
		ex_ev(x, "fragmentation",
		      "PyTorch's own snapshot (its history) shows its blocks: how much of the "
		      "cache tensors use, and its free blocks");
		return false;
	}
	ex_ev(x, "", "%s", what);
	if (x->nev && strcmp(x->ev[x->nev - 1].text, what) == 0)
		x->ev[x->nev - 1].counters_hint = true;
	return false;
}

/* smi-breakdown: the framework's part split into tensors and cache free,
 * from the reading at the same moment as nvidia-smi's. held: the traced
 * bytes of the framework, its cache when no counter says. */
bool ex_cnt_split(const struct ex_dev *d, uint64_t held, uint64_t *tensors, uint64_t *free_b)
{
	const struct ex_counters *c = &d->counters;
	if (!c->present || !(c->has & CNT_ALLOCATED))
		return false;
	uint64_t a = d->smi_at_peak ? c->allocated : c->end_allocated;
	uint64_t r = d->smi_at_peak ? c->reserved : c->end_reserved;
	*tensors = a;
	*free_b = sub0(c->has & CNT_RESERVED ? r : held, a);
	return true;
}

/* torch-cache: tensors against segments at the peak and at the end. */
void ex_cnt_cache(struct ex_finding *x, const struct ex_dev *d)
{
	const struct ex_counters *c = &d->counters;
	char b[5][32], t1[32];
	if (!ex_cnt_or_note(x, d, "how much of the cache tensors use (allocated against reserved)"))
		return;
	ex_ev(x, "summary",
	      "%s at %s (the peak): tensors %s of %s reserved; %s free in the cache, %s of it "
	      "inactive in split segments (the fragmentation)",
	      c->api, rb_time(t1, (int64_t)c->peak_ns), fmt_size(b[0], c->allocated),
	      fmt_size(b[1], c->reserved), fmt_size(b[2], sub0(c->reserved, c->allocated)),
	      fmt_size(b[3], c->inactive_split));
	ex_ev(x, "summary",
	      "at the end (%s): tensors %s of %s reserved, %s free in the cache; the run's "
	      "peaks: %s allocated, %s reserved",
	      rb_time(t1, (int64_t)c->end_ns), fmt_size(b[0], c->end_allocated),
	      fmt_size(b[1], c->end_reserved),
	      fmt_size(b[2], sub0(c->end_reserved, c->end_allocated)),
	      fmt_size(b[3], c->peak_allocated), fmt_size(b[4], c->peak_reserved));
}

/* torch-cache: which remedy the counters point to, "" without them. */
const char *ex_cnt_cache_advice(const struct ex_dev *d, char *buf, size_t size)
{
	const struct ex_counters *c = &d->counters;
	char b[3][32];
	buf[0] = '\0';
	if (!c->present || !(c->has & CNT_RESERVED))
		return buf;
	uint64_t end_free = sub0(c->end_reserved, c->end_allocated);
	if (c->inactive_split && 4 * c->inactive_split >= c->reserved)
		snprintf(buf, size,
			 "Here %s of the %s cache sat in split segments at the peak (%.0f%%): "
			 "fragmentation, which expandable_segments:True or max_split_size_mb "
			 "reduces.",
			 fmt_size(b[0], c->inactive_split), fmt_size(b[1], c->reserved),
			 pct(c->inactive_split, c->reserved));
	else if (c->end_reserved && 2 * end_free >= c->end_reserved)
		snprintf(buf, size,
			 "Here %s of the %s cache held no tensor at the end: empty_cache() would "
			 "return it to other processes.",
			 fmt_size(b[0], end_free), fmt_size(b[1], c->end_reserved));
	else
		snprintf(buf, size,
			 "Here tensors used %s of the %s cache at the peak (%.0f%%): the cache "
			 "follows the tensors' peak (%s), so lower that peak to lower it.",
			 fmt_size(b[0], c->allocated), fmt_size(b[1], c->reserved),
			 pct(c->allocated, c->reserved), fmt_size(b[2], c->peak_allocated));
	return buf;
}

/* bfc-growth: how much of the last region the peak needed. sum: all the
 * regions, last: the last one. */
void ex_cnt_regions(struct ex_finding *x, const struct ex_dev *d, uint64_t sum, uint64_t last)
{
	const struct ex_counters *c = &d->counters;
	char b[4][32];
	if (!ex_cnt_or_note(x, d, "how much of the last region was in use at the peak"))
		return;
	uint64_t p = c->peak_allocated, before = sum - last;
	ex_ev(x, "summary", "%s: the peak in use was %s of the %s in regions (%.0f%%)", c->api,
	      fmt_size(b[0], p), fmt_size(b[1], sum), pct(p, sum));
	if (p > before)
		ex_ev(x, "summary",
		      "the regions before the last hold %s: at least %s of the last region (%s) "
		      "was in use at the peak",
		      fmt_size(b[0], before), fmt_size(b[1], p - before), fmt_size(b[2], last));
	else
		ex_ev(x, "summary",
		      "the peak fitted in the regions before the last (%s): the last region (%s) "
		      "was taken because no free chunk was large enough (fragmentation)",
		      fmt_size(b[0], before), fmt_size(b[1], last));
}

/* preallocation: what the program really used of what was taken, and the
 * setting that would hold it with a fifth to spare. */
void ex_cnt_used(struct ex_finding *x, const struct ex_recog *r, const struct ex_dev *d,
		 char *advice, size_t size)
{
	const struct ex_counters *c = &d->counters;
	char b[4][32];
	advice[0] = '\0';
	if (!ex_cnt_or_note(x, d, "what the program really used inside it"))
		return;
	uint64_t p = c->peak_allocated;
	ex_ev(x, "summary", "%s: the program's peak in use was %s, %.0f%% of the %s taken", c->api,
	      fmt_size(b[0], p), pct(p, d->biggest), fmt_size(b[1], d->biggest));
	if (c->has & CNT_LIMIT)
		ex_ev(x, "summary", "the allocator's limit: %s", fmt_size(b[0], c->limit));
	if (!d->total || !p)
		return;
	uint64_t need = p + p / 5; /* rounded up: to whole MiB, to hundredths */
	if (need >= d->total)
		return;
	if (r->fw == FW_TF)
		snprintf(advice, size,
			 "The program used at most %s: memory_limit=%" PRIu64
			 " (MiB) holds it with a fifth to spare.",
			 fmt_size(b[0], p), (need + (1 << 20) - 1) >> 20);
	else {
		char v[16], fr[200];
		snprintf(v, sizeof(v), ".%02" PRIu64, (100 * need + d->total - 1) / d->total);
		snprintf(advice, size,
			 "The program used at most %s: %s holds it with a fifth to spare.",
			 fmt_size(b[0], p), explain_fraction_advice(r, v, fr, sizeof(fr)));
	}
}

/* An OOM with the reading its observer took: what the cache held then. */
void ex_cnt_oom(struct ex_finding *x, const struct ex_oom *o)
{
	char b[4][32];
	if (!o->counters)
		return;
	uint64_t free_b = sub0(o->c_reserved, o->c_allocated);
	ex_ev(x, "oom",
	      "the framework's counters at the OOM: tensors %s of %s reserved; %s reserved but "
	      "unallocated (%s in split segments)%s",
	      fmt_size(b[0], o->c_allocated), fmt_size(b[1], o->c_reserved), fmt_size(b[2], free_b),
	      fmt_size(b[3], o->c_inactive_split),
	      free_b >= o->size ? ": more than the request, so fragmentation stood in the way"
				: "");
}
