/* The rows top and leaks group events into (analysis/trace.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "analysis/trace.h"

/* ---- report rows ------------------------------------------------------ */

struct row_ref_key {
	int64_t device;
	uint64_t stack_id;
	uint32_t api, pad;
};

struct trace_row_ref {
	UT_hash_handle hh;
	struct row_ref_key k;
	struct trace_row *row;
};

void trace_rows_init(struct trace_rows *rs, enum trace_group by, int depth)
{
	memset(rs, 0, sizeof(*rs));
	rs->by = by;
	rs->depth = depth;
}

struct trace_row *trace_rows_get(struct trace_rows *rs, struct trace *t, int64_t device,
				 uint64_t stack_id, uint32_t api)
{
	/* by api, the stack too: a driver call's name may depend on it (the
	 * static runtime's cudaMalloc, site_api) */
	struct row_ref_key k = {device, stack_id, rs->by == GROUP_API ? api : 0, 0};
	struct trace_row_ref *ref;
	HASH_FIND(hh, rs->cache, &k, sizeof(k), ref);
	if (ref)
		return ref->row;
	char key[4096];
	trace_group_key(t, rs->by, rs->depth, stack_id, api, key, sizeof(key));
	struct trace_row *row = trace_rows_get_key(rs, device, key, stack_id, api);
	ref = xrealloc(NULL, sizeof(*ref));
	memset(ref, 0, sizeof(*ref));
	ref->k = k;
	ref->row = row;
	HASH_ADD(hh, rs->cache, k, sizeof(ref->k), ref);
	return row;
}

struct trace_row *trace_rows_get_key(struct trace_rows *rs, int64_t device, const char *key,
				     uint64_t stack_id, uint32_t api)
{
	char id[4200];
	snprintf(id, sizeof(id), "%" PRId64 "|%s", device, key);
	struct trace_row *row;
	HASH_FIND_STR(rs->rows, id, row);
	if (!row) {
		row = xrealloc(NULL, sizeof(*row));
		memset(row, 0, sizeof(*row));
		row->id = xstrdup(id);
		row->key = strchr(row->id, '|') + 1;
		row->device = device;
		row->stack_id = stack_id;
		row->api = api;
		row->trace = rs->trace;
		row->first_ns = UINT64_MAX;
		for (int m = 0; m < TM_COUNT; m++)
			row->max_trace[m] = -1;
		HASH_ADD_KEYPTR(hh, rs->rows, row->id, strlen(row->id), row);
	}
	return row;
}

void trace_row_add(struct trace_row *r, struct trace *t, uint64_t stack_id, int metric, uint64_t v)
{
	r->cur[metric] += v;
	if (!r->nlibs || r->lib_stack != stack_id) {
		const char *name = trace_library(t, stack_id);
		size_t i = 0;
		while (i < r->nlibs && strcmp(r->libs[i].name, name) != 0)
			i++;
		if (i == r->nlibs) {
			r->libs = xrealloc(r->libs, (r->nlibs + 1) * sizeof(*r->libs));
			memset(&r->libs[i], 0, sizeof(r->libs[i]));
			r->libs[i].name = xstrdup(name);
			r->nlibs++;
		}
		r->lib_last = i;
		r->lib_stack = stack_id;
	}
	r->libs[r->lib_last].v[metric] += v;
}

static int lib_cmp(const void *a, const void *b, void *metric_p)
{
	const struct trace_row_lib *x = *(const struct trace_row_lib *const *)a,
				   *y = *(const struct trace_row_lib *const *)b;
	int metric = *(const int *)metric_p;
	if (x->v[metric] != y->v[metric])
		return x->v[metric] < y->v[metric] ? 1 : -1;
	for (int m = 0; m < TM_COUNT; m++)
		if (x->v[m] != y->v[m])
			return x->v[m] < y->v[m] ? 1 : -1;
	return strcmp(x->name, y->name);
}

size_t trace_row_libs(const struct trace_row *r, int metric, const struct trace_row_lib ***out)
{
	const struct trace_row_lib **v = xrealloc(NULL, (r->nlibs ? r->nlibs : 1) * sizeof(*v));
	for (size_t i = 0; i < r->nlibs; i++)
		v[i] = &r->libs[i];
	if (r->nlibs > 1)
		qsort_r(v, r->nlibs, sizeof(*v), lib_cmp, &metric);
	*out = v;
	return r->nlibs;
}

const char *trace_row_library(const struct trace_row *r, int metric, bool brief, char *buf,
			      size_t size)
{
	const struct trace_row_lib **v;
	size_t n = trace_row_libs(r, metric, &v), shared = 0;
	for (size_t i = 0; i < n; i++)
		shared += v[i]->v[metric] != 0;
	if (shared < 2)
		shared = n; /* no share of this figure: every library that called */
	if (!n)
		buf = NULL;
	else if (shared == 1)
		snprintf(buf, size, "%s", v[0]->name);
	else if (brief)
		snprintf(buf, size, "%s +%zu", v[0]->name, shared - 1);
	else {
		size_t o = (size_t)snprintf(buf, size, "mixed:");
		for (size_t i = 0; i < shared && o < size; i++) {
			char b[32];
			if (metric == TM_CALLS)
				snprintf(b, sizeof(b), "%" PRIu64 " calls", v[i]->v[metric]);
			else
				fmt_size(b, v[i]->v[metric]);
			o += (size_t)snprintf(buf + o, size - o, "%s %s %s", i ? "," : "",
					      v[i]->name, b);
		}
	}
	free(v);
	return buf;
}

void trace_rows_fold(struct trace_rows *rs)
{
	struct trace_row *r, *rt;
	HASH_ITER(hh, rs->rows, r, rt)
	{
		bool seen = false;
		for (int m = 0; m < TM_COUNT; m++) {
			seen |= r->cur[m] != 0;
			r->v[m] += r->cur[m];
			if (r->max_trace[m] < 0 || r->cur[m] > r->max[m]) {
				r->max[m] = r->cur[m];
				r->max_trace[m] = rs->trace;
			}
			r->cur[m] = 0;
		}
		r->ntraces += seen;
	}
	struct trace_row_ref *ref, *reft;
	HASH_ITER(hh, rs->cache, ref, reft)
	{
		HASH_DEL(rs->cache, ref);
		free(ref);
	}
	rs->trace++;
}

static int row_cmp(const void *a, const void *b, void *metric_p)
{
	const struct trace_row *x = *(struct trace_row *const *)a,
			       *y = *(struct trace_row *const *)b;
	int metric = *(const int *)metric_p;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->v[metric] != y->v[metric])
		return x->v[metric] < y->v[metric] ? 1 : -1;
	for (int m = 0; m < TM_COUNT; m++)
		if (x->v[m] != y->v[m])
			return x->v[m] < y->v[m] ? 1 : -1;
	return strcmp(x->key, y->key);
}

struct trace_row **trace_rows_sorted(struct trace_rows *rs, int metric, size_t *n)
{
	*n = HASH_COUNT(rs->rows);
	struct trace_row **out = xrealloc(NULL, *n * sizeof(*out)), *r, *rt;
	size_t i = 0;
	HASH_ITER(hh, rs->rows, r, rt) out[i++] = r;
	if (*n)
		qsort_r(out, *n, sizeof(*out), row_cmp, &metric);
	return out;
}

void trace_rows_free(struct trace_rows *rs)
{
	struct trace_row *r, *rt;
	HASH_ITER(hh, rs->rows, r, rt)
	{
		HASH_DEL(rs->rows, r);
		for (size_t i = 0; i < r->nlibs; i++)
			free(r->libs[i].name);
		free(r->libs);
		free(r->id);
		free(r);
	}
	struct trace_row_ref *ref, *reft;
	HASH_ITER(hh, rs->cache, ref, reft)
	{
		HASH_DEL(rs->cache, ref);
		free(ref);
	}
}
