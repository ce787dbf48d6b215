/* The figures `check` and `diff` compare (check-measure.h). */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/check-measure.h"
#include "analysis/sites.h"

struct cm_ignore_cache {
	UT_hash_handle hh;
	uint64_t stack_id;
	bool ignored;
};

static bool ignored(struct measure *m, uint64_t stack_id)
{
	if (!m->opt->nignore)
		return false;
	struct cm_ignore_cache *c = NULL;
	HASH_FIND(hh, m->cache, &stack_id, sizeof(stack_id), c);
	if (c)
		return c->ignored;
	c = xcalloc(1, sizeof(*c));
	c->stack_id = stack_id;
	const char *lib = trace_library(&m->t, stack_id);
	for (size_t i = 0; lib && i < m->opt->nignore && !c->ignored; i++)
		c->ignored = fnmatch(m->opt->ignore[i], lib, 0) == 0;
	HASH_ADD(hh, m->cache, stack_id, sizeof(c->stack_id), c);
	return c->ignored;
}

/* Whether event e is an allocation left out by --ignore-library. */
static bool skip(struct measure *m, const struct gmt_event *e)
{
	const struct api_info *a = api_lookup(e->api);
	return a && a->op == GMT_OP_ALLOC && ignored(m, e->stack_id);
}

/* The API the call counts as (site_api: the static runtime's driver calls
 * as the runtime's), remembering the last answer. */
static uint32_t call_api(struct measure *m, const struct gmt_event *e)
{
	if (m->last_key[0] != e->stack_id || m->last_key[1] != e->api || !m->last_api) {
		m->last_key[0] = e->stack_id;
		m->last_key[1] = e->api;
		m->last_api = site_api(&m->t, e->stack_id, e->api);
	}
	return m->last_api;
}

static void on_event1(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct measure *m = ctx;
	struct cm_call *c = NULL;
	uint32_t api = call_api(m, e);
	HASH_FIND(hh, m->calls, &api, sizeof(api), c);
	if (!c) {
		c = xcalloc(1, sizeof(*c));
		c->api = api;
		HASH_ADD(hh, m->calls, api, sizeof(c->api), c);
	}
	c->count++;
	if (gmt_failed(e->result, e->flags))
		c->failed++;
	else
		c->bytes += e->size;
	if (skip(m, e)) {
		if (!gmt_failed(e->result, e->flags)) {
			m->ignored_allocs++;
			m->ignored_bytes += e->size;
		}
		return;
	}
	replay_apply(&m->rp, e);
}

static void snapshot(struct measure *m, int64_t device)
{
	char buf[4096];
	GMT_EACH_SPACE(sp)
	{
		struct rp_live *l, *lt;
		RP_EACH(&m->rp2, sp, l, lt)
		{
			if (l->bucket != BK_DEVICE || l->device != device)
				continue;
			const char *key = trace_group_key(&m->t, m->opt->by, m->opt->depth,
							  l->stack_id, l->api, buf, sizeof(buf));
			if (!key)
				key = "?";
			size_t klen = strlen(key);
			char *id = xcalloc(1, klen + 32);
			int n = snprintf(id, 32, "%lld\x1f", (long long)device);
			memcpy(id + n, key, klen + 1);
			struct cm_site *s = NULL;
			HASH_FIND_STR(m->sites, id, s);
			if (!s) {
				s = xcalloc(1, sizeof(*s));
				s->id = id;
				s->key = id + n;
				s->device = device;
				HASH_ADD_KEYPTR(hh, m->sites, s->id, strlen(s->id), s);
			} else {
				free(id);
			}
			s->bytes += l->size;
			s->count++;
		}
	}
}

static void on_event2(void *ctx, const struct gmt_event *e, struct replay *unused)
{
	struct measure *m = ctx;
	if (m->next_target >= m->ntargets || skip(m, e))
		return;
	replay_apply(&m->rp2, e);
	while (m->next_target < m->ntargets && m->targets[m->next_target] == m->rp2.seq)
		snapshot(m, m->target_devs[m->next_target++]);
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int call_cmp(struct cm_call *a, struct cm_call *b)
{
	return a->api < b->api ? -1 : a->api > b->api;
}

int check_measure(struct measure *m, const char *cmd, const char *path,
		  const struct cm_options *opt)
{
	memset(m, 0, sizeof(*m));
	m->opt = opt;
	int rc = trace_open(&m->t, cmd, path);
	if (rc >= 0)
		return rc;
	m->opened = true;
	m->t.site_opts = opt->rules;
	m->t.short_names = opt->short_names;
	replay_init(&m->rp);
	rc = trace_replay(&m->t, NULL, on_event1, m);
	if (rc >= 0)
		return rc;
	HASH_SORT(m->calls, call_cmp);
	if (!opt->sites)
		return -1;

	/* the peak event of each device, in replay order */
	m->targets = xcalloc(1, (m->rp.ndevs + 1) * sizeof(*m->targets));
	m->target_devs = xcalloc(1, (m->rp.ndevs + 1) * sizeof(*m->target_devs));
	for (size_t i = 0; i < m->rp.ndevs; i++) {
		const struct rp_dev *d = &m->rp.devs[i];
		if (!d->lv.peak_seq)
			continue;
		size_t k = m->ntargets++;
		while (k && m->targets[k - 1] > d->lv.peak_seq) {
			m->targets[k] = m->targets[k - 1];
			m->target_devs[k] = m->target_devs[k - 1];
			k--;
		}
		m->targets[k] = d->lv.peak_seq;
		m->target_devs[k] = d->ordinal;
	}
	if (!m->ntargets)
		return -1;
	replay_init(&m->rp2);
	rc = trace_replay(&m->t, NULL, on_event2, m);
	return rc >= 0 ? rc : -1;
}

void check_measure_free(struct measure *m)
{
	if (!m->opened)
		return;
	struct cm_call *c, *ct;
	HASH_ITER(hh, m->calls, c, ct)
	{
		HASH_DEL(m->calls, c);
		free(c);
	}
	struct cm_site *s, *st;
	HASH_ITER(hh, m->sites, s, st)
	{
		HASH_DEL(m->sites, s);
		free(s->id);
		free(s);
	}
	struct cm_ignore_cache *ic, *it;
	HASH_ITER(hh, m->cache, ic, it)
	{
		HASH_DEL(m->cache, ic);
		free(ic);
	}
	replay_free(&m->rp);
	replay_free(&m->rp2);
	free(m->targets);
	free(m->target_devs);
	trace_close(&m->t);
	m->opened = false;
}

struct rp_level check_measure_dev(const struct measure *m, int64_t ordinal)
{
	for (size_t i = 0; i < m->rp.ndevs; i++)
		if (m->rp.devs[i].ordinal == ordinal)
			return m->rp.devs[i].lv;
	return (struct rp_level){0};
}

bool check_measure_has_dev(const struct measure *m, int64_t ordinal)
{
	for (size_t i = 0; i < m->t.ndevs; i++)
		if (m->t.devs[i].ordinal == ordinal)
			return true;
	for (size_t i = 0; i < m->rp.ndevs; i++)
		if (m->rp.devs[i].ordinal == ordinal)
			return true;
	return false;
}

size_t check_measure_devs(const struct measure *m, int64_t **out)
{
	int64_t *v = xcalloc(1, (m->t.ndevs + m->rp.ndevs + 1) * sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < m->t.ndevs; i++)
		v[n++] = m->t.devs[i].ordinal;
	for (size_t i = 0; i < m->rp.ndevs; i++)
		v[n++] = m->rp.devs[i].ordinal;
	if (n)
		qsort(v, n, sizeof(*v), i64_cmp);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	*out = v;
	return k;
}
