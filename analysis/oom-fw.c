/* The oom aggregator's judgement of a framework's own out-of-memory errors
 * (oom.h, fwoom.h), and how the process ended: oom-hidden. The rules
 * (framework-view.md §7, "facts a classifier can use"; the order is
 * gpumemtrace's design, docs/reports.md "oom"):
 *   host memory         not the GPU's: not-an-oom;
 *   exceeds-device-total the request is more than the device's total;
 *   fragmentation       free inside the framework's cache or pool is at least
 *                       the request, yet no block of it was (PyTorch: reserved
 *                       but unallocated >= the request, after the allocator freed
 *                       every unsplit segment; BFC: its largest free chunk is
 *                       smaller; CuPy: total_bytes - used_bytes, after
 *                       free_all_blocks);
 *   limit               a limit below the device refused it and the device had
 *                       room for it: without the limit it would have fit;
 *   other-processes     other processes held more than this one, and at least
 *                       what was missing;
 *   this-process        otherwise: the working set did not fit. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/frameworks.h"
#include "analysis/oom.h"
#include "analysis/report-base.h"

static struct fw_size exact(uint64_t v)
{
	return (struct fw_size){v, 0, true};
}

/* What the framework held, for the texts: "PyTorch held 868 MiB reserved,
 * 143 MiB of it in tensors" (figures known only). */
static void held_text(char *buf, size_t size, const struct fwoom *f, struct fw_size pool,
		      const char *pool_src)
{
	char b1[32], b2[32];
	const char *fw = fwoom_fw_name(f);
	if (pool.known && f->in_use.known)
		snprintf(buf, size, "%s held %s%s, %s of it in use", fw, fmt_size(b1, pool.bytes),
			 pool_src, fmt_size(b2, f->in_use.bytes));
	else if (pool.known)
		snprintf(buf, size, "%s held %s%s", fw, fmt_size(b1, pool.bytes), pool_src);
	else if (f->in_use.known)
		snprintf(buf, size, "%s had %s in use", fw, fmt_size(b1, f->in_use.bytes));
	else
		snprintf(buf, size, "%s's own figures are unknown", fw);
}

static bool fragmentation(struct oom_failure *o, uint64_t req, struct fw_size pool,
			  struct fw_size pool_free, const char *held)
{
	const struct fwoom *f = o->fw;
	char b1[32], b2[32], b3[32];
	if (!pool_free.known || pool_free.bytes < req ||
	    (f->largest_free.known && f->largest_free.bytes >= req))
		return false;
	o->kase = OOM_FRAGMENTATION;
	char largest[96] = "";
	if (f->largest_free.known)
		snprintf(largest, sizeof(largest), " (its largest free block: %s)",
			 fmt_size(b3, f->largest_free.bytes));
	const char *how = f->fw == FWF_TORCH
			      ? "reserved but unallocated: once the allocator has freed every "
				"unsplit segment, what stays cached is split blocks"
			  : f->fw == FWF_CUPY ? "in split chunks, which free_all_blocks cannot free"
					      : "free inside the pool";
	snprintf(o->why, sizeof(o->why),
		 "%s: %s %s, at least the %s asked, yet no free block was large enough%s: "
		 "fragmentation",
		 held, fmt_size(b1, pool_free.bytes), how, fmt_size(b2, req), largest);
	(void)pool;
	return true;
}

/* What counts against the limit: PyTorch and CuPy compare what they hold
 * from the driver, BFC and TF the bytes in use. */
static uint64_t limit_used(const struct fwoom *f, struct fw_size pool, uint64_t held)
{
	if ((f->fw == FWF_JAX || f->fw == FWF_TF) && f->in_use.known)
		return f->in_use.bytes;
	return pool.known ? pool.bytes : f->in_use.known ? f->in_use.bytes : held;
}

/* TensorFlow without a memory_limit takes the free memory less a reserve
 * for the system (MinSystemMemory, frameworks.md §2.3): its pool, the
 * region the driver saw, is then the limit. */
static struct fwoom_limit tf_reserve(struct fw_size pool)
{
	struct fwoom_limit l = {.bytes = pool, .knob = "TF_DEVICE_MIN_SYS_MEMORY_IN_MB"};
	snprintf(l.what, sizeof(l.what),
		 "its reserve for the system (the pool is the free memory less 225 MiB to 1.8 "
		 "GiB by GPU generation; TF_DEVICE_MIN_SYS_MEMORY_IN_MB sets it)");
	return l;
}

/* A PyTorch history's oom entry holds no limit, yet the allocator OOMs
 * without a failed cudaMalloc only at its fraction's limit: when the device
 * had free the segment it would have asked for (2 MiB up to 1 MiB, 20 MiB
 * below 10 MiB, else the request in 2 MiB steps), the limit refused it. */
static bool history_limit(struct oom_failure *o, uint64_t req, struct fw_size pool, bool free_known,
			  uint64_t fr)
{
	const struct fwoom *f = o->fw;
	const uint64_t mib = 1ull << 20;
	uint64_t seg = req <= mib	? 2 * mib
		       : req < 10 * mib ? 20 * mib
					: (req + 2 * mib - 1) & ~(2 * mib - 1);
	if (f->fw != FWF_TORCH || !fwoom_from_history(f) || !free_known || fr < seg)
		return false;
	char b1[32], b2[32], b3[32], b4[32], b5[32], below[96] = "";
	o->kase = OOM_LIMIT;
	if (pool.known) /* the history has no limit: what it was below */
		snprintf(below, sizeof(below), "; %s reserved then: the limit was below %s",
			 fmt_size(b4, pool.bytes), fmt_size(b5, pool.bytes + req));
	snprintf(o->why, sizeof(o->why),
		 "the device had %s free, enough for the %s segment the %s request needed, yet "
		 "PyTorch refused it: only its limit (%s) does so%s",
		 fmt_size(b1, fr), fmt_size(b2, seg), fmt_size(b3, req), f->limit.knob, below);
	return true;
}

static bool limit(struct oom_failure *o, uint64_t req, uint64_t total, struct fw_size pool,
		  struct fw_size pool_free, bool free_known, uint64_t fr)
{
	const struct fwoom *f = o->fw;
	struct fwoom_limit reserve;
	const struct fwoom_limit *l = &f->limit;
	/* TF's reserve only where a free figure says the device had room */
	if (!l->bytes.known && f->fw == FWF_TF && pool.known && f->in_use.known && free_known) {
		reserve = tf_reserve(pool);
		l = &reserve;
	}
	char b1[32], b2[32], b3[32], b4[32];
	if (!l->bytes.known)
		return history_limit(o, req, pool, free_known, fr);
	uint64_t lim = l->bytes.bytes, used = limit_used(f, pool, o->held);
	/* without the limit the allocator could take the device's free memory
	 * (PyTorch's F already counts what its limit left); a preallocated
	 * or grown pool adds its own free space */
	uint64_t extra = f->fw == FWF_TORCH || !pool_free.known ? 0 : pool_free.bytes;
	bool room =
	    free_known ? fr + extra >= req : total && used + req + o->contexts + o->others <= total;
	if (used + req <= lim || !room)
		return false;
	o->kase = OOM_LIMIT;
	char dev[80] = "";
	if (free_known)
		snprintf(dev, sizeof(dev), "the device had %s free", fmt_size(b4, fr));
	else
		snprintf(dev, sizeof(dev), "the device's %s had room", fmt_size(b4, total));
	snprintf(o->why, sizeof(o->why),
		 "%s's limit, %s, refused it: %s counted against %s allowed, %s asked; %s: "
		 "without the limit it would have fit",
		 fwoom_fw_name(f), l->what, fmt_size(b1, used), fmt_size(b2, lim),
		 fmt_size(b3, req), dev);
	return true;
}

/* The request and the device's figures, the framework's first. */
struct fwfigs {
	uint64_t req, total, fr;
	bool free_known;
	struct fw_size pool, pool_free;
	const char *pool_src;
};

static void fw_figures(const struct oom_failure *o, uint64_t pool_held, struct fwfigs *g)
{
	const struct fwoom *f = o->fw;
	g->req = f->request.known ? f->request.bytes : o->e.size;
	g->total = f->total.known ? f->total.bytes : o->total_known ? o->total : 0;
	g->free_known = f->free_bytes.known || o->free_known;
	g->fr = f->free_bytes.known ? f->free_bytes.bytes : o->free_bytes;
	g->pool = f->pool;
	g->pool_free = f->pool_free;
	g->pool_src = fwoom_from_history(f) ? " per its history" : "";
	/* TF and JAX hold their pool in the regions the driver saw */
	if (!g->pool.known && (f->fw == FWF_TF || f->fw == FWF_JAX) && pool_held) {
		g->pool = exact(pool_held);
		g->pool_src = " in driver allocations";
		if (f->in_use.known)
			g->pool_free =
			    exact(pool_held > f->in_use.bytes ? pool_held - f->in_use.bytes : 0);
	}
}

static void working_set(struct oom_failure *o, const struct fwfigs *g, const char *held)
{
	char b1[32], b2[32], b3[32];
	uint64_t others = o->fw->others.known ? o->fw->others.bytes : o->others;
	uint64_t self = o->fw->self.known ? o->fw->self.bytes : o->this_process;
	if (g->free_known && g->fr < g->req && others > self && others >= g->req - g->fr) {
		o->kase = OOM_OTHER_PROCESSES;
		snprintf(o->why, sizeof(o->why),
			 "%s free, %s asked; other processes held %s, more than this process "
			 "(%s): without them it would have fit; %s",
			 fmt_size(b1, g->fr), fmt_size(b2, g->req), fmt_size(b3, others),
			 fmt_size(b1, self), held);
		return;
	}
	if (!g->free_known && !g->pool.known && !o->fw->in_use.known) {
		o->kase = OOM_UNKNOWN;
		snprintf(o->why, sizeof(o->why),
			 "%s raised it (%s asked); no figure says whose memory stood in the way",
			 fwoom_fw_name(o->fw), fmt_size(b1, g->req));
		return;
	}
	o->kase = OOM_THIS_PROCESS;
	char inside[96] = "", dev[64] = "";
	if (g->pool_free.known)
		snprintf(inside, sizeof(inside), ": %s free inside it, less than the %s asked",
			 fmt_size(b1, g->pool_free.bytes), fmt_size(b2, g->req));
	else
		snprintf(inside, sizeof(inside), "; %s asked", fmt_size(b2, g->req));
	if (g->free_known)
		snprintf(dev, sizeof(dev), "; the device had %s free", fmt_size(b3, g->fr));
	snprintf(o->why, sizeof(o->why), "%s%s%s: the working set did not fit", held, inside, dev);
}

void oom_judge_fw(struct oom_failure *o, uint64_t pool_held)
{
	const struct fwoom *f = o->fw;
	char b1[32], b2[32], held[240];
	struct fwfigs g;
	fw_figures(o, pool_held, &g);
	held_text(held, sizeof(held), f, g.pool, g.pool_src);
	if (f->host) {
		o->kase = OOM_NOT_AN_OOM;
		snprintf(o->why, sizeof(o->why),
			 "%s ran out of host memory (%s asked), not the GPU's: the machine's RAM "
			 "or a pinned-memory pool",
			 fwoom_fw_name(f), fmt_size(b1, g.req));
		return;
	}
	if (g.total && g.req > g.total) {
		o->kase = OOM_EXCEEDS_TOTAL;
		snprintf(o->why, sizeof(o->why),
			 "the request, %s, is larger than the device's total memory, %s: it cannot "
			 "succeed on this GPU even when it is empty; look at the size asked for (a "
			 "shape or a unit), not at what is using memory",
			 fmt_size(b1, g.req), fmt_size(b2, g.total));
		return;
	}
	if (fragmentation(o, g.req, g.pool, g.pool_free, held) ||
	    limit(o, g.req, g.total, g.pool, g.pool_free, g.free_known, g.fr))
		return;
	working_set(o, &g, held);
}

/* ---- how the process ended ---------------------------------------------- */

void oom_find_end(const struct trace *t, struct oom_result *r)
{
	if (t->has_exit && t->exit_signal) {
		r->end = OOM_END_STATUS;
		r->exit_status = 128 + (int64_t)t->exit_signal;
		snprintf(r->ending, sizeof(r->ending), "killed by signal %" PRIu64, t->exit_signal);
	} else if (t->has_exit) {
		r->end = t->exit_status ? OOM_END_STATUS : OOM_END_OK;
		r->exit_status = t->exit_status;
		snprintf(r->ending, sizeof(r->ending), "exit status %" PRId64 "%s", t->exit_status,
			 t->exit_how == GMT_EXIT__EXIT ? " (_exit)" : "");
	} else if (!t->has_trailer) {
		r->end = OOM_END_NO_TRAILER;
		snprintf(
		    r->ending, sizeof(r->ending),
		    "no trailer: the process was killed by a signal or crashed (or still runs)");
	} else {
		r->end = OOM_END_UNKNOWN;
		snprintf(r->ending, sizeof(r->ending), "%s",
			 t->trailer_reason == GMT_END_EXEC
			     ? "it went on in an exec"
			     : "its exit status is not in the trace (a trace before format 5)");
	}
}

/* A framework that serves allocations from a pool of its own without
 * driver calls, as the trace shows it, or NULL. */
static const char *pool_framework(const struct trace *t, const struct oom_result *r)
{
	for (size_t i = 0; i < t->ncounters; i++) {
		if (!strcmp(t->counters[i].source, "jax"))
			return "JAX";
		if (!strcmp(t->counters[i].source, "tensorflow"))
			return "TensorFlow";
	}
	const char *alloc = rb_env(t, "XLA_PYTHON_CLIENT_ALLOCATOR");
	if (rb_env(t, "XLA_PYTHON_CLIENT_PREALLOCATE") || rb_env(t, "XLA_CLIENT_MEM_FRACTION") ||
	    rb_env(t, "XLA_PYTHON_CLIENT_MEM_FRACTION") || (alloc && strcmp(alloc, "platform")))
		return "JAX";
	if (rb_env(t, "TF_FORCE_GPU_ALLOW_GROWTH"))
		return "TensorFlow";
	if (rb_env(t, "CUPY_GPU_MEMORY_LIMIT"))
		return "CuPy";
	for (size_t i = 0; i < r->nblind; i++) {
		if (!strcmp(r->blind[i].key, "preallocated"))
			return "TensorFlow or JAX";
		if (!strcmp(r->blind[i].key, "cupy-limit"))
			return "CuPy";
	}
	static const struct {
		enum gmt_fw_id id;
		const char *name;
	} pools[] = {{GMT_FW_TENSORFLOW, "TensorFlow"}, {GMT_FW_JAX, "JAX"}, {GMT_FW_CUPY, "CuPy"}};
	for (size_t k = 0; k < sizeof(pools) / sizeof(pools[0]); k++)
		if (fw_loaded(t, pools[k].id, false))
			return pools[k].name;
	return NULL;
}

void oom_find_hidden(const struct trace *t, struct oom_result *r)
{
	if (r->end != OOM_END_STATUS && r->end != OOM_END_NO_TRAILER)
		return;
	for (size_t i = 0; i < r->fw.n; i++)
		if (r->fw.v[i].raised)
			return; /* the framework's own error says how it ended */
	for (size_t i = 0; i < r->nfails; i++) {
		const struct oom_failure *o = &r->fails[i];
		if (o->kase != OOM_RECOVERED && o->kase != OOM_NOT_AN_OOM && !o->caught)
			return; /* an OOM the trace shows: the report names it */
	}
	if (!(r->pool_fw = pool_framework(t, r)))
		return;
	r->hidden = true;
	const char *look = !strcmp(r->pool_fw, "CuPy")	       ? "OutOfMemoryError"
			   : !strcmp(r->pool_fw, "TensorFlow") ? "\"ran out of memory\" or "
								 "ResourceExhaustedError"
							       : "\"ran out of memory\" or "
								 "RESOURCE_EXHAUSTED";
	snprintf(r->hidden_text, sizeof(r->hidden_text),
		 "the process ended abnormally (%s) while %s held its memory in a pool of its "
		 "own; an out-of-memory error inside that pool makes no driver call, so this "
		 "trace cannot show whether one ended the run: rerun with `gpumemtrace run "
		 "--framework-counters` to record the framework's own error, or look in the "
		 "program's stderr for %s",
		 r->ending, r->pool_fw, look);
}
