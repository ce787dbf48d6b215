/* leaks' pass (leaks.h). */
#include "analysis/explain.h"
#include "analysis/leaks.h"
#include "common/events.h"

bool leaks_counted(int bucket)
{
	return bucket >= 0 && bucket < BK_COUNT && bucket != BK_VA && bucket != BK_POOL;
}

static int add_rows(struct trace_rows *rows, struct leak_trace *lt, struct replay *rp, int rc);

int leaks_read_trace(struct trace_rows *rows, struct leak_trace *lt, const char *cmd,
		     const char *path, const struct site_opts *sites, bool short_names)
{
	struct replay rp;
	replay_init(&rp);
	int rc = trace_open_replay(&lt->t, cmd, path, &rp, NULL, NULL);
	if (rc >= 0) {
		replay_free(&rp);
		return rc;
	}
	lt->t.site_opts = sites;
	lt->t.short_names = short_names;
	return add_rows(rows, lt, &rp, -1);
}

/* What rp left live, into rows; rp freed. rc: the replay's. */
static int add_rows(struct trace_rows *rows, struct leak_trace *lt, struct replay *rp, int rc)
{
	uint64_t async = 0; /* live stream-ordered bytes */
	if (rc < 0) {
		GMT_EACH_SPACE(sp)
		{
			struct rp_live *l, *tmp;
			RP_EACH(rp, sp, l, tmp)
			{
				if (!leaks_counted(l->bucket))
					continue;
				struct trace_row *r =
				    trace_rows_get(rows, &lt->t, -1, l->stack_id, l->api);
				trace_row_add(r, &lt->t, l->stack_id, TM_END, l->size);
				r->end_allocs++;
				r->bucket_end[l->bucket] += l->size;
				uint64_t rel = (uint64_t)trace_rel(&lt->t, l->time_ns);
				if (rel < r->first_ns)
					r->first_ns = rel;
				if (rel > r->last_ns)
					r->last_ns = rel;
				lt->bytes += l->size;
				const struct api_info *a = api_lookup(l->api);
				if (a && a->kind == GMT_KIND_ASYNC)
					async += l->size;
				lt->allocs++;
				lt->bucket[l->bucket] += l->size;
			}
		}
	}
	trace_rows_fold(rows);
	replay_free(rp);
	struct ex_recog rec;
	if (rc < 0 && lt->bytes && explain_allocator(&lt->t, false, 0, &rec) < 0 &&
	    explain_held_by(&rec, lt->held_by, sizeof(lt->held_by)) == NULL)
		lt->held_by[0] = '\0';
	if (lt->held_by[0])
		lt->held_bytes = rec.mode == MODE_PT_ASYNC || rec.mode == MODE_TF_ASYNC ||
					 rec.mode == MODE_ASYNC_POOL
				     ? async
				     : lt->bytes;
	return rc;
}
