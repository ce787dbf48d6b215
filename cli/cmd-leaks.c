/* gpumemtrace leaks: allocations still live at the end of the trace, grouped
 * by stack (or function, library, API), with counts and bytes. The figures
 * are analysis/leaks.c's; this file prints them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/leaks.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/report-print.h"

static const char about[] =
    "Lists the allocations still live when the trace ended (never freed), grouped\n"
    "by allocation site, largest first: how many, how many bytes, which kinds of\n"
    "memory (device, stream-ordered, VMM, managed, pinned or registered host,\n"
    "arrays, IPC mappings), when the first and the last of them were allocated,\n"
    "the site with its callers and the library it is charged to. VA reservations\n"
    "and pool objects hold no memory and are left out.\n"
    "\n"
    "A framework's cache or pool (a caching allocator's segments, a stream-ordered\n"
    "pool, a preallocation, recognized as explain does) is held until exit by\n"
    "design: a note line says so; `gpumemtrace growth` gives the leak verdict.\n"
    "\n"
    "A trace without a trailer (the process was killed, or is still running) ends\n"
    "at its last flush: then \"live at the end\" means live at that flush, not at\n"
    "exit; the output says so, and \"complete\" is false.\n"
    "\n"
    "With several traces (one per rank or process) the groups add up over the\n"
    "processes; each names the process holding the most, and the per-process\n"
    "totals show the imbalance.\n";
static const char more[] = "examples:\n"
			   "  gpumemtrace leaks run.gmt\n"
			   "  gpumemtrace leaks --by library --json run.gmt\n"
			   "  gpumemtrace leaks rank0.gmt rank1.gmt rank2.gmt rank3.gmt\n";
static const struct opt_usage usage = {
    .name = "leaks", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

static const char *const group_names[] = {"stack", "function", "library", "api"};

static const char *incomplete_why(const struct trace *t)
{
	return t->info.stop == GMT_STOP_TORN	  ? "torn tail"
	       : t->info.stop == GMT_STOP_CORRUPT ? "corrupt chunk"
	       : t->info.stop == GMT_STOP_IO	  ? "read error"
						  : "no trailer";
}

/* Live allocations that may be only a free that was lost: as many as
 * the events lost, at most. */
static uint64_t maybe_freed(const struct leak_trace *lt)
{
	uint64_t lost = trace_lost_own(&lt->t);
	return lost < lt->allocs ? lost : lt->allocs;
}

static void kinds_text(FILE *f, const uint64_t *bucket)
{
	char b[32];
	bool first = true;
	for (int k = 0; k < BK_COUNT; k++) {
		if (!bucket[k])
			continue;
		fprintf(f, "%s%s %s", first ? "" : ", ", bucket_label[k], fmt_size(b, bucket[k]));
		first = false;
	}
	if (first)
		fputs("nothing", f);
}

/* A framework's cache or pool is live until exit by design: say so, once
 * per trace, before the rows read as leaked tensors. */
static void held_note(FILE *f, const struct leak_trace *ls, int n)
{
	char lb[64], line[1024];
	for (int i = 0; i < n; i++) {
		if (!ls[i].held_by[0])
			continue;
		char part[200] = "these are", b1[32], b2[32];
		if (ls[i].held_bytes < ls[i].bytes) /* a library's own beside the pool's */
			snprintf(part, sizeof(part), "%s of these are",
				 fmt_size(b1, ls[i].held_bytes));
		size_t k = (size_t)snprintf(
		    line, sizeof(line),
		    "note: %s%s%s%s %s, held until exit, not necessarily leaked tensors",
		    n > 1 ? "in " : "", n > 1 ? trace_label(&ls[i].t, lb, sizeof(lb)) : "",
		    n > 1 ? ": " : "", part, ls[i].held_by);
		if (ls[i].held_bytes < ls[i].bytes && k < sizeof(line))
			k += (size_t)snprintf(line + k, sizeof(line) - k,
					      "; the other %s are allocations outside the pool, "
					      "made by the libraries' own driver calls",
					      fmt_size(b2, ls[i].bytes - ls[i].held_bytes));
		if (k < sizeof(line))
			snprintf(line + k, sizeof(line) - k,
				 "; see `gpumemtrace growth` (leak verdict) and `explain`");
		cli_wrap(f, 0, cli_text_width(f), line);
	}
}

/* The key, its [library] and the kinds when not plain device memory:
 * shortened, then dropped, before the site is cut below RB_SITE_MIN. */
static void print_site(FILE *f, struct trace_rows *rs, struct leak_trace *ls,
		       const struct trace_row *r, int room)
{
	char lib[512], brief[512], kinds[256] = "", tails[3][1100];
	const char *t[3] = {tails[0], tails[1], ""};
	if (r->bucket_end[BK_DEVICE] != r->v[TM_END]) {
		FILE *m = fmemopen(kinds, sizeof(kinds) - 1, "w");
		if (!m)
			xalloc_failed();
		fputs("  (", m);
		kinds_text(m, r->bucket_end);
		fputc(')', m);
		fclose(m);
	}
	if (rs->by == GROUP_STACK || rs->by == GROUP_FUNCTION) {
		if (!trace_row_library(r, TM_END, false, lib, sizeof(lib)))
			snprintf(lib, sizeof(lib), "%s",
				 trace_library(&ls[r->trace].t, r->stack_id));
		if (!trace_row_library(r, TM_END, true, brief, sizeof(brief)))
			snprintf(brief, sizeof(brief), "%s", lib);
		snprintf(tails[0], sizeof(tails[0]), "  [%s]%s", lib, kinds);
		snprintf(tails[1], sizeof(tails[1]), "  [%s]", brief);
	} else {
		snprintf(tails[0], sizeof(tails[0]), "%s", kinds);
		tails[1][0] = 0;
	}
	cli_site_line(f, r->key, room, t, 3);
}

static void print_human(struct trace_rows *rs, struct leak_trace *ls, int n, uint64_t limit)
{
	FILE *f = stdout;
	char b1[32], b2[32], b3[32], lb[64];
	size_t nrows;
	struct trace_row **rows = trace_rows_sorted(rs, TM_END, &nrows);
	uint64_t bytes = 0, allocs = 0, bucket[BK_COUNT] = {0};
	for (int i = 0; i < n; i++) {
		bytes += ls[i].bytes;
		allocs += ls[i].allocs;
		for (int k = 0; k < BK_COUNT; k++)
			bucket[k] += ls[i].bucket[k];
	}
	fprintf(f, "allocations live at the end, grouped by %s", group_names[rs->by]);
	if (rs->by == GROUP_STACK)
		fprintf(f, " (the site and %d caller%s)", rs->depth, rs->depth == 1 ? "" : "s");
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		const struct trace *t = &ls[i].t;
		if (t->complete)
			continue;
		char *text = NULL;
		if (asprintf(&text,
			     "INCOMPLETE TRACE: %s (%s): the process did not exit cleanly; \"live "
			     "at the end\" means live at its last flush (%s), not at exit",
			     t->path, incomplete_why(t),
			     t->events || t->has_trailer ? trace_fmt_time(b1, trace_duration_ns(t))
							 : "no event was written") < 0)
			xalloc_failed();
		cli_wrap_hang(f, 2, cli_text_width(f), text); /* the path may be long */
		free(text);
	}
	for (int i = 0; i < n; i++) {
		const struct trace *t = &ls[i].t;
		uint64_t lost = trace_lost_own(t);
		cli_partial_line(f, t, n > 1);
		if (!lost || !ls[i].allocs)
			continue;
		char *text = NULL;
		char some[64] = "the allocation";
		if (ls[i].allocs > 1)
			snprintf(some, sizeof(some),
				 "up to %" PRIu64 " of the %" PRIu64 " allocations",
				 maybe_freed(&ls[i]), ls[i].allocs);
		if (asprintf(&text,
			     "note: a free that was lost is not a leak: %s below%s%s may have been "
			     "freed (%" PRIu64 " event%s lost)",
			     some, n > 1 ? " from " : "", n > 1 ? t->path : "", lost,
			     lost == 1 ? "" : "s") < 0)
			xalloc_failed();
		cli_wrap_hang(f, 2, cli_text_width(f), text);
		free(text);
	}
	fprintf(f, "total: %s in %" PRIu64 " allocation%s (", fmt_size(b1, bytes), allocs,
		allocs == 1 ? "" : "s");
	kinds_text(f, bucket);
	fputs(")\n", f);
	held_note(f, ls, n);
	int width = cli_text_width(f), room = width - 46 - (n > 1 ? 27 : 0);
	/* narrower than the figures and a site: the site under its figures */
	bool under = room < RB_SITE_MIN;
	if (under)
		room = width - 6;
	if (nrows) {
		fprintf(f, "\n  %10s %7s  %-*s%s%s%s\n", "bytes", "allocs", under ? 0 : 22,
			"allocated", under ? "\n      " : "  ",
			n > 1 ? "most in                    " : "",
			rs->by == GROUP_STACK || rs->by == GROUP_FUNCTION ? "site  [library]"
			: rs->by == GROUP_LIBRARY			  ? "library"
									  : "api");
	}
	size_t shown = 0;
	for (size_t i = 0; i < nrows && (!limit || shown < limit); i++, shown++) {
		struct trace_row *r = rows[i];
		char when[80];
		trace_fmt_time(b2, (int64_t)r->first_ns);
		trace_fmt_time(b3, (int64_t)r->last_ns);
		/* one time when both print the same ("+8.841 s..+8.841 s" read oddly) */
		if (strcmp(b2, b3) == 0)
			snprintf(when, sizeof(when), "%s", b2);
		else
			snprintf(when, sizeof(when), "%s..%s", b2, b3);
		fprintf(f, "  %10s %7" PRIu64 "  %-*s%s", fmt_size(b1, r->v[TM_END]), r->end_allocs,
			under ? 0 : 22, when, under ? "\n      " : "  ");
		if (n > 1) {
			int mt = r->max_trace[TM_END];
			char mb[80];
			snprintf(mb, sizeof(mb), "%s %s",
				 mt >= 0 ? trace_label(&ls[mt].t, lb, sizeof(lb)) : "-",
				 fmt_size(b1, r->max[TM_END]));
			fprintf(f, "%-26.26s ", mb);
		}
		/* the key keeps RB_SITE_MIN columns, never the figures (46) */
		print_site(f, rs, ls, r, room - (under && n > 1 ? 27 : 0));
	}
	if (nrows > shown)
		fprintf(f, "  ... %zu more (-n 0 shows all)\n", nrows - shown);
	if (!nrows)
		fputs("\nnothing was left allocated\n", f);
	if (n > 1) {
		/* the paths under their rows where they do not fit beside them */
		size_t longest = 0;
		for (int i = 0; i < n; i++)
			if (strlen(ls[i].t.path) > longest)
				longest = strlen(ls[i].t.path);
		bool narrow = 59 + (int)longest > cli_text_width(f);
		fprintf(f, "\nprocesses\n  %-3s %-24s %12s %13s%s\n", "#", "process", "live at end",
			"live allocs", narrow ? "\n      trace" : "  trace");
		uint64_t *v = xrealloc(NULL, (size_t)n * sizeof(*v));
		struct trace **tps = xrealloc(NULL, (size_t)n * sizeof(*tps));
		for (int i = 0; i < n; i++) {
			v[i] = ls[i].bytes;
			tps[i] = &ls[i].t;
			fprintf(f, "  %-3d %-24.24s %12s %13" PRIu64 "%s%s%s\n", i,
				trace_label(&ls[i].t, lb, sizeof(lb)), fmt_size(b1, ls[i].bytes),
				ls[i].allocs, narrow ? "\n      " : "  ", ls[i].t.path,
				ls[i].t.complete ? "" : " (INCOMPLETE)");
		}
		fputs("imbalance\n", f);
		trace_imbalance_text(f, "live at end", v, tps, (size_t)n);
		free(v);
		free(tps);
	}
	free(rows);
}

static void json_kinds(FILE *f, const uint64_t *bucket)
{
	fputc('{', f);
	bool first = true;
	for (int k = 0; k < BK_COUNT; k++) {
		if (!leaks_counted(k))
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", bucket_key[k], bucket[k]);
		first = false;
	}
	fputc('}', f);
}

static void print_json(struct trace_rows *rs, struct leak_trace *ls, int n, uint64_t limit)
{
	FILE *f = stdout;
	char lb[64];
	size_t nrows;
	struct trace_row **rows = trace_rows_sorted(rs, TM_END, &nrows);
	uint64_t bytes = 0, allocs = 0, bucket[BK_COUNT] = {0};
	bool complete = true;
	fprintf(f, "{\"by\": \"%s\", \"depth\": %d, \"limit\": %" PRIu64 ",\n \"traces\": [",
		group_names[rs->by], rs->depth, limit);
	for (int i = 0; i < n; i++) {
		const struct trace *t = &ls[i].t;
		bytes += ls[i].bytes;
		allocs += ls[i].allocs;
		for (int k = 0; k < BK_COUNT; k++)
			bucket[k] += ls[i].bucket[k];
		complete &= t->complete;
		fprintf(f, "%s\n  {\"path\": ", i ? "," : "");
		json_cstr0(f, t->path);
		fputs(", \"label\": ", f);
		json_cstr0(f, trace_label(t, lb, sizeof(lb)));
		fprintf(f,
			", \"pid\": %" PRIu64 ", \"rank\": ", t->has_process ? t->pid : t->hdr.pid);
		if (trace_rank(t) >= 0)
			fprintf(f, "%" PRId64, trace_rank(t));
		else
			fputs("null", f);
		fprintf(f,
			", \"complete\": %s, \"live_at\": \"%s\", \"end_time_ns\": %" PRId64
			", \"live_bytes\": %" PRIu64 ", \"live_allocations\": %" PRIu64
			", \"by_kind\": ",
			t->complete ? "true" : "false", t->complete ? "exit" : "last_flush",
			trace_duration_ns(t), ls[i].bytes, ls[i].allocs);
		json_kinds(f, ls[i].bucket);
		cli_json_partial(f, t);
		fprintf(f, ", \"maybe_freed_allocations\": %" PRIu64, maybe_freed(&ls[i]));
		fputs(", \"held_by\": ", f);
		if (ls[i].held_by[0]) {
			json_cstr0(f, ls[i].held_by);
			fprintf(f, ", \"held_by_bytes\": %" PRIu64, ls[i].held_bytes);
		} else
			fputs("null, \"held_by_bytes\": null", f);
		fputc('}', f);
	}
	fprintf(f,
		"],\n \"complete\": %s, \"live_at\": \"%s\", \"live_bytes\": %" PRIu64
		", \"live_allocations\": %" PRIu64 ", \"by_kind\": ",
		complete ? "true" : "false", complete ? "exit" : "last_flush", bytes, allocs);
	json_kinds(f, bucket);
	fprintf(f, ",\n \"groups_total\": %zu, \"groups\": [", nrows);
	for (size_t i = 0; i < nrows && (!limit || i < limit); i++) {
		struct trace_row *r = rows[i];
		struct trace *t = &ls[r->trace].t;
		fprintf(f, "%s\n  {\"key\": ", i ? "," : "");
		json_cstr0(f, r->key);
		fprintf(f,
			", \"bytes\": %" PRIu64 ", \"allocations\": %" PRIu64
			", \"first_time_ns\": %" PRIu64 ", \"last_time_ns\": %" PRIu64
			", \"by_kind\": ",
			r->v[TM_END], r->end_allocs, r->first_ns, r->last_ns);
		json_kinds(f, r->bucket_end);
		if (rs->by != GROUP_API) {
			struct trace_frame fr;
			bool has = r->stack_id && trace_site(t, r->stack_id, &fr);
			char callers[2048] = "";
			cli_json_libraries(f, t, r, TM_END);
			fputs(", \"function\": ", f);
			json_cstr0(f, has && fr.function ? fr.function : "");
			fputs(", \"site\": ", f);
			char site[1024] = "";
			if (has)
				trace_frame_text(&fr, site, sizeof(site));
			json_cstr0(f, site);
			fputs(", \"callers\": ", f);
			if (has)
				trace_callers_text(t, r->stack_id, fr.depth, 3, callers,
						   sizeof(callers));
			json_cstr0(f, callers[0] ? callers + 4 : "");
			fprintf(f, ", \"stack_id\": %" PRIu64, r->stack_id);
			if (r->stack_id)
				cli_json_stack(f, t, r->stack_id);
		} else {
			fputs(", \"api\": ", f);
			json_cstr0(f, api_name(site_api(t, r->stack_id, r->api)));
		}
		if (n > 1)
			fprintf(f, ", \"traces\": %d, \"max_trace\": %d, \"max_bytes\": %" PRIu64,
				r->ntraces, r->max_trace[TM_END], r->max[TM_END]);
		fputc('}', f);
	}
	fputc(']', f);
	if (n > 1) {
		uint64_t *v = xrealloc(NULL, (size_t)n * sizeof(*v));
		for (int i = 0; i < n; i++)
			v[i] = ls[i].bytes;
		fputs(",\n \"imbalance\": {\"live_bytes\": ", f);
		trace_imbalance_json(f, v, (size_t)n);
		fputc('}', f);
		free(v);
	}
	fputs("}\n", f);
	free(rows);
}

int cmd_leaks(int argc, char **argv)
{
	bool json = false;
	struct site_args sa = {0};
	int by = GROUP_STACK; /* the choices are in enum order */
	uint64_t depth = 3, limit = 20;
	const struct option opts[] = {
	    OPT_CHOICE("by", &by, "stack|function|library|api", "grouping",
		       "grouping: stack (default), function, library or api", .argh = "G"),
	    OPT_UINT("depth", &depth, "N",
		     "callers kept in a stack key (default 3; 0: the site alone)", .max = 64),
	    OPT_UINT("limit", &limit, "N", "groups shown (default 20; 0: all)", .short_name = 'n'),
	    OPT_BOOL("json", &json, "one JSON object instead of tables (keys: docs/cli.md)"),
	    OPT_SITES(&sa),
	    OPT_END(),
	};
	const char **paths;
	int npaths;
	int rc = opt_parse_sites(&usage, opts, argc, argv, &paths, &npaths, &sa);
	if (rc >= 0)
		return rc;

	struct trace_rows rows;
	trace_rows_init(&rows, (enum trace_group)by, (int)depth);
	struct leak_trace *ls = xcalloc((size_t)npaths, sizeof(*ls));
	int opened = 0;
	for (int i = 0; i < npaths && rc < 0; i++) {
		rc = leaks_read_trace(&rows, &ls[i], "leaks", paths[i], &sa.opts, !json);
		if (rc >= 0 && !ls[i].t.reader)
			break;
		opened++;
	}
	if (rc < 0) {
		if (json)
			print_json(&rows, ls, npaths, limit);
		else
			print_human(&rows, ls, npaths, limit);
		fflush(stdout);
		rc = 0;
		for (int i = 0; i < npaths; i++) {
			int r = trace_finish(&ls[i].t);
			rc = r > rc ? r : rc;
		}
	}
	for (int i = 0; i < opened; i++)
		trace_close(&ls[i].t);
	trace_rows_free(&rows);
	free(ls);
	free(paths);
	site_args_done(usage.name, &sa);
	return rc;
}
