/* explain's findings, one function per question (explain-int.h). The
 * advice and figures follow ../shared/notes/frameworks.md; docs/questions.md
 * walks each. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/counters.h"
#include "analysis/explain-int.h"
#include "analysis/report-base.h"

/* What the framework's own figure is called, to compare with. */
static const char *fw_api(const struct ex_recog *r)
{
	switch (r->fw) {
	case FW_PYTORCH:
		if (r->mode == MODE_PT_NOCACHE) /* forceUncachedAllocator: no stats kept */
			return NULL;
		return "torch.cuda.memory_reserved() (the cache) and memory_allocated() (tensors)";
	case FW_JAX:
		return "jax.devices()[0].memory_stats() (pool_bytes, what BFC holds; bytes_in_use, "
		       "its live buffers)";
	case FW_TF:
		return "tf.config.experimental.get_memory_info('GPU:0')";
	case FW_CUPY:
		return "cupy.get_default_memory_pool().total_bytes()";
	default:
		return NULL;
	}
}

static const char *fw_part(const struct ex_recog *r)
{
	switch (r->mode) {
	case MODE_PT_CACHING:
	case MODE_PT_EXPANDABLE:
		return "PyTorch's cache";
	case MODE_PT_ASYNC:
	case MODE_TF_ASYNC:
		return "the framework's stream-ordered allocations";
	case MODE_BFC_PREALLOC:
	case MODE_BFC_GROWTH:
		return "the framework's BFC regions";
	case MODE_DIRECT:
		return "the program's allocations";
	default:
		return "the framework's allocations";
	}
}

/* What to do about a library's own memory (explain_lib_part's rows). */
static const char *lib_advice(int id)
{
	switch (id) {
	case GMT_FW_NCCL:
		return "NCCL's buffers: NCCL_BUFFSIZE (per channel and peer, 4 MiB by default) "
		       "and NCCL_MAX_NCHANNELS make them smaller, at a cost in bandwidth.";
	case GMT_FW_CUBLAS:
		return "cuBLAS's workspace: CUBLAS_WORKSPACE_CONFIG=:4096:8 (KiB:count per "
		       "handle and stream) sets its size; smaller can slow matrix products.";
	case GMT_FW_CUDNN:
		return "cuDNN's workspaces follow the algorithms chosen; "
		       "torch.backends.cudnn.benchmark=False tries fewer.";
	default:
		return NULL;
	}
}

/* What to do about one part of nvidia-smi's figure outside the framework:
 * PART_CONTEXTS, a library's row, or PART_UNEXPLAINED. */
enum { PART_CONTEXTS = -1, PART_UNEXPLAINED = GMT_FW_COUNT };
static const char *part_advice(int part, const char *route)
{
	if (part == PART_CONTEXTS)
		return "The CUDA context: one per process and device, its size set by the "
		       "driver and CUDA_MODULE_LOADING; CUDA_VISIBLE_DEVICES keeps a process off "
		       "GPUs it does not use.";
	if (part != PART_UNEXPLAINED && lib_advice(part))
		return lib_advice(part);
	if (strcmp(route, "pool_reserve") == 0)
		return "The unexplained part is likely the stream-ordered pool's reserve: see "
		       "the pool-reserve finding.";
	if (strcmp(route, "module_code") == 0 || strcmp(route, "lazy_loading") == 0)
		return "The unexplained part is likely module code (kernels loaded as first "
		       "used): code, not data; CUDA_MODULE_LOADING=LAZY (the default since CUDA "
		       "12.2) loads only the kernels used, EAGER all at start-up.";
	if (strcmp(route, "granularity") == 0)
		return "The unexplained part is likely page rounding: nvidia-smi counts whole "
		       "2 MiB pages. Nothing to change.";
	return "`gpumemtrace accounting` gives the evidence for each likely route of the "
	       "unexplained part.";
}

/* Advice on the two largest parts outside the framework (of 64 MiB or
 * more): the contexts, each library with memory of its own and advice,
 * the unexplained rest. */
static void smi_change(struct ex_finding *x, const struct ex_recog *r, const struct ex_dev *d,
		       const uint64_t *cls)
{
	const char *api = fw_api(r);
	size_t len = 0;
	if (api)
		len = (size_t)snprintf(x->change, sizeof(x->change),
				       "The framework's own figure is %s; it leaves out the rest.",
				       api);
	else if (r->mode == MODE_PT_NOCACHE)
		len = (size_t)snprintf(
		    x->change, sizeof(x->change),
		    "Without its cache (PYTORCH_NO_CUDA_MEMORY_CACHING) PyTorch counts nothing: "
		    "torch.cuda.memory_reserved() and memory_allocated() read 0, and each tensor "
		    "is its own cudaMalloc, which this trace shows; torch.cuda.mem_get_info() "
		    "gives the device's free memory.");
	struct {
		int part;
		uint64_t bytes;
	} parts[GMT_FW_COUNT + 1];
	size_t n = 0;
	parts[n++] = (typeof(parts[0])){PART_CONTEXTS, d->contexts};
	for (int id = 1; id < GMT_FW_COUNT; id++)
		if (lib_advice(id))
			parts[n++] = (typeof(parts[0])){id, cls[id]};
	parts[n++] =
	    (typeof(parts[0])){PART_UNEXPLAINED, d->unexplained > 0 ? (uint64_t)d->unexplained : 0};
	for (int k = 0; k < 2; k++) {
		size_t best = n;
		for (size_t i = 0; i < n; i++)
			if (parts[i].bytes >= (64ull << 20) &&
			    (best == n || parts[i].bytes > parts[best].bytes))
				best = i;
		if (best == n)
			break;
		const char *adv = part_advice(parts[best].part, d->route_key ? d->route_key : "");
		if (len < sizeof(x->change))
			len += (size_t)snprintf(x->change + len, sizeof(x->change) - len, "%s%s",
						len ? " " : "", adv);
		parts[best].bytes = 0;
	}
}

void ex_smi(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
	    struct ex_findings *out)
{
	if (!d->smi)
		return;
	char b[6][32], c[80];
	/* [0] the framework, [row] a library with memory of its own (NCCL,
	 * cuBLAS...: explain_lib_part), [GMT_FW_COUNT] the other libraries */
	uint64_t cls[GMT_FW_COUNT + 1] = {0};
	for (size_t i = 0; i < d->nlibs; i++)
		cls[explain_lib_part(d->libs[i].library)] += d->libs[i].bytes;
	if (!r->fw_module) { /* no framework's library: the program's allocations are its */
		cls[0] += cls[GMT_FW_COUNT];
		cls[GMT_FW_COUNT] = 0;
	}
	uint64_t others = 0;
	for (int k = 1; k <= GMT_FW_COUNT; k++)
		others += cls[k];
	struct ex_finding *x = ex_add(out, "smi-breakdown", d->ordinal, d->smi_bytes);
	const char *when = d->smi_at_peak ? "at the peak" : "at the end";
	int64_t u = d->unexplained;
	uint64_t tensors, cfree;
	char split[100] = "";
	bool counted = r->mode != MODE_DIRECT && ex_cnt_split(d, cls[0], &tensors, &cfree);
	if (counted) /* the framework's part, split by its own counters */
		snprintf(split, sizeof(split), " (tensors %s, free in its cache %s)",
			 fmt_size(b[0], tensors), fmt_size(b[1], cfree));
	ex_answer(x,
		  "nvidia-smi showed %s %s: %s held %s%s, other libraries %s, CUDA contexts %s, "
		  "and %s%s is unexplained",
		  fmt_size(b[0], d->smi_bytes), when, fw_part(r), fmt_size(b[1], cls[0]), split,
		  fmt_size(b[2], others), fmt_size(b[3], d->contexts), u < 0 ? "-" : "",
		  fmt_size(b[4], (uint64_t)(u < 0 ? -u : u)));
	ex_cmd(c, sizeof(c), "accounting", f, d);
	ex_ev(x, c, "nvidia-smi (%s) %s: %s; traced %s",
	      d->smi_process ? "this process" : "the whole device", when,
	      fmt_size(b[0], d->smi_bytes), fmt_size(b[1], d->smi_traced));
	ex_ev(x, c, "%s: %s", fw_part(r), fmt_size(b[0], cls[0]));
	for (int k = 1; k <= GMT_FW_COUNT; k++)
		if (cls[k])
			ex_ev(x, c, "%s: %s",
			      k == GMT_FW_COUNT ? "other libraries" : gmt_frameworks[k].name,
			      fmt_size(b[0], cls[k]));
	ex_ev(x, c, "CUDA contexts (with the module code loaded with them): %s",
	      fmt_size(b[0], d->contexts));
	if (u > 0)
		ex_ev(x, c, "unexplained: %s, likely %s", fmt_size(b[0], (uint64_t)u),
		      d->route_text ? d->route_text : "memory allocated where no hook sees it");
	if (counted)
		ex_ev(x, "summary", "of %s, tensors %s and free in the cache %s (%s %s)",
		      fw_part(r), fmt_size(b[0], tensors), fmt_size(b[1], cfree), d->counters.api,
		      when);
	else if (r->mode == MODE_PT_CACHING || r->mode == MODE_PT_EXPANDABLE ||
		 r->mode == MODE_BFC_PREALLOC || r->mode == MODE_BFC_GROWTH)
		ex_cnt_or_note(x, d, "how much of the framework's part its tensors use");
	smi_change(x, r, d, cls);
}

void ex_prealloc(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
		 struct ex_findings *out)
{
	if (r->mode != MODE_BFC_PREALLOC || !d->total || 2 * d->biggest < d->total)
		return;
	char b[4][32], t1[32], c[80];
	double share = 100.0 * (double)d->biggest / (double)d->total;
	struct ex_finding *x = ex_add(out, "preallocation", d->ordinal, d->biggest);
	if (r->fw == FW_JAX)
		ex_answer(x,
			  "JAX took %s, %.0f%% of the device's %s, in one allocation at start-up: "
			  "it preallocates %.0f%% of the device whatever the program needs",
			  fmt_size(b[0], d->biggest), share, fmt_size(b[1], d->total),
			  100 * r->fraction);
	else if (r->fw == FW_TF)
		ex_answer(x,
			  "TensorFlow took %s, %.0f%% of the device's %s, in one allocation: the "
			  "free memory less a reserve for the system (225 MiB to 1.8 GiB by GPU "
			  "generation), whatever the program needs",
			  fmt_size(b[0], d->biggest), share, fmt_size(b[1], d->total));
	else
		ex_answer(x,
			  "one allocation took %s, %.0f%% of the device's %s: a preallocating "
			  "allocator, not what the program needs",
			  fmt_size(b[0], d->biggest), share, fmt_size(b[1], d->total));
	ex_cmd(c, sizeof(c), "growth", f, d);
	ex_ev(x, c, "the largest allocation: %s at %s, by %s", fmt_size(b[0], d->biggest),
	      rb_time(t1, (int64_t)d->biggest_ns), d->biggest_lib ? d->biggest_lib : "?");
	if (d->peak > d->biggest)
		ex_ev(x, c, "traced besides it at the peak: %s (other libraries)",
		      fmt_size(b[0], d->peak - d->biggest));
	char used[200];
	ex_cnt_used(x, r, d, used, sizeof(used));
	ex_ev(x, "oom",
	      "an OOM inside the region makes no driver call: this trace cannot show it; the "
	      "framework's error (RESOURCE_EXHAUSTED) is its record");
	if (r->fw == FW_TF)
		ex_change(x,
			  "%s%sTF_FORCE_GPU_ALLOW_GROWTH=true, or "
			  "tf.config.experimental.set_memory_growth(gpu, True) before the first "
			  "op, grows the memory as needed (regions that double, never returned); "
			  "tf.config.set_logical_device_configuration(gpu, "
			  "[tf.config.LogicalDeviceConfiguration(memory_limit=MiB)]) caps it.",
			  used, *used ? " " : "");
	else {
		char fr[200];
		ex_change(x,
			  "%s%sXLA_PYTHON_CLIENT_PREALLOCATE=false grows the memory as needed "
			  "(regions that double, never returned); %s preallocates a smaller share; "
			  "XLA_PYTHON_CLIENT_ALLOCATOR=platform allocates exactly what is used and "
			  "frees it (slow: for debugging).",
			  used, *used ? " " : "", explain_fraction_advice(r, ".5", fr, sizeof(fr)));
	}
}

static void regions_text(const struct ex_dev *d, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < d->nregions && len + 40 < size; i++) {
		char b[32];
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
					fmt_size(b, d->regions[i]));
	}
	if (d->nregions == EX_MAX_REGIONS && len + 8 < size)
		snprintf(buf + len, size - len, ", ...");
}

void ex_bfc_growth(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
		   struct ex_findings *out)
{
	bool bfc = r->fw == FW_JAX || r->fw == FW_TF || r->fw == FW_NONE;
	if (!(r->mode == MODE_BFC_GROWTH || (bfc && explain_doubling(d->regions, d->nregions))) ||
	    !d->nregions)
		return;
	char b[4][32], c[80], list[400];
	uint64_t sum = 0;
	for (size_t i = 0; i < d->nregions; i++)
		sum += d->regions[i];
	struct ex_finding *x = ex_add(out, "bfc-growth", d->ordinal, sum);
	bool kept = d->fw_frees == 0;
	ex_answer(x, "the allocator grew in %zu regions, from %s up to %s (%s in all)%s",
		  d->nregions, fmt_size(b[0], d->regions[0]),
		  fmt_size(b[1], d->regions[d->nregions - 1]), fmt_size(b[2], sum),
		  kept ? ", and returned none: nvidia-smi stays at their sum" : "");
	regions_text(d, list, sizeof(list));
	ex_cmd(c, sizeof(c), "growth", f, d);
	ex_ev(x, c, "regions in order: %s", list);
	ex_ev(x, c, "regions returned to the driver: %" PRIu64 "; traced live at the end: %s",
	      d->fw_frees, fmt_size(b[0], d->end));
	ex_cnt_regions(x, d, sum, d->regions[d->nregions - 1]);
	if (r->fw == FW_TF)
		ex_change(x, "allow_growth never gives a region back while it holds a live "
			     "tensor; TF frees wholly unused regions only when an allocation would "
			     "otherwise fail (TF_ENABLE_GPU_GARBAGE_COLLECTION, on by default). "
			     "A cap: tf.config.set_logical_device_configuration(gpu, "
			     "[tf.config.LogicalDeviceConfiguration(memory_limit=MiB)]).");
	else {
		char fr[200];
		ex_change(x,
			  "This is XLA_PYTHON_CLIENT_PREALLOCATE=false: regions are kept until the "
			  "process ends. XLA_PYTHON_CLIENT_ALLOCATOR=platform frees each buffer "
			  "(slow); %s caps the arena.",
			  explain_fraction_advice(r, NULL, fr, sizeof(fr)));
	}
}

void ex_torch_cache(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
		    struct ex_findings *out)
{
	if ((r->mode != MODE_PT_CACHING && r->mode != MODE_PT_EXPANDABLE) || !d->seg_bytes)
		return;
	char b[4][32], c[80], note[300];
	bool exp = r->mode == MODE_PT_EXPANDABLE;
	uint64_t nseg = d->seg_small + d->seg_mid + d->seg_large;
	struct ex_finding *x = ex_add(out, "torch-cache", d->ordinal, d->seg_bytes);
	char use[100] = "tensors use part of it";
	if (d->counters.present && (d->counters.has & CNT_ALLOCATED))
		snprintf(use, sizeof(use), "tensors used %s of it (%s)",
			 fmt_size(b[1], d->counters.allocated), d->counters.api);
	ex_answer(x,
		  "PyTorch's cache held %s in %" PRIu64 " %s at the peak: nvidia-smi counts all "
		  "of it, %s, and a tensor's free returns nothing to the driver",
		  fmt_size(b[0], d->seg_bytes), nseg,
		  exp ? (nseg == 1 ? "mapped page" : "mapped pages")
		      : (nseg == 1 ? "segment" : "segments"),
		  use);
	ex_cmd(c, sizeof(c), "fragmentation", f, d);
	if (exp)
		ex_ev(x, c,
		      "pages: %" PRIu64 " of 2 MiB (small pool), %" PRIu64
		      " of 20 MiB (large pool), %" PRIu64 " other",
		      d->seg_small, d->seg_mid, d->seg_large);
	else
		ex_ev(x, c,
		      "segments: %" PRIu64 " of 2 MiB (requests up to 1 MiB), %" PRIu64
		      " of 20 MiB (1 to 10 MiB), %" PRIu64 " larger (rounded to 2 MiB)",
		      d->seg_small, d->seg_mid, d->seg_large);
	ex_cmd(c, sizeof(c), "summary", f, d);
	ex_ev(x, c, "%" PRIu64 " allocated from the driver over the run, %" PRIu64 " returned",
	      d->fw_allocs, d->fw_frees);
	ex_cnt_cache(x, d);
	if (!f->history) /* else its oom entries show them, as problems */
		ex_ev(x, "oom",
		      "an OOM refused by torch.cuda.set_per_process_memory_fraction makes no "
		      "driver call: this trace cannot show it");
	if (f->retried)
		ex_ev(x, "oom",
		      "the cache was emptied and refilled after %" PRIu64
		      " retried OOM%s (the oom-retried finding)",
		      f->retried, f->retried == 1 ? "" : "s");
	/* the note first: an argument's order of evaluation is unspecified */
	const char *cache_note = ex_cnt_cache_advice(d, note, sizeof(note));
	char es[400], ms[400];
	explain_conf_advice(r, "expandable_segments:True", es, sizeof(es));
	explain_conf_advice(r, "max_split_size_mb:N", ms, sizeof(ms));
	if (exp)
		ex_change(x,
			  "%s%storch.cuda.empty_cache() returns unused segments to the driver: it "
			  "helps other processes and libraries (NCCL, cuDNN), not this program's "
			  "own peak, and later allocations pay to get them back. Expandable "
			  "segments are on: segments grow in place, so odd sizes no longer strand "
			  "memory. %s helps when an OOM reports much memory \"reserved by PyTorch "
			  "but unallocated\": blocks above N MiB are no longer split.",
			  cache_note, *note ? " " : "", ms);
	else
		ex_change(x,
			  "%s%storch.cuda.empty_cache() returns unused segments to the driver: it "
			  "helps other processes and libraries (NCCL, cuDNN), not this program's "
			  "own peak, and later allocations pay to get them back. %s helps when "
			  "shapes vary (segments grow in place instead of piling up odd sizes). "
			  "max_split_size_mb:N in the same setting helps when an OOM reports much "
			  "memory \"reserved by PyTorch but unallocated\": blocks above N MiB are "
			  "no longer split.",
			  cache_note, *note ? " " : "", es);
}

void ex_pool_reserve(const struct ex_facts *f, const struct ex_recog *r, const struct ex_dev *d,
		     struct ex_findings *out)
{
	bool measured = d->smi_end && d->route_key && strcmp(d->route_key, "pool_reserve") == 0 &&
			d->end_unexplained > 0;
	/* a program's few stream-ordered calls, all freed, leave no reserve worth a word */
	if (!d->async_peak ||
	    (!measured && !d->async_end && r->mode != MODE_PT_ASYNC && r->mode != MODE_TF_ASYNC))
		return;
	char b[4][32], c[80];
	uint64_t reserve = measured ? (uint64_t)d->end_unexplained : 0;
	struct ex_finding *x =
	    ex_add(out, "pool-reserve", d->ordinal, measured ? reserve : d->async_peak);
	bool pt = r->mode == MODE_PT_ASYNC;
	/* At least the pool's high-water of live bytes less what is live now
	 * (it keeps what it reached); at most nvidia-smi's unexplained rest,
	 * which module code shares. */
	uint64_t low = d->async_peak > d->end_smi_async ? d->async_peak - d->end_smi_async : 0;
	char range[80];
	if (measured && low && low < reserve)
		snprintf(range, sizeof(range), "between %s and %s", fmt_size(b[2], low),
			 fmt_size(b[3], reserve));
	else
		snprintf(range, sizeof(range), "about %s", fmt_size(b[2], reserve));
	if (measured)
		ex_answer(x, "the stream-ordered pool kept %s beyond the %s it handed out%s", range,
			  fmt_size(b[1], d->end_smi_async),
			  pt ? ": PyTorch sets its release threshold to the maximum, so freed "
			       "memory stays in the pool"
			     : ": freed memory stays in the pool up to its release threshold");
	else
		ex_answer(x,
			  "stream-ordered allocations peaked at %s; the pool keeps freed memory up "
			  "to its release threshold%s",
			  fmt_size(b[0], d->async_peak),
			  pt ? " (PyTorch sets it to the maximum: all of it)" : "");
	ex_cmd(c, sizeof(c), "fragmentation", f, d);
	ex_ev(x, c, "stream-ordered bytes live: %s at the peak, %s at the end",
	      fmt_size(b[0], d->async_peak), fmt_size(b[1], d->async_end));
	ex_cmd(c, sizeof(c), "accounting", f, d);
	if (measured)
		ex_ev(x, c,
		      "nvidia-smi at the end: %s; traced %s and contexts %s: the pool's reserve is "
		      "at most the rest, which module code loaded later shares (inferred: "
		      "the trace does not read the pool's attributes)",
		      fmt_size(b[0], d->end_smi_bytes), fmt_size(b[1], d->end_smi_traced),
		      fmt_size(b[2], d->end_contexts));
	else
		ex_ev(x, c, "the reserve itself is not measured: no nvidia-smi figure beside it");
	if (pt)
		ex_change(x, "torch.cuda.empty_cache() trims the pool to nothing "
			     "(cudaMemPoolTrimTo(pool, 0)); memory_reserved() is the reserve. In "
			     "your own code, cudaMemPoolSetAttribute(pool, "
			     "cudaMemPoolAttrReleaseThreshold, BYTES) keeps at most BYTES after "
			     "each synchronize.");
	else
		ex_change(x, "cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, "
			     "BYTES) keeps at most BYTES after each synchronize (0, the default, "
			     "returns it all); cudaMemPoolTrimTo(pool, 0) returns it now.");
}
