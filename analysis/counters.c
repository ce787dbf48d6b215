/* A framework's own memory counters as one model (analysis/counters.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/counters.h"
#include "analysis/frameworks.h"
#include "reader/xalloc.h"

/* Which record names give which figure, per framework (analysis/counters.h). */
struct name_map {
	const char *name;
	unsigned bit;
	size_t off;
};
#define FIG(field) offsetof(struct counters_point, field)
static const struct name_map torch_names[] = {
    {"allocated_bytes.all.current", CNT_ALLOCATED, FIG(allocated)},
    {"reserved_bytes.all.current", CNT_RESERVED, FIG(reserved)},
    {"inactive_split_bytes.all.current", CNT_INACTIVE_SPLIT, FIG(inactive_split)},
    {"allocated_bytes.all.peak", CNT_PEAK_ALLOCATED, FIG(peak_allocated)},
    {"reserved_bytes.all.peak", CNT_PEAK_RESERVED, FIG(peak_reserved)},
    {"num_alloc_retries", CNT_RETRIES, FIG(alloc_retries)},
    {"num_ooms", CNT_OOMS, FIG(ooms)},
    {NULL, 0, 0},
};
static const struct name_map jax_names[] = {
    {"bytes_in_use", CNT_ALLOCATED, FIG(allocated)},
    {"pool_bytes", CNT_RESERVED, FIG(reserved)},
    {"peak_bytes_in_use", CNT_PEAK_ALLOCATED, FIG(peak_allocated)},
    {"peak_pool_bytes", CNT_PEAK_RESERVED, FIG(peak_reserved)},
    {"bytes_limit", CNT_LIMIT, FIG(limit)},
    {NULL, 0, 0},
};
static const struct name_map tf_names[] = {
    {"current", CNT_ALLOCATED, FIG(allocated)},
    {"peak", CNT_PEAK_ALLOCATED, FIG(peak_allocated)},
    {NULL, 0, 0},
};

/* Each framework's figures, by its row of the framework table (whose
 * python package is the record's source). */
static const struct name_map *const names_by_fw[GMT_FW_COUNT] = {
    [GMT_FW_PYTORCH] = torch_names,
    [GMT_FW_JAX] = jax_names,
    [GMT_FW_TENSORFLOW] = tf_names,
};

static void read_point(const struct trace_counters *c, const struct name_map *names,
		       struct counters_point *p)
{
	*p = (struct counters_point){.time_ns = c->time_ns, .reason = c->reason, .raw = c};
	for (size_t i = 0; names && i < c->n; i++)
		for (const struct name_map *m = names; m->name; m++)
			if (!strcmp(c->v[i].name, m->name)) {
				*(uint64_t *)((char *)p + m->off) = c->v[i].value;
				p->has |= m->bit;
			}
}

static struct counters_series *series_of(struct counters_set *set, const struct trace_counters *c)
{
	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->s[i].source, c->source) &&
		    !strcmp(set->s[i].device_name, c->device_name) && set->s[i].device == c->device)
			return &set->s[i];
	set->s = xrealloc(set->s, (set->n + 1) * sizeof(*set->s));
	struct counters_series *s = &set->s[set->n++];
	*s = (struct counters_series){.source = c->source,
				      .api = c->source,
				      .device_name = c->device_name,
				      .device = c->device};
	const char *api = gmt_frameworks[fw_of_python(c->source)].counters_api;
	if (api)
		s->api = api;
	return s;
}

static const struct name_map *names_of(const char *source)
{
	return names_by_fw[fw_of_python(source)]; /* NULL: another source, its counters stay raw */
}

static void summarize(struct counters_series *s)
{
	uint64_t best = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct counters_point *p = &s->pts[i];
		s->has |= p->has;
		if (p->allocated > s->max_allocated)
			s->max_allocated = p->allocated;
		if (p->reserved > s->max_reserved)
			s->max_reserved = p->reserved;
		uint64_t f;
		if (counters_cache_free(p, &f) && f > s->max_cache_free)
			s->max_cache_free = f;
		uint64_t key = p->has & CNT_RESERVED ? p->reserved : p->allocated;
		if (i == 0 || key > best) {
			best = key;
			s->at_max_reserved = i;
		}
		uint64_t pa = p->has & CNT_PEAK_ALLOCATED ? p->peak_allocated : p->allocated;
		uint64_t pr = p->has & CNT_PEAK_RESERVED ? p->peak_reserved : p->reserved;
		s->peak_allocated = pa > s->peak_allocated ? pa : s->peak_allocated;
		s->peak_reserved = pr > s->peak_reserved ? pr : s->peak_reserved;
		if (p->reason == GMT_COUNTERS_WHY_OOM)
			s->oom_readings++;
		s->alloc_retries = p->alloc_retries;
		s->ooms = p->ooms;
	}
}

static int by_time(const void *a, const void *b)
{
	const struct counters_point *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->raw < y->raw ? -1 : x->raw > y->raw; /* file order */
}

static int by_device(const void *a, const void *b)
{
	const struct counters_series *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	int c = strcmp(x->source, y->source);
	return c ? c : strcmp(x->device_name, y->device_name);
}

void counters_load(const struct trace *t, struct counters_set *out)
{
	*out = (struct counters_set){0};
	for (size_t i = 0; i < t->ncounters; i++) {
		const struct trace_counters *c = &t->counters[i];
		struct counters_series *s = series_of(out, c);
		s->pts = xrealloc(s->pts, (s->n + 1) * sizeof(*s->pts));
		read_point(c, names_of(c->source), &s->pts[s->n++]);
	}
	for (size_t i = 0; i < out->n; i++) {
		qsort(out->s[i].pts, out->s[i].n, sizeof(*out->s[i].pts), by_time);
		summarize(&out->s[i]);
	}
	if (out->n)
		qsort(out->s, out->n, sizeof(*out->s), by_device);
}

void counters_free(struct counters_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		free(set->s[i].pts);
	free(set->s);
	*set = (struct counters_set){0};
}

const struct counters_series *counters_for_device(const struct counters_set *set, int64_t device)
{
	const struct counters_series *first = NULL;
	for (size_t i = 0; i < set->n; i++) {
		if (set->s[i].device != device)
			continue;
		if (set->s[i].has & CNT_RESERVED)
			return &set->s[i];
		if (!first)
			first = &set->s[i];
	}
	return first;
}

const struct counters_point *counters_at(const struct counters_series *s, uint64_t time_ns)
{
	if (!s || !s->n)
		return NULL;
	const struct counters_point *best = &s->pts[0];
	for (size_t i = 0; i < s->n && s->pts[i].time_ns <= time_ns; i++)
		best = &s->pts[i];
	return best;
}

const struct counters_point *counters_for_moment(const struct counters_series *s, uint64_t time_ns,
						 uint64_t bytes)
{
	const struct counters_point *p = counters_at(s, time_ns);
	const struct counters_point *next = p && p + 1 < s->pts + s->n ? p + 1 : NULL;
	if (p && p->time_ns <= time_ns && next && (p->has & next->has & CNT_RESERVED) &&
	    p->reserved < next->reserved && next->reserved <= bytes)
		return next;
	return p;
}

bool counters_cache_free(const struct counters_point *p, uint64_t *free_bytes)
{
	if (!p || (p->has & (CNT_ALLOCATED | CNT_RESERVED)) != (CNT_ALLOCATED | CNT_RESERVED))
		return false;
	*free_bytes = p->reserved > p->allocated ? p->reserved - p->allocated : 0;
	return true;
}
