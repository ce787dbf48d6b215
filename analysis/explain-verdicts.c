/* explain's findings from the verdicts (explain-int.h): leak or warm-up,
 * from growth; each case of OOM, from oom, with what to do in each. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/counters.h"
#include "analysis/explain-int.h"
#include "analysis/report-base.h"

static const char *per_s(char *buf, double v)
{
	char b[32];
	snprintf(buf, 48, "%s%s/s", v < 0 ? "-" : "+", fmt_size(b, (uint64_t)(v < 0 ? -v : v)));
	return buf;
}

void ex_growth(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
	       struct ex_findings *out)
{
	if (!d->peak || !d->verdict)
		return;
	char b[4][48], c[80], t1[32];
	ex_cmd(c, sizeof(c), "growth", f, d);
	if (strcmp(d->verdict, "leak") == 0) {
		double secs = (double)f->duration_ns / 1e9;
		uint64_t est = d->rate_s > 0 ? (uint64_t)(d->rate_s * secs) : 0;
		struct ex_finding *x =
		    ex_add(out, "leak", d->ordinal, est < d->peak ? est : d->peak);
		if (d->has_rate_step)
			snprintf(b[0], sizeof(b[0]), "%s per step, ",
				 fmt_size(b[3], (uint64_t)(d->rate_step > 0 ? d->rate_step : 0)));
		else
			b[0][0] = '\0';
		ex_answer(x, "memory keeps growing after the warm-up: %s%s, last raised at %s",
			  b[0], per_s(b[1], d->rate_s),
			  d->leak_site[0] ? d->leak_site : "an unknown site");
		ex_ev(x, c, "%s", d->verdict_reason);
		if (d->iterations)
			ex_ev(x, c, "%" PRIu64 " iterations found in the trace", d->iterations);
		ex_cmd(c, sizeof(c), "leaks", f, d);
		ex_ev(x, c, "what is still live at the end, by the stack that allocated it");
		ex_change(x,
			  "Find what %s keeps alive every step: a list that grows, a loss "
			  "summed as a tensor (use loss.item() or .detach()), outputs kept for "
			  "later, a cache keyed by step.",
			  d->leak_site[0] ? d->leak_site : "the site");
		return;
	}
	struct ex_finding *x;
	if (strcmp(d->verdict, "no-leak") == 0) {
		x = ex_add(out, "warm-up", d->ordinal, 0);
		ex_answer(x, "not a leak: memory grew until %s (the warm-up), then stayed level",
			  rb_time(t1, (int64_t)d->warmup_end_ns));
		ex_change(x, "Nothing to change: the peak is set in the warm-up (the first steps, "
			     "the optimizer's state, the libraries' workspaces).");
	} else {
		x = ex_add(out, "growth-undetermined", d->ordinal, 0);
		ex_answer(x, "a leak cannot be told from a warm-up in this trace");
		ex_change(x, "A longer run, or a range around each step (NVTX, or gpumemtrace's "
			     "marker API) gives the growth per step.");
	}
	ex_ev(x, c, "%s", d->verdict_reason);
	(void)r;
}

static const char *oom_advice(const struct ex_recog *r, const char *kase)
{
	if (strcmp(kase, "exceeds-device-total") == 0)
		return "No setting makes it fit: check the size computed at the site (a wrong "
		       "shape or dtype, an unbounded batch); split the work, or use a larger "
		       "GPU or several.";
	if (strcmp(kase, "unknown") == 0)
		return "Without a free-memory reading at the failure the trace cannot tell whose "
		       "memory stood in the way: `gpumemtrace accounting` shows nvidia-smi's "
		       "figures near it; GPUMEMTRACE_SAMPLE_MS lower samples more often.";
	if (strcmp(kase, "other-processes") == 0)
		return "Another process held the memory: nvidia-smi "
		       "--query-compute-apps=pid,used_memory names it. A JAX or TensorFlow "
		       "process preallocates most of a GPU by default "
		       "(XLA_PYTHON_CLIENT_MEM_FRACTION, TF_FORCE_GPU_ALLOW_GROWTH); give each "
		       "process its own GPU with CUDA_VISIBLE_DEVICES.";
	if (r->fw == FW_PYTORCH)
		return "This process held the memory: a smaller batch, activation checkpointing "
		       "(torch.utils.checkpoint), mixed precision; if the error says much is "
		       "\"reserved by PyTorch but unallocated\", "
		       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. `gpumemtrace top` "
		       "names the sites that held it.";
	return "This process held the memory: `gpumemtrace top` names the sites that held it; "
	       "free what is no longer needed before the failing step, or make the work "
	       "smaller.";
}

/* The framework's counters of its retries and OOMs (the first device's
 * that has them), or the note saying how to get them. */
static void retry_counters(struct ex_finding *x, const struct ex_facts *f, const struct ex_recog *r)
{
	for (size_t i = 0; i < f->ndevs; i++) {
		const struct ex_counters *c = &f->devs[i].counters;
		if (c->present && (c->has & CNT_RETRIES)) {
			ex_ev(x, "summary", "%s: num_alloc_retries %" PRIu64 ", num_ooms %" PRIu64,
			      c->api, c->alloc_retries, c->ooms);
			return;
		}
	}
	if (r->fw == FW_PYTORCH && f->ndevs)
		ex_cnt_or_note(x, &f->devs[0],
			       "every retry (num_alloc_retries), those no driver call shows too");
}

static void oom_retried(const struct ex_facts *f, const struct ex_recog *r, struct ex_findings *out)
{
	char b[3][32];
	uint64_t freed = 0;
	for (size_t i = 0; i < f->nooms; i++)
		if (strcmp(f->ooms[i].kase, "recovered-by-retry") == 0)
			freed += f->ooms[i].freed;
	/* the counters count retries a memory-fraction limit causes too, with
	 * no failing driver call */
	uint64_t n = f->counter_retries > f->retried ? f->counter_retries : f->retried;
	struct ex_finding *x = ex_add(out, "oom-retried", -1, freed);
	if (f->retried)
		ex_answer(x,
			  "%" PRIu64 " OOM%s recovered by the framework's retry: it freed its "
			  "cache and tried again. Not a failure of the program, but each retry "
			  "costs %s",
			  n, n == 1 ? " was" : "s were",
			  rb_dur(b[0], (int64_t)(f->retry_ns / f->retried)));
	else
		ex_answer(x,
			  "%" PRIu64 " allocation%s retried after the framework freed its cache "
			  "(its counters say; no driver call failed, so a memory-fraction limit "
			  "refused them). Not a failure of the program, but each retry costs time",
			  n, n == 1 ? " was" : "s were");
	if (f->retried)
		ex_ev(x, "oom",
		      "%" PRIu64 " failed allocation%s followed by frees (%s in those "
		      "listed) and a successful retry of the same size",
		      f->retried, f->retried == 1 ? "" : "s", fmt_size(b[1], freed));
	retry_counters(x, f, r);
	ex_change(x, "%s",
		  r->fw == FW_PYTORCH
		      ? "The cache is emptied and refilled each time: lower the peak so no "
			"retry is needed (a smaller batch, "
			"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True); "
			"torch.cuda.memory_stats()['num_alloc_retries'] counts them."
		      : "Lower the peak so no retry is needed; a pool limit "
			"(cupy.get_default_memory_pool().set_limit) makes the pool free "
			"earlier.");
}

/* Ways the trace cannot show an OOM at all (oom's notes): one finding. */
static void oom_blind(const struct ex_facts *f, struct ex_findings *out)
{
	struct ex_finding *x = ex_add(out, "oom-invisible", -1, 0);
	ex_answer(x, "an OOM here may make no driver call, and this trace would not show it");
	if (f->ooms_unseen) /* the framework's OOM observer saw what the driver did not */
		ex_answer(x,
			  "%" PRIu64 " OOM%s raised by the framework made no failing driver call: "
			  "its counters recorded %s, this trace's driver calls cannot",
			  f->ooms_unseen, f->ooms_unseen == 1 ? "" : "s",
			  f->ooms_unseen == 1 ? "it" : "them");
	for (size_t i = 0; i < f->nblind; i++)
		ex_ev(x, "oom", "%s", f->blind[i]);
	ex_change(x, "The framework's own error message is the record of such an OOM; the "
		     "settings named above decide when it happens.");
}

static const struct ex_dev *fdev_of(const struct ex_facts *f, int64_t device)
{
	for (size_t i = 0; i < f->ndevs; i++)
		if (f->devs[i].ordinal == device)
			return &f->devs[i];
	return f->devs;
}

void ex_ooms(const struct ex_facts *f, const struct ex_recog *r, struct ex_findings *out)
{
	if (f->nblind || f->ooms_unseen)
		oom_blind(f, out);
	static const char *const cases[] = {"exceeds-device-total", "other-processes",
					    "this-process", "unknown"};
	static const char *const ids[] = {"oom-exceeds-device-total", "oom-other-processes",
					  "oom-this-process", "oom-unknown"};
	if (f->retried || f->counter_retries)
		oom_retried(f, r, out);
	for (size_t k = 0; k < 4; k++) {
		const struct ex_oom *o = NULL;
		size_t n = 0;
		for (size_t i = 0; i < f->nooms; i++)
			if (strcmp(f->ooms[i].kase, cases[k]) == 0 && n++ == 0)
				o = &f->ooms[i];
		if (!o)
			continue;
		char b[4][32], t1[32];
		struct ex_finding *x = ex_add(out, ids[k], o->device, o->size);
		static const char *const whys[] = {
		    "larger than the whole device", "another process held the memory",
		    "this process held the memory",
		    "whose memory stood in the way is unknown (no free-memory reading then)"};
		const char *why = whys[k];
		char more[48] = "";
		if (n > 1)
			snprintf(more, sizeof(more), " (and %zu more like it)", n - 1);
		ex_answer(x, "%s of %s failed at %s: %s%s", o->api, fmt_size(b[0], o->size),
			  rb_time(t1, (int64_t)o->time_ns), why, more);
		if (o->meminfo)
			ex_ev(x, "oom", "free then: %s of %s; this process held %s, others %s",
			      fmt_size(b[0], o->free_bytes), fmt_size(b[1], o->total_bytes),
			      fmt_size(b[2], o->held), fmt_size(b[3], o->others));
		else
			ex_ev(x, "oom",
			      "this process held %s (no free-memory reading at the failure)",
			      fmt_size(b[0], o->held));
		ex_ev(x, "oom", "site: %s", o->site);
		if (o->counters)
			ex_cnt_oom(x, o);
		else if (r->fw == FW_PYTORCH && k == 2)
			ex_cnt_or_note(x, fdev_of(f, o->device),
				       "reserved and allocated at the OOM (its fragmentation)");
		ex_change(x, "%s", oom_advice(r, cases[k]));
	}
}
