/* explain's findings from the verdicts (explain-int.h): leak or warm-up,
 * from growth; each case of OOM, from oom, with what to do in each. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/counters.h"
#include "analysis/explain-int.h"
#include "analysis/oom.h"
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
			snprintf(b[0], sizeof(b[0]), "%s per iteration, ",
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
	if (strcmp(d->verdict, "no-leak") == 0 && !d->iterations) {
		/* no steps to call a warm-up (one all_reduce, a script that runs
		 * once): say what was seen, not a training loop's story */
		x = ex_add(out, "warm-up", d->ordinal, 0);
		ex_answer(x, "no leak seen: memory rose until %s, then nothing more was held",
			  rb_time(t1, (int64_t)d->warmup_end_ns));
		ex_change(x, "Nothing to change for this run. It has no repeating steps (no loop "
			     "the trace could find, no NVTX range or marker), so it was judged on "
			     "its highest point over time: a leak per step shows only in a run of "
			     "several steps.");
	} else if (strcmp(d->verdict, "no-leak") == 0) {
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

/* Fragmentation inside a framework's cache or pool: what to change, for
 * its framework (sources: the PyTorch CUDA semantics notes, "Optimizing
 * memory usage with PYTORCH_ALLOC_CONF"; the JAX GPU memory allocation
 * page; TensorFlow's GPU guide; CuPy's memory management page;
 * frameworks.md §1.5, §2.1, §3). Settings in the names in force. */
static const char *frag_advice(char *buf, size_t size, const char *fw, const struct ex_recog *r)
{
	char es[400], fr[200];
	if (!strcmp(fw, "torch")) {
		snprintf(buf, size,
			 "Set %s: segments grow in place, so freed blocks merge instead of "
			 "staying split. Or max_split_size_mb:N in the same setting, with N below "
			 "the failing request, so large cached blocks are not split for small "
			 "ones. Only then a smaller batch. `gpumemtrace fragmentation` shows the "
			 "segments.",
			 explain_conf_advice(r, "expandable_segments:True", es, sizeof(es)));
	} else if (!strcmp(fw, "jax")) {
		snprintf(buf, size,
			 "XLA_PYTHON_CLIENT_ALLOCATOR=platform gives each buffer its own driver "
			 "allocation: no pool to fragment, at some speed. Or keep one "
			 "preallocated region (XLA_PYTHON_CLIENT_PREALLOCATE left on, a lower %s "
			 "if other processes share the GPU): BFC's free chunks merge only inside "
			 "a region, and growth mode's regions never merge.",
			 explain_fraction_advice(r, NULL, fr, sizeof(fr)));
	} else if (!strcmp(fw, "tensorflow")) {
		snprintf(
		    buf, size,
		    "TF_GPU_ALLOCATOR=cuda_malloc_async uses CUDA's stream-ordered pool instead "
		    "of BFC. Or preallocate (no TF_FORCE_GPU_ALLOW_GROWTH): BFC's free chunks "
		    "merge only inside a region, and growth mode's regions never merge.");
	} else if (!strcmp(fw, "cupy")) {
		snprintf(
		    buf, size,
		    "Allocate the largest arrays first, or call "
		    "cupy.get_default_memory_pool().free_all_blocks() between phases (it frees "
		    "only unsplit chunks); cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool()"
		    ".malloc) uses CUDA's stream-ordered pool instead.");
	} else {
		snprintf(buf, size,
			 "Free space inside the pool was in pieces too small: allocate "
			 "the largest buffers first, or use the framework's direct "
			 "allocator.");
	}
	return buf;
}

static const char *limit_advice(char *buf, size_t size, const struct ex_oom *o)
{
	if (!o->limit_knob && o->fw_source && !strcmp(o->fw_source, "tensorflow")) {
		snprintf(
		    buf, size,
		    "TensorFlow's pool is the free memory less a reserve for the system (225 "
		    "MiB to 1.8 GiB by GPU generation), and the device had more: "
		    "TF_DEVICE_MIN_SYS_MEMORY_IN_MB lowers the reserve, or "
		    "tf.config.set_logical_device_configuration(gpu, "
		    "[tf.config.LogicalDeviceConfiguration(memory_limit=MiB)]) sets the pool's "
		    "size; else make the work smaller.");
		return buf;
	}
	const char *knob = o->limit_knob ? o->limit_knob : "the limit";
	const char *fw = o->fw_source ? o->fw_source : "";
	bool older = o->limit_knob && !strcmp(o->limit_knob, "XLA_PYTHON_CLIENT_MEM_FRACTION");
	const char *how =
	    !strcmp(fw, "jax")
		? (older ? " (deprecated: XLA_CLIENT_MEM_FRACTION replaces it, and setting both is "
			   "an error), e.g. .90 when no other process needs the rest of the GPU"
			 : " (XLA_PYTHON_CLIENT_MEM_FRACTION in older JAX), e.g. .90 when no other "
			   "process needs the rest of the GPU")
	    : !strcmp(fw, "tensorflow") ? " in tf.config.set_logical_device_configuration"
					: "";
	snprintf(buf, size,
		 "The limit, %s, refused memory the device had: raise %s%s, or make the work "
		 "smaller. `gpumemtrace top` names the sites that held it.",
		 o->limit_what[0] ? o->limit_what : knob, knob, how);
	return buf;
}

static const char *working_set_advice(const char *fw)
{
	if (!strcmp(fw, "torch"))
		return "The tensors themselves needed the memory: a smaller batch, activation "
		       "checkpointing (torch.utils.checkpoint), mixed precision (torch.autocast). "
		       "`gpumemtrace top` names the sites that held it.";
	if (!strcmp(fw, "jax") || !strcmp(fw, "tensorflow"))
		return "The buffers themselves needed the memory: a smaller batch, "
		       "rematerialization (jax.checkpoint, tf.recompute_grad), bfloat16. "
		       "`gpumemtrace top` names the sites that held it.";
	if (!strcmp(fw, "cupy"))
		return "The arrays themselves needed the memory: del the ones no longer needed "
		       "before the large one (the pool reuses their blocks), or work in smaller "
		       "pieces.";
	return NULL;
}

static const char *oom_advice(char *buf, size_t size, const struct ex_facts *f,
			      const struct ex_recog *r, const struct ex_oom *o)
{
	const char *kase = o->kase, *fw = o->fw_source ? o->fw_source : "";
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
		       "process preallocates most of a GPU by default (XLA_CLIENT_MEM_FRACTION, "
		       "XLA_PYTHON_CLIENT_MEM_FRACTION in older JAX; TF_FORCE_GPU_ALLOW_GROWTH); "
		       "give each process its own GPU with CUDA_VISIBLE_DEVICES.";
	if (strcmp(kase, "fragmentation") == 0)
		return frag_advice(buf, size, fw, r);
	if (strcmp(kase, "limit") == 0)
		return limit_advice(buf, size, o);
	if (o->fw && working_set_advice(fw))
		return working_set_advice(fw);
	/* a cache or pool, and no figure of the framework's own: it may be
	 * either, and the wrong advice costs a day */
	char next[600];
	if (explain_oom_next(r, next, sizeof(next))) {
		char es[400], meanwhile[600] = " ";
		if (r->fw == FW_PYTORCH)
			snprintf(
			    meanwhile, sizeof(meanwhile),
			    " Meanwhile the error message says: when \"reserved by PyTorch but "
			    "unallocated\" is at least the request, set %s; else a smaller "
			    "batch, activation checkpointing, mixed precision.",
			    explain_conf_advice(r, "expandable_segments:True", es, sizeof(es)));
		snprintf(buf, size,
			 "%s's %s held the memory; whether its tensors filled it (the working set) "
			 "or its free space was in pieces too small (fragmentation) needs its own "
			 "figures: rerun with `gpumemtrace run --framework-counters`.%s%.300s",
			 r->fw_name, r->fw == FW_PYTORCH ? "cache" : "pool", meanwhile,
			 r->fw == FW_PYTORCH ? "" : next + strlen("next: "));
		return buf;
	}
	if (r->fw == FW_PYTORCH)
		return working_set_advice("torch");
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
	char es[400];
	if (r->fw == FW_PYTORCH)
		ex_change(x,
			  "The cache is emptied and refilled each time: lower the peak so no retry "
			  "is needed (a smaller batch, %s); "
			  "torch.cuda.memory_stats()['num_alloc_retries'] counts them.",
			  explain_conf_advice(r, "expandable_segments:True", es, sizeof(es)));
	else
		ex_change(x, "Lower the peak so no retry is needed; a pool limit "
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

/* The process ended badly with a pool framework loaded, and nothing in
 * the trace says why: the OOM may be inside the pool (oom.h, hidden). */
static void oom_hidden(const struct ex_facts *f, struct ex_findings *out)
{
	struct ex_finding *x = ex_add(out, "oom-hidden", -1, 0);
	x->rank = 1;
	ex_answer(x,
		  "the process ended abnormally (%s) while %s held its memory in a pool: an "
		  "out-of-memory error inside that pool makes no driver call, so this trace "
		  "cannot show whether one ended the run",
		  f->ending, f->pool_fw);
	ex_ev(x, "oom", "%s", f->hidden_text);
	for (size_t i = 0; i < f->nblind; i++)
		ex_ev(x, "oom", "%s", f->blind[i]);
	ex_change(x,
		  "Rerun with `gpumemtrace run --framework-counters -- ...`: it records the "
		  "framework's own out-of-memory error with its figures, and `gpumemtrace oom` "
		  "then names its case (fragmentation, a limit, the working set). Until then the "
		  "program's stderr has the framework's text (%s).",
		  !strcmp(f->pool_fw, "CuPy") ? "OutOfMemoryError"
		  : !strcmp(f->pool_fw, "TensorFlow")
		      ? "\"ran out of memory\", ResourceExhaustedError"
		      : "\"ran out of memory\", RESOURCE_EXHAUSTED");
}

static const struct ex_dev *fdev_of(const struct ex_facts *f, int64_t device)
{
	for (size_t i = 0; i < f->ndevs; i++)
		if (f->devs[i].ordinal == device)
			return &f->devs[i];
	return f->devs;
}

/* One OOM case's finding: its first failure, how many more. */
static void oom_case(const struct ex_facts *f, const struct ex_recog *r, const struct ex_oom *o,
		     size_t more, const char *id, const char *why, struct ex_findings *out)
{
	char b[4][32], t1[32], advice[1000];
	struct ex_finding *x = ex_add(out, id, o->device, o->size);
	x->rank = o->fatal;
	char tail[64] = "", tries[160] = "";
	if (more)
		snprintf(tail, sizeof(tail), " (and %zu more like it)", more);
	if (o->attempts > 1) /* one error: the allocator asked again after freeing */
		snprintf(tries, sizeof(tries),
			 " (its %" PRIu32 " failed calls from %s on are one error: the allocator "
			 "freed what it could and asked again)",
			 o->attempts, rb_time(t1, (int64_t)o->first_ns));
	if (o->fw_only)
		ex_answer(x, "%s raised an out-of-memory error for %s at %s%s: %s%s", o->fw_name,
			  fmt_size(b[0], o->size), rb_time(t1, (int64_t)o->time_ns),
			  o->caught ? ", which the program caught" : "", why, tail);
	else
		ex_answer(x, "%s of %s failed at %s%s%s: %s%s", o->api, fmt_size(b[0], o->size),
			  rb_time(b[1], (int64_t)o->time_ns),
			  o->caught ? " (the program caught the error)" : "", tries, why, tail);
	if (o->fw) {
		ex_ev(x, "oom", "%s", o->why);
		if (o->fw_message[0])
			ex_ev(x, "oom", "%s%s%s: %s", o->fw_name, o->fw_type[0] ? " " : "",
			      o->fw_type, o->fw_message);
	} else if (o->meminfo) {
		char ot[120];
		ex_ev(x, "oom", "free then: %s of %s; this process held %s, %s",
		      fmt_size(b[0], o->free_bytes), fmt_size(b[1], o->total_bytes),
		      fmt_size(b[2], o->held), oom_others_text(ot, sizeof(ot), o->others));
	} else {
		ex_ev(x, "oom", "this process held %s (no free-memory reading at the failure)",
		      fmt_size(b[0], o->held));
	}
	if (!o->fw_only)
		ex_ev(x, "oom", "site: %s", o->site);
	if (o->counters)
		ex_cnt_oom(x, o);
	else if (r->fw == FW_PYTORCH && !o->fw && !strcmp(o->kase, "this-process"))
		ex_cnt_or_note(x, fdev_of(f, o->device),
			       "reserved and allocated at the OOM (its fragmentation)");
	ex_change(x, "%s", oom_advice(advice, sizeof(advice), f, r, o));
}

void ex_ooms(const struct ex_facts *f, const struct ex_recog *r, struct ex_findings *out)
{
	if (f->hidden)
		oom_hidden(f, out);
	else if (f->nblind || f->ooms_unseen)
		oom_blind(f, out);
	static const char *const cases[] = {"exceeds-device-total", "fragmentation", "limit",
					    "other-processes",	    "this-process",  "unknown"};
	static const char *const ids[] = {
	    "oom-exceeds-device-total", "oom-fragmentation", "oom-limit",
	    "oom-other-processes",	"oom-this-process",  "oom-unknown"};
	static const char *const whys[] = {
	    "larger than the whole device",
	    "free space inside the framework's cache or pool was enough, but in pieces too small "
	    "(fragmentation)",
	    "a limit set below the device refused it",
	    "another process held the memory",
	    "this process held the memory",
	    "whose memory stood in the way is unknown (no free-memory reading then)"};
	if (f->retried || f->counter_retries)
		oom_retried(f, r, out);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct ex_oom *o = NULL;
		size_t n = 0;
		/* the finding shows the fatal failure of its case, else the first */
		for (size_t i = 0; i < f->nooms; i++)
			if (strcmp(f->ooms[i].kase, cases[k]) == 0 && n++ == 0)
				o = &f->ooms[i];
		for (size_t i = 0; i < f->nooms; i++)
			if (f->ooms[i].fatal && !strcmp(f->ooms[i].kase, cases[k]))
				o = &f->ooms[i];
		if (o)
			oom_case(f, r, o, n - 1, ids[k], whys[k], out);
	}
}

void ex_partial(const struct ex_facts *f, struct ex_findings *out)
{
	if (!f->partial)
		return;
	char what[200] = "";
	int n = 0;
	if (f->lost)
		n = snprintf(what, sizeof(what), "%" PRIu64 " allocation or free event%s lost",
			     f->lost, f->lost == 1 ? " was" : "s were");
	if (f->incomplete_why && n >= 0 && (size_t)n < sizeof(what))
		snprintf(what + n, sizeof(what) - (size_t)n, "%sthe trace is incomplete (%s)",
			 n ? ", and " : "", f->incomplete_why);
	struct ex_finding *x = ex_add(out, "partial-data", -1, 0);
	ex_answer(x,
		  "%s: allocations and frees are missing from it, so every figure below may be "
		  "short and a missing free can look like a leak",
		  what);
	if (f->incomplete_why)
		ex_ev(x, "dump",
		      "an incomplete trace ends where the process stopped writing: killed, "
		      "crashed, still running, or its disk full; it holds what happened up to "
		      "GPUMEMTRACE_FLUSH_MS (20 ms) before");
	if (f->lost)
		ex_ev(x, "dump",
		      "lost events: a thread's buffer was full for longer than "
		      "GPUMEMTRACE_FULL_WAIT_MS while the disk was slow; the trace counts them");
	ex_change(x, "%s",
		  f->lost ? "Rerun with a larger buffer per thread (GPUMEMTRACE_RING_KB=8192; "
			    "the default is 1024) on a disk that keeps up; `gpumemtrace check "
			    "--allow-lost` judges a trace with losses anyway."
			  : "Let the run finish (or trace the failing step alone) for whole "
			    "figures; the findings below cover what was written.");
}
