/* The oom aggregator's judgement (oom.h): a failure's case from its
 * figures, the verdict over failures, and the places where a driver-level
 * trace cannot see an out-of-memory error. docs/reports.md, "oom", lists
 * the rules with their sources (/work/shared/notes/frameworks.md). */
#include "analysis/oom.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/frameworks.h"
#include "analysis/fwhist.h"
#include "analysis/report-base.h"

/* A back-off (BFC's 0.9x, cacheInfo's halving) follows at once. */
#define BACKOFF_NS 50000000ull
/* A preallocated pool: one device allocation of at least this share of
 * the device beside its contexts (JAX takes 75% of the total; TF the free
 * memory but a reserve, 60% of a 4 GiB device), nearly all the process's
 * peak, and no other request half its size (a PyTorch activation of half
 * the device comes again). */
#define PREALLOC_SHARE	    0.5
#define PREALLOC_PEAK_SHARE 0.8
#define PREALLOC_RIVAL	    0.5

const char *const oom_case_name[OOM_NCASES] = {
    [OOM_NOT_AN_OOM] = "not-an-oom",
    [OOM_RECOVERED] = "recovered-by-retry",
    [OOM_EXCEEDS_TOTAL] = "exceeds-device-total",
    [OOM_FRAGMENTATION] = "fragmentation",
    [OOM_LIMIT] = "limit",
    [OOM_THIS_PROCESS] = "this-process",
    [OOM_OTHER_PROCESSES] = "other-processes",
    [OOM_UNKNOWN] = "unknown",
};

/* Failed calls that are not out of device memory; true when judged. */
static bool judge_not_oom(struct oom_failure *o)
{
	const struct gmt_event *e = &o->e;
	const struct api_info *a = api_lookup(e->api);
	char b1[32];
	if (!o->device) {
		const char *what = a && a->kind == GMT_KIND_VMM_VA     ? "address space, not memory"
				   : a && a->kind == GMT_KIND_MANAGED  ? "managed memory"
				   : a && a->kind == GMT_KIND_VMM_PHYS ? "memory on the host"
				   : a && a->kind == GMT_KIND_HOST_REGISTERED
				       ? "registered host memory"
				   : a && a->kind == GMT_KIND_IPC ? "another process's memory"
								  : "pinned host memory";
		snprintf(o->why, sizeof(o->why),
			 "%s asks for %s: its failure is not device memory running out",
			 api_name(e->api), what);
		return true;
	}
	if (!o->oom_result) {
		const char *rn = result_name(e->api, e->result);
		snprintf(o->why, sizeof(o->why),
			 "the result %s (%" PRIu64 ") is not out-of-memory: a probe, a fallback or "
			 "a wrong argument, not memory running out",
			 rn ? rn : "?", e->result);
		return true;
	}
	const struct oom_next *n = &o->next;
	if (!n->seen || !n->ok || !n->same_api || n->size > e->size ||
	    n->time_ns - e->time_ns > OOM_RETRY_NS)
		return false;
	char b2[32], b3[32], b4[32];
	if (n->size == e->size) {
		o->kase = OOM_RECOVERED;
		snprintf(
		    o->why, sizeof(o->why),
		    "the same %s request succeeded %s later, after %" PRIu64
		    " device free%s (%s) on this thread: the framework emptied its cache and "
		    "retried (PyTorch, CuPy); not a failure of the program, but each one costs a "
		    "synchronisation",
		    fmt_size(b1, e->size), rb_dur(b2, (int64_t)(n->time_ns - e->time_ns)),
		    n->freed_count, n->freed_count == 1 ? "" : "s", fmt_size(b3, n->freed));
		return true;
	}
	if ((double)n->size >= OOM_BACKOFF_MIN * (double)e->size &&
	    n->time_ns - e->time_ns <= BACKOFF_NS) {
		snprintf(o->why, sizeof(o->why),
			 "a smaller request, %s (%.0f%% of %s), succeeded %s later: an allocator "
			 "backing off (TensorFlow/XLA BFC growth) or probing for a size (cuDNN's "
			 "cacheInfo), not a failure of the program",
			 fmt_size(b1, n->size), 100.0 * (double)n->size / (double)e->size,
			 fmt_size(b4, e->size), rb_dur(b2, (int64_t)(n->time_ns - e->time_ns)));
		return true;
	}
	return false;
}

/* "68.1 MiB allocated + 518 MiB contexts and module code", or NVML's. */
static const char *this_text(char *buf, size_t size, const struct oom_failure *o)
{
	char b1[32], b2[32], b3[32], b[1][32];
	if (o->dropped && o->from_meminfo)
		snprintf(buf, size,
			 "%s, what the device had in use (total - free; %s traced allocations); %s "
			 "%s is more than the device's total: inconsistent, not used",
			 fmt_size(b1, o->this_process), fmt_size(b2, o->held),
			 o->dropped_nvml ? "NVML's per-process" : "traced + contexts",
			 fmt_size(b3, o->dropped));
	else if (o->dropped)
		snprintf(buf, size,
			 "%s: %s traced allocations + %s contexts and module code; NVML's "
			 "per-process %s is more than the device's total: inconsistent, not used",
			 fmt_size(b1, o->this_process), fmt_size(b2, o->held),
			 fmt_size(b[0], o->contexts), fmt_size(b3, o->dropped));
	else if (o->nvml_process)
		snprintf(
		    buf, size,
		    "%s per NVML: %s traced allocations, %s contexts and module code, the rest "
		    "untraced",
		    fmt_size(b1, o->this_process), fmt_size(b2, o->held),
		    fmt_size(b3, o->contexts));
	else
		snprintf(buf, size, "%s: %s traced allocations + %s contexts and module code",
			 fmt_size(b1, o->this_process), fmt_size(b2, o->held),
			 fmt_size(b3, o->contexts));
	return buf;
}

void oom_judge(struct oom_failure *o)
{
	char b1[32], b2[32], b3[32], b4[32], who[320];
	const struct gmt_event *e = &o->e;
	uint64_t req = e->size;
	o->kase = OOM_NOT_AN_OOM;
	if (judge_not_oom(o))
		return;
	if (o->total_known && req > o->total) {
		o->kase = OOM_EXCEEDS_TOTAL;
		snprintf(o->why, sizeof(o->why),
			 "the request, %s, is larger than the device's total memory, %s: it cannot "
			 "succeed on this GPU even when it is empty; look at the size asked for "
			 "(a shape or a unit), not at what is using memory",
			 fmt_size(b1, req), fmt_size(b2, o->total));
		return;
	}
	this_text(who, sizeof(who), o);
	if (!o->free_known) {
		bool full = o->total_known && o->this_process + req > o->total;
		o->kase = full ? OOM_THIS_PROCESS : OOM_UNKNOWN;
		if (full)
			snprintf(
			    o->why, sizeof(o->why),
			    "free memory unknown (no MEMINFO record, no NVML sample), but this "
			    "process held %s; with the %s asked it exceeds the device's %s",
			    who, fmt_size(b1, req), fmt_size(b2, o->total));
		else
			snprintf(
			    o->why, sizeof(o->why),
			    "free memory unknown (no MEMINFO record, no NVML sample); this process "
			    "held %s of the device's %s",
			    who, o->total_known ? fmt_size(b1, o->total) : "(unknown total)");
		return;
	}
	uint64_t fr = o->free_bytes, short_by = req > fr ? req - fr : 0;
	char ot[120];
	bool others_more = o->others > o->this_process;
	if (!short_by) { /* the case names the larger holder */
		o->kase = others_more ? OOM_OTHER_PROCESSES : OOM_THIS_PROCESS;
		snprintf(o->why, sizeof(o->why),
			 "%s free of %s after the failure, enough for the %s asked: memory was "
			 "freed meanwhile or no free range was large enough; this process held %s, "
			 "%s",
			 fmt_size(b1, fr), fmt_size(b2, o->total), fmt_size(b3, req), who,
			 oom_others_text(ot, sizeof(ot), o->others));
		return;
	}
	if (others_more && o->others >= short_by) {
		o->kase = OOM_OTHER_PROCESSES;
		snprintf(o->why, sizeof(o->why),
			 "%s free of %s, %s asked; other processes held %s, more than this process "
			 "(%s): without them it would have fit",
			 fmt_size(b1, fr), fmt_size(b2, o->total), fmt_size(b3, req),
			 fmt_size(b4, o->others), who);
		return;
	}
	o->kase = OOM_THIS_PROCESS;
	if (!o->others)
		snprintf(o->why, sizeof(o->why),
			 "%s free of %s, %s asked; this process held %s; no other process held "
			 "any: this process's own memory left too little",
			 fmt_size(b1, fr), fmt_size(b2, o->total), fmt_size(b3, req), who);
	else
		snprintf(o->why, sizeof(o->why),
			 "%s free of %s, %s asked; this process held %s; %s%s", fmt_size(b1, fr),
			 fmt_size(b2, o->total), fmt_size(b3, req), who,
			 oom_others_text(ot, sizeof(ot), o->others),
			 o->others < short_by ? ", too little to matter: without them it would "
						"still not fit"
					      : "");
}

const char *oom_others_text(char *buf, size_t size, uint64_t others)
{
	char b[32];
	bool reserve = others && others < OOM_RESERVE_MAX;
	snprintf(buf, size, "%s %s%s", reserve ? "the driver's reserve" : "other processes",
		 fmt_size(b, others),
		 reserve ? " (too little for another process's CUDA context)" : "");
	return buf;
}

const char *oom_verdict(const struct oom_result *const *rs, size_t n)
{
	bool recovered = false, failed = false, caught = false, hidden = false;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < rs[i]->nfails; k++) {
			const struct oom_failure *o = &rs[i]->fails[k];
			failed = true;
			if (!oom_final(o)) /* an error is its last attempt */
				continue;
			if (o->kase == OOM_RECOVERED)
				recovered = true;
			else if (o->kase != OOM_NOT_AN_OOM && o->caught)
				caught = true;
			else if (o->kase != OOM_NOT_AN_OOM)
				return oom_case_name[o->kase];
		}
	for (size_t i = 0; i < n; i++) {
		failed |= rs[i]->fails_total > 0;
		hidden |= rs[i]->hidden;
	}
	return hidden	   ? "oom-hidden"
	       : caught	   ? "caught"
	       : recovered ? oom_case_name[OOM_RECOVERED]
	       : failed	   ? oom_case_name[OOM_NOT_AN_OOM]
			   : "none";
}

static bool unrecovered(const struct oom_failure *o)
{
	return oom_final(o) && o->kase != OOM_RECOVERED && o->kase != OOM_NOT_AN_OOM && !o->caught;
}

uint64_t oom_unrecovered(const struct oom_result *r, bool has_device, int64_t device,
			 const char **kase)
{
	uint64_t n = 0;
	*kase = "none";
	for (size_t i = 0; i < r->nfails; i++) {
		const struct oom_failure *o = &r->fails[i];
		if (!unrecovered(o) || (has_device && o->e.device != device))
			continue;
		if (!n++)
			*kase = oom_case_name[o->kase];
	}
	if (!has_device && r->fails_total > OOM_MAX) { /* past the kept ones: the totals */
		n = 0;
		for (int c = 0; c < OOM_NCASES; c++)
			n += c != OOM_RECOVERED && c != OOM_NOT_AN_OOM ? r->cases[c] : 0;
	}
	return n;
}

static struct oom_blind *blind_add(struct oom_result *r, const char *key)
{
	if (r->nblind == OOM_MAX_BLIND)
		return NULL;
	struct oom_blind *b = &r->blind[r->nblind++];
	b->key = key;
	return b;
}

void oom_find_blind(const struct trace *t, struct oom_result *r)
{
	char b1[32], b2[32], b3[32];
	struct oom_blind *b;
	const struct gmt_event *big = &r->largest;
	uint64_t tot = big->size ? rb_dev_total(t, big->device) : 0;
	uint64_t room = tot > r->largest_ctx ? tot - r->largest_ctx : tot;
	if (room && (double)big->size >= PREALLOC_SHARE * (double)room &&
	    (double)big->size >= PREALLOC_PEAK_SHARE * (double)r->largest_peak &&
	    (double)r->second < PREALLOC_RIVAL * (double)big->size &&
	    (b = blind_add(r, "preallocated"))) {
		const char *pre = rb_env(t, "XLA_PYTHON_CLIENT_PREALLOCATE");
		const char *fra = rb_env(t, "XLA_CLIENT_MEM_FRACTION");
		if (!fra)
			fra = rb_env(t, "XLA_PYTHON_CLIENT_MEM_FRACTION");
		snprintf(
		    b->text, sizeof(b->text),
		    "one allocation of %s (%.0f%% of the device's %s) at %s, nearly all this "
		    "process held: a preallocating "
		    "allocator (TensorFlow, JAX/XLA BFC%s%s%s%s) serves later requests from it "
		    "without a driver call, so its out-of-memory errors, caught or not, are not "
		    "in the trace: `gpumemtrace run --framework-counters` records those that "
		    "reach the top of a thread (none the program catches: JAX and TensorFlow "
		    "have no out-of-memory observer); BFC logs every one on stderr (\"ran out "
		    "of memory trying to allocate\")",
		    fmt_size(b1, big->size), 100.0 * (double)big->size / (double)tot,
		    fmt_size(b2, tot), rb_time(b3, trace_rel(t, big->time_ns)),
		    pre ? "; XLA_PYTHON_CLIENT_PREALLOCATE=" : "", pre ? pre : "",
		    fra ? "; memory fraction " : "", fra ? fra : "");
	}
	const char *lim = rb_env(t, "CUPY_GPU_MEMORY_LIMIT");
	if ((lim || fw_loaded(t, GMT_FW_CUPY, false)) && (b = blind_add(r, "cupy-limit")))
		snprintf(
		    b->text, sizeof(b->text),
		    "%s%s%s: CuPy refuses an allocation over its limit (CUPY_GPU_MEMORY_LIMIT, "
		    "cupy.cuda.set_limit) without a driver call, so that out-of-memory error is "
		    "not in the trace: `gpumemtrace run --framework-counters` records one that "
		    "reaches the top of a thread, none the program catches (CuPy has no "
		    "out-of-memory observer and logs nothing)",
		    lim ? "CUPY_GPU_MEMORY_LIMIT=" : "CuPy is loaded", lim ? lim : "",
		    lim ? " is set" : "");
	/* without its cache PyTorch calls cudaMalloc for each tensor and checks no
	 * fraction (CUDACachingAllocator.cpp, forceUncachedAllocator): its OOMs
	 * are failed driver calls, in the trace */
	/* an allocator history's oom entries show them (fwoom_add_history) */
	if (fw_loaded(t, GMT_FW_PYTORCH, true) && !rb_env(t, "PYTORCH_NO_CUDA_MEMORY_CACHING") &&
	    !(t->fw && t->fw->entries) && (b = blind_add(r, "pytorch-fraction")))
		snprintf(
		    b->text, sizeof(b->text),
		    "PyTorch is loaded: over a memory fraction "
		    "(torch.cuda.set_per_process_memory_fraction, not recorded in the trace) it "
		    "raises OutOfMemoryError without a failing driver call, with the native "
		    "allocator and with backend:cudaMallocAsync alike");
}
