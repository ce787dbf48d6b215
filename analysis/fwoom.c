/* A trace's framework out-of-memory errors: see fwoom.h. The helper's
 * value names (python/gpumemtrace/_counters/sitecustomize.py) are the
 * frameworks' own where they have one (memory_stats() keys), else:
 *   alloc_size, limit_or_total, device_free  PyTorch's observer arguments
 *       (framework-view.md §2.3: the third is the fraction's allowed bytes
 *       when a fraction is set, else the device's total)
 *   used_bytes, total_bytes, limit           CuPy's pool (§5; limit 0: none)
 *   current, memory_limit                    TF's get_memory_info() and its
 *       logical device's memory_limit, in bytes (§4) */
#include "analysis/fwoom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/fwhist.h"
#include "analysis/report-base.h"

static const struct {
	const char *source, *name;
	enum fwoom_fw fw;
} fws[] = {
    {"torch", "PyTorch", FWF_TORCH},
    {"jax", "JAX", FWF_JAX},
    {"tensorflow", "TensorFlow", FWF_TF},
    {"cupy", "CuPy", FWF_CUPY},
};

const char *fwoom_fw_name(const struct fwoom *f)
{
	for (size_t i = 0; i < sizeof(fws) / sizeof(fws[0]); i++)
		if (fws[i].fw == f->fw)
			return fws[i].name;
	return f->source;
}

/* A known size: a + b, errors added. */
static struct fw_size fw_size_add(struct fw_size a, struct fw_size b)
{
	uint64_t s = a.bytes + b.bytes;
	return (struct fw_size){s < a.bytes ? UINT64_MAX : s, a.err + b.err, a.known && b.known};
}

static struct fw_size exact(uint64_t v)
{
	return (struct fw_size){v, 0, true};
}

/* The first of `names` in r's values (r may be NULL). */
static bool value(const struct trace_fwoom *r, const char *const *names, uint64_t *v)
{
	for (size_t i = 0; r && i < r->n; i++)
		for (const char *const *n = names; *n; n++)
			if (!strcmp(r->v[i].name, *n)) {
				*v = r->v[i].value;
				return true;
			}
	return false;
}

/* Figure `s` from the records' values (either record), unless known. */
static void from_values(struct fwoom *f, struct fw_size *s, const char *const *names)
{
	uint64_t v;
	if (!s->known && (value(f->observer, names, &v) || value(f->raised, names, &v)))
		*s = exact(v);
}

static void from_msg(struct fw_size *s, const struct fw_size *m)
{
	if (!s->known && m->known)
		*s = *m;
}

/* A limit below the device's total, with what set it. */
static void limit_of(struct fwoom *f, const struct trace *t)
{
	static const char *const observer_limit[] = {"limit_or_total", NULL};
	static const char *const bfc_limit[] = {"bytes_limit", NULL};
	static const char *const tf_limit[] = {"memory_limit", NULL};
	static const char *const cupy_limit[] = {"limit", NULL};
	struct fwoom_limit *l = &f->limit;
	uint64_t v = 0, total = f->total.known ? f->total.bytes : 0;
	const char *env;
	switch (f->fw) {
	case FWF_TORCH: /* the observer's third argument is the total without one */
		if (value(f->observer, observer_limit, &v) && total && v < total)
			l->bytes = exact(v);
		else
			from_msg(&l->bytes, &f->msg.limit);
		l->knob = "torch.cuda.set_per_process_memory_fraction";
		if (l->bytes.known && total)
			snprintf(l->what, sizeof(l->what), "%s(%.2f)", l->knob,
				 (double)l->bytes.bytes / (double)total);
		else
			snprintf(l->what, sizeof(l->what), "%s", l->knob);
		break;
	case FWF_JAX:
		if (value(f->raised, bfc_limit, &v) || value(f->observer, bfc_limit, &v))
			l->bytes = exact(v);
		/* by the name in force; the current name when neither is set */
		env = rb_env(t, "XLA_CLIENT_MEM_FRACTION") ? "XLA_CLIENT_MEM_FRACTION"
		      : rb_env(t, "XLA_PYTHON_CLIENT_MEM_FRACTION")
			  ? "XLA_PYTHON_CLIENT_MEM_FRACTION"
			  : NULL;
		l->knob = env ? env : "XLA_CLIENT_MEM_FRACTION";
		if (env)
			snprintf(l->what, sizeof(l->what), "%s=%.40s", env, rb_env(t, env));
		else
			snprintf(l->what, sizeof(l->what), "%s (default 0.75)", l->knob);
		break;
	case FWF_TF:
		if (value(f->raised, tf_limit, &v) && v)
			l->bytes = exact(v);
		l->knob = "memory_limit";
		snprintf(
		    l->what, sizeof(l->what),
		    "the logical device's memory_limit=%llu (tf.config.LogicalDeviceConfiguration)",
		    (unsigned long long)(v >> 20));
		break;
	case FWF_CUPY:
		if (value(f->raised, cupy_limit, &v) && v)
			l->bytes = exact(v);
		else
			from_msg(&l->bytes, &f->msg.limit);
		env = rb_env(t, "CUPY_GPU_MEMORY_LIMIT");
		l->knob =
		    env ? "CUPY_GPU_MEMORY_LIMIT" : "cupy.get_default_memory_pool().set_limit";
		if (env)
			snprintf(l->what, sizeof(l->what), "CUPY_GPU_MEMORY_LIMIT=%.60s", env);
		else
			snprintf(l->what, sizeof(l->what), "%s(size=%llu)", l->knob,
				 (unsigned long long)l->bytes.bytes);
		break;
	case FWF_OTHER:
		break;
	}
	/* a limit at or above the device's total limits nothing */
	if (l->bytes.known && total && l->bytes.bytes >= total)
		l->bytes.known = false;
}

static void figures(struct fwoom *f, const struct trace *t)
{
	static const char *const req[] = {"alloc_size", NULL};
	static const char *const fr[] = {"device_free", NULL};
	static const char *const tot[] = {"device_total", NULL};
	static const char *const in_use[] = {"allocated_bytes.all.current", "bytes_in_use",
					     "current", "used_bytes", NULL};
	static const char *const pool[] = {"reserved_bytes.all.current", "pool_bytes",
					   "total_bytes", NULL};
	static const char *const largest[] = {"largest_free_block_bytes", NULL};
	const struct fwmsg *m = &f->msg;
	from_values(f, &f->request, req);
	from_msg(&f->request, &m->requested);
	from_values(f, &f->free_bytes, fr);
	from_msg(&f->free_bytes, &m->free_bytes);
	from_values(f, &f->total, tot);
	from_msg(&f->total, &m->total);
	uint64_t dt = f->device >= 0 ? rb_dev_total(t, f->device) : 0;
	if (!f->total.known && dt)
		f->total = exact(dt);
	from_values(f, &f->in_use, in_use);
	from_values(f, &f->pool, pool);
	from_values(f, &f->largest_free, largest);
	if (f->in_use.known && f->pool.known)
		f->pool_free =
		    exact(f->pool.bytes > f->in_use.bytes ? f->pool.bytes - f->in_use.bytes : 0);
	/* the message's: PyTorch states P and R (P + R is reserved; 1.x the
	 * reserved total), CuPy M, the pool's bytes */
	from_msg(&f->in_use, &m->allocated);
	from_msg(&f->pool_free, &m->unallocated);
	from_msg(&f->pool, &m->reserved);
	from_msg(&f->pool, &m->held);
	if (!f->pool.known && m->allocated.known && m->unallocated.known)
		f->pool = fw_size_add(m->allocated, m->unallocated);
	from_msg(&f->self, &m->self);
	from_msg(&f->others, &m->others);
	f->host = m->form == FWMSG_HOST;
	limit_of(f, t);
}

static enum fwoom_fw fw_of(const char *source)
{
	for (size_t i = 0; i < sizeof(fws) / sizeof(fws[0]); i++)
		if (!strcmp(source, fws[i].source))
			return fws[i].fw;
	return FWF_OTHER;
}

/* The observer's error that a raised PyTorch error is: the latest one
 * before it not yet raised, of the same size where both say (the message
 * rounds: within its error). */
static struct fwoom *observed(struct fwoom_list *l, const struct trace_fwoom *r,
			      const struct fwmsg *m)
{
	static const char *const req[] = {"alloc_size", NULL};
	for (size_t i = l->n; i-- > 0;) {
		struct fwoom *f = &l->v[i];
		uint64_t a;
		if (!f->observer || f->raised || f->fw != FWF_TORCH || f->time_ns > r->time_ns)
			continue;
		if (m->requested.known && value(f->observer, req, &a) &&
		    (a + m->requested.err + 512 < m->requested.bytes ||
		     a > m->requested.bytes + m->requested.err + 512))
			continue;
		return f;
	}
	return NULL;
}

static int by_time(const void *a, const void *b)
{
	const struct fwoom *x = a, *y = b;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

void fwoom_collect(const struct trace *t, struct fwoom_list *out)
{
	memset(out, 0, sizeof(*out));
	out->v = xcalloc(t->nfwooms + 1, sizeof(*out->v));
	for (size_t i = 0; i < t->nfwooms; i++) {
		const struct trace_fwoom *r = &t->fwooms[i];
		struct fwmsg m;
		if (r->how != GMT_FWOOM_OBSERVER)
			fwmsg_parse(r->message, r->message_len, &m);
		struct fwoom *f = r->how != GMT_FWOOM_OBSERVER && fw_of(r->source) == FWF_TORCH
				      ? observed(out, r, &m)
				      : NULL;
		if (!f) {
			out->total++;
			if (out->n == FWOOM_MAX)
				continue;
			f = &out->v[out->n++];
			*f = (struct fwoom){.fw = fw_of(r->source),
					    .source = r->source,
					    .type = r->type,
					    .device = r->device,
					    .tid = r->tid,
					    .time_ns = r->time_ns};
		}
		if (r->how == GMT_FWOOM_OBSERVER) {
			f->observer = r;
			continue;
		}
		f->raised = r;
		f->type = r->type;
		f->msg = m;
		if (f->device < 0)
			f->device = r->device >= 0 ? r->device : m.device;
	}
	for (size_t i = 0; i < out->n; i++) {
		struct fwoom *f = &out->v[i];
		if (f->device < 0 && t->ndevs == 1)
			f->device = t->devs[0].ordinal;
		figures(f, t);
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), by_time);
}

void fwoom_free(struct fwoom_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ---- PyTorch's allocator history: the blocks at the OOM ------------------ */

/* Within this of a history error's time a snapshot taken for an OOM is its
 * own (the observer's: the entry is stamped in whole wall-clock us). */
#define HIST_SNAP_SLACK_NS 10000000ull

/* The snapshot PyTorch's observer took for error f: the first one taken for
 * an OOM on its device at or after it, before the device's next error. */
static const struct fw_snapshot *oom_snapshot(const struct trace *t, const struct fwoom_list *l,
					      size_t i)
{
	const struct fwoom *f = &l->v[i];
	uint64_t from = f->time_ns > HIST_SNAP_SLACK_NS ? f->time_ns - HIST_SNAP_SLACK_NS : 0;
	uint64_t until = UINT64_MAX;
	for (size_t k = i + 1; k < l->n; k++)
		if (l->v[k].device == f->device && fwoom_from_history(&l->v[k])) {
			until = l->v[k].time_ns;
			break;
		}
	const struct fw_snapshot *best = NULL;
	for (size_t k = 0; k < t->fw->nsnaps; k++) {
		const struct fw_snapshot *s = &t->fw->snaps[k];
		if (s->reason != GMT_FWSNAP_WHY_OOM || s->state_dropped || !s->nsegs ||
		    s->time_ns < from || s->time_ns >= until)
			continue;
		if (!best || s->time_ns < best->time_ns)
			best = s;
	}
	return best;
}

void fwoom_history_blocks(const struct trace *t, struct fwoom_list *l)
{
	if (!t->fw)
		return;
	for (size_t i = 0; i < l->n; i++) {
		struct fwoom *f = &l->v[i];
		const struct fw_snapshot *s;
		if (!fwoom_from_history(f) || !(s = oom_snapshot(t, l, i)))
			continue;
		struct fw_blocks_fig b;
		fwhist_blocks(s, f->device, &b);
		if (!b.segments)
			continue;
		f->blocks = true;
		f->pool = exact(b.reserved);
		f->in_use = exact(b.allocated + b.pending);
		f->pool_free = exact(b.inactive);
		/* the request is a large-pool one above 1 MiB (frameworks.md §1.2) */
		f->largest_free =
		    exact(f->request.known && f->request.bytes > (1ull << 20) ? b.largest_free_large
									      : b.largest_free);
	}
}
