/* gpumemtrace replay HISTORY and gpumemtrace whatif HISTORY --alloc-conf
 * CONF: a PyTorch allocator history through the caching allocator's
 * model (analysis/allocreplay.h); this file parses and renders. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/report-print.h"
#include "analysis/allocreplay.h"
#include "analysis/trace.h"
#include "common/text.h"
#include "analysis/diag.h"

static const char replay_about[] =
    "Feeds a PyTorch allocator history, a memory snapshot pickle\n"
    "(torch.cuda.memory._dump_snapshot, recorded with\n"
    "_record_memory_history), through gpumemtrace's model of the caching\n"
    "allocator (model/torchalloc.h) under the settings it recorded, and says\n"
    "how often the model made the allocator's own choice: the same cached\n"
    "block, or a new segment of the same size. After each request the model\n"
    "takes what the allocator took, so one difference never hides the next;\n"
    "the first one is named (the allocation, its stack, the block the model\n"
    "chose and the one the allocator chose): a divergence is a rule the model\n"
    "does not know. What was live before the history's first entry is\n"
    "rebuilt from the segments and blocks at its end, as memory_viz does.\n"
    "Then the requests alone run through a fresh model: its reserved peak\n"
    "against the recorded one. Each device has an allocator of its own and is\n"
    "replayed on its own. Free blocks of one size are ordered by segment age\n"
    "(PyTorch since 2025) or by address (before): the one that fits the\n"
    "history better is used, and said.\n";
static const char whatif_about[] =
    "Runs a PyTorch allocator history (a memory snapshot pickle) through\n"
    "gpumemtrace's model of the caching allocator twice: under the settings it\n"
    "recorded and under the ones asked (--alloc-conf, in\n"
    "PYTORCH_CUDA_ALLOC_CONF's syntax: expandable_segments, max_split_size_mb,\n"
    "roundup_power2_divisions, garbage_collection_threshold; --fraction for\n"
    "set_per_process_memory_fraction; --device-size for another device), and\n"
    "sets side by side: the reserved peak, the segments then, the free bytes\n"
    "inside the cache at the peak (fragmentation), the largest free block, and\n"
    "whether a request would run out of memory. With the replay's fidelity\n"
    "(replay explains it): the plan is as good as the model is on this\n"
    "history. Segment frees the program caused (empty_cache) are replayed\n"
    "where they happened; those of the allocator's own OOM path or garbage\n"
    "collection are the model's to make when it knows the device's size\n"
    "(--device-size, else estimated from an oom entry: the reserved bytes\n"
    "then plus the device's free bytes).\n";
static const char more[] =
    "What the model cannot know: frees of blocks used on other streams wait\n"
    "for events (they are replayed when the history says they completed);\n"
    "CUDA graphs' private pools (their segments are replayed, not modelled);\n"
    "when empty_cache is called (as recorded); memory outside this allocator\n"
    "(contexts, cuBLAS, NCCL, other processes: a driver trace shows them).\n"
    "\n"
    "exit status: 0 ok, 2 usage, 3 cannot read a file, 4 not a snapshot or\n"
    "one refused (reader: docs/cli.md import)\n";

struct args {
	bool json;
	int64_t device;
	bool has_device;
	const char *conf;
	double fraction;
	const char *fraction_s;
	uint64_t device_size;
	/* the trace's own partial data, said first (nothing is lost silently) */
	bool complete;
	uint64_t lost;
	char partial_what[160], partial_text[256]; /* "" when whole */
};

/* Text: the PARTIAL DATA line under the first; JSON: its keys. */
static void print_partial(const struct args *a)
{
	if (a->partial_text[0])
		cli_wrapf(stdout, 4, "  %s", a->partial_text);
}

static void json_partial(const struct args *a)
{
	printf(", \"complete\": %s, \"lost_events\": %" PRIu64 ", \"partial\": ",
	       a->complete ? "true" : "false", a->lost);
	if (a->partial_what[0])
		json_cstr0(stdout, a->partial_what);
	else
		fputs("null", stdout);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static void choice_text(char *buf, size_t size, const struct ar_choice *c)
{
	char b[32];
	if (c->new_segment && c->ptr)
		snprintf(buf, size, "a new %s segment (mapping at 0x%" PRIx64 ")",
			 fmt_size(b, c->size), c->ptr);
	else if (c->new_segment)
		snprintf(buf, size, "a new %s segment", fmt_size(b, c->size));
	else
		snprintf(buf, size, "the cached block at 0x%" PRIx64, c->ptr);
}

static void print_fidelity(FILE *f, const struct ar_device *d)
{
	char b1[32], b2[32];
	cli_wrapf(f, 2,
		  "device %" PRId64 ": %" PRIu64
		  " allocations; the model made the allocator's choice in %" PRIu64
		  " (%.2f%%): %" PRIu64 " cached blocks, %" PRIu64 " new segments",
		  d->device, d->allocs, d->same, pct(d->same, d->allocs), d->same_cached,
		  d->same_new);
	if (d->before_segments || d->before_blocks)
		cli_wrapf(f, 4,
			  "  the history starts mid-run: %" PRIu64 " segments (%s) and %" PRIu64
			  " blocks (%s) were live before it, rebuilt from its end",
			  d->before_segments, fmt_size(b1, d->before_segment_bytes),
			  d->before_blocks, fmt_size(b2, d->before_block_bytes));
	if (d->differ_age)
		cli_wrapf(f, 4,
			  "  %" PRIu64 " of the %" PRIu64
			  " differences chose between two cached blocks in segments older than the "
			  "history: their order by age is not in it",
			  d->differ_age, d->differ);
	static const char unfollowed[] = "allocations were where the model had no free block (the "
					 "state before the history, rebuilt, differs there)";
	if (d->unfollowed)
		cli_wrapf(f, 4, "  %" PRIu64 " %s", d->unfollowed, unfollowed);
}

static const char *size_source(const struct ar_device *d)
{
	static const char *const names[] = {"unknown", "given", "the trace's device",
					    "estimated from the oom entry"};
	return names[d->size_source < 4 ? d->size_source : 0];
}

/* The allocator's OOMs in the history, and whether the model's free run
 * under the recorded settings refuses the same requests. */
static void print_ooms(FILE *f, const struct ar_device *d)
{
	const struct ar_oom *x = &d->first_oom;
	const struct ar_run *m = &d->as_recorded;
	char b1[32], b2[32], verdict[160];
	if (!x->found) {
		if (m->ooms)
			cli_wrapf(f, 4,
				  "  out of memory: none recorded; the model refused %" PRIu64
				  " requests (the first %s) on a %s device (%s)",
				  m->ooms, fmt_size(b1, m->first_oom_request),
				  fmt_size(b2, d->device_size), size_source(d));
		return;
	}
	cli_wrapf(f, 4,
		  "  OUT OF MEMORY: the allocator refused %" PRIu64
		  " request%s; the first, entry %" PRIu64 ": %s asked on stream %" PRIu64
		  " with %s free on the device, at %s",
		  d->recorded_ooms, d->recorded_ooms == 1 ? "" : "s", x->entry,
		  fmt_size(b1, x->request), x->stream, fmt_size(b2, x->device_free),
		  x->stack[0] ? x->stack : "(no stack)");
	if (!d->allocs_after_oom)
		cli_wrapf(f, 6,
			  "    the history ends in it: the run stopped there (or the snapshot was "
			  "taken right after)");
	else
		cli_wrapf(f, 6,
			  "    the program went on (caught it): %" PRIu64
			  " allocation%s after the last",
			  d->allocs_after_oom, d->allocs_after_oom == 1 ? "" : "s");
	if (!d->device_size) {
		cli_wrapf(f, 6,
			  "    the model: not checked, the device's size is unknown (--device-size "
			  "SIZE)");
		return;
	}
	if (m->ooms_recorded == d->recorded_ooms)
		snprintf(verdict, sizeof(verdict), "refuses %s too: reproduced",
			 d->recorded_ooms == 1 ? "it" : "them all");
	else if (!m->ooms_recorded)
		snprintf(verdict, sizeof(verdict),
			 "serves %s: NOT reproduced (a rule, or the device's size, differs)",
			 d->recorded_ooms == 1 ? "it" : "them all");
	else
		snprintf(verdict, sizeof(verdict),
			 "refuses %" PRIu64 " of the %" PRIu64
			 ": NOT reproduced (a rule, or the device's size, differs)",
			 m->ooms_recorded, d->recorded_ooms);
	cli_wrapf(f, 6, "    the model, on a %s device (%s): %s", fmt_size(b1, d->device_size),
		  size_source(d), verdict);
	if (m->ooms > m->ooms_recorded)
		fprintf(f, "    and %" PRIu64 " requests the allocator served\n",
			m->ooms - m->ooms_recorded);
}

static void print_first(FILE *f, const struct ar_device *d)
{
	if (!d->first.found) {
		fprintf(f, d->differ_age ? "  no other divergence\n" : "  no divergence\n");
		return;
	}
	char b[32], m[96], r[96];
	const struct ar_divergence *v = &d->first;
	choice_text(m, sizeof m, &v->model);
	choice_text(r, sizeof r, &v->recorded);
	cli_wrapf(
	    f, 4, "  first divergence: entry %" PRIu64 ", %s requested on stream %" PRIu64 "%s%s",
	    v->entry, fmt_size(b, v->request), v->stream, v->stack[0] ? " at " : "", v->stack);
	cli_wrapf(f, 6, "    the model: %s; the allocator: %s", m, r);
}

/* The snapshot's end as _memory_viz.py stats sums it (its "allocated" is
 * the bytes asked; its free, the rest), with the rounding said apart. */
static void print_end(FILE *f, const struct ar_end *e)
{
	char b1[32], b2[32], b3[32], b4[32];
	uint64_t asked = e->requested < e->reserved ? e->requested : e->reserved;
	uint64_t rounding = e->allocated > e->requested ? e->allocated - e->requested : 0;
	cli_wrapf(f, 4,
		  "  at the snapshot: %" PRIu64 " segments, %s reserved, %s asked by live tensors, "
		  "%s free (%s of it their blocks' rounding)",
		  e->segments, fmt_size(b1, e->reserved), fmt_size(b2, asked),
		  fmt_size(b3, e->reserved - asked), fmt_size(b4, rounding));
}

static void json_choice(FILE *f, const char *key, const struct ar_choice *c)
{
	fprintf(f,
		"\"%s\": {\"new_segment\": %s, \"address\": %" PRIu64
		", \"segment_bytes\": %" PRIu64 "}",
		key, c->new_segment ? "true" : "false", c->ptr, c->new_segment ? c->size : 0);
}

static void json_run(FILE *f, const char *key, const struct ar_run *r)
{
	fprintf(f,
		"\"%s\": {\"reserved_peak_bytes\": %" PRIu64 ", \"allocated_peak_bytes\": %" PRIu64
		", \"segments_at_peak\": %" PRIu64 ", \"free_at_peak_bytes\": %" PRIu64
		", \"largest_free_at_peak_bytes\": %" PRIu64 ", \"ooms\": %" PRIu64
		", \"ooms_recorded_too\": %" PRIu64 ", \"empty_cache_calls\": %" PRIu64 "}",
		key, r->reserved_peak, r->allocated_peak, r->segments_at_peak, r->free_at_peak,
		r->largest_free_at_peak, r->ooms, r->ooms_recorded, r->empty_caches);
}

static void json_device(FILE *f, const struct ar_device *d)
{
	fprintf(f,
		"{\"device\": %" PRId64 ", \"entries\": %" PRIu64 ", \"allocations\": %" PRIu64
		", \"same\": %" PRIu64 ", \"same_cached\": %" PRIu64
		", \"same_new_segment\": %" PRIu64 ", \"fidelity\": %.4f, \"differ\": %" PRIu64
		", \"differ_age_unknown\": %" PRIu64 ", \"unfollowed\": %" PRIu64 ", ",
		d->device, d->entries, d->allocs, d->same, d->same_cached, d->same_new,
		d->allocs ? (double)d->same / (double)d->allocs : 1.0, d->differ, d->differ_age,
		d->unfollowed);
	static const char *const src[] = {"null", "\"given\"", "\"trace\"", "\"oom_entry\""};
	if (d->device_size)
		fprintf(f, "\"device_size\": %" PRIu64 ", \"device_size_source\": %s, ",
			d->device_size, src[d->size_source < 4 ? d->size_source : 0]);
	else
		fputs("\"device_size\": null, \"device_size_source\": null, ", f);
	fprintf(f,
		"\"before\": {\"segments\": %" PRIu64 ", \"segment_bytes\": %" PRIu64
		", \"blocks\": %" PRIu64 ", \"block_bytes\": %" PRIu64 "}, ",
		d->before_segments, d->before_segment_bytes, d->before_blocks,
		d->before_block_bytes);
	fprintf(f,
		"\"recorded\": {\"reserved_peak_bytes\": %" PRIu64
		", \"allocated_peak_bytes\": %" PRIu64 ", \"segments_at_peak\": %" PRIu64
		", \"ooms\": %" PRIu64 ", \"allocations_after_last_oom\": %" PRIu64
		", \"first_oom\": ",
		d->recorded_reserved_peak, d->recorded_allocated_peak, d->recorded_segments_at_peak,
		d->recorded_ooms, d->allocs_after_oom);
	const struct ar_oom *x = &d->first_oom;
	if (x->found) {
		fprintf(f,
			"{\"entry\": %" PRIu64 ", \"time_us\": %" PRIu64
			", \"request_bytes\": %" PRIu64 ", \"device_free_bytes\": %" PRIu64
			", \"stream\": %" PRIu64 ", \"stack\": ",
			x->entry, x->time_us, x->request, x->device_free, x->stream);
		json_cstr0(f, x->stack);
		fputs("}}, ", f);
	} else {
		fputs("null}, ", f);
	}
	const struct ar_end *e = &d->end;
	fprintf(f,
		"\"end\": {\"segments\": %" PRIu64 ", \"reserved_bytes\": %" PRIu64
		", \"allocated_bytes\": %" PRIu64 ", \"requested_bytes\": %" PRIu64
		", \"pending_free_bytes\": %" PRIu64 ", \"inactive_bytes\": %" PRIu64 "}, ",
		e->segments, e->reserved, e->allocated, e->requested, e->pending, e->inactive);
	json_run(f, "model", &d->as_recorded);
	if (d->have_asked) {
		fputs(", ", f);
		json_run(f, "asked", &d->asked);
	}
	fputs(", \"first_divergence\": ", f);
	if (!d->first.found) {
		fputs("null}", f);
		return;
	}
	const struct ar_divergence *v = &d->first;
	fprintf(f,
		"{\"entry\": %" PRIu64 ", \"time_us\": %" PRIu64 ", \"request_bytes\": %" PRIu64
		", \"stream\": %" PRIu64 ", ",
		v->entry, v->time_us, v->request, v->stream);
	json_choice(f, "model", &v->model);
	fputs(", ", f);
	json_choice(f, "recorded", &v->recorded);
	fputs(", \"stack\": ", f);
	json_cstr0(f, v->stack);
	fputs("}}", f);
}

static int parse_fraction(const char *cmd, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (*end || !(v > 0 && v <= 1))
		return say_usage_error(cmd,
				       "--fraction wants a number above 0, at most 1, not '%s'", s);
	*out = v;
	return -1;
}

/* Parses, opens and replays: -1 with *r filled, else the exit code. */
static int run_replay(const char *cmd, const struct opt_usage *u, const struct option *opts,
		      int argc, char **argv, struct args *a, struct ar_options *o,
		      struct ar_result *r, const char **path)
{
	const char **paths;
	int npaths;
	int rc = opt_parse(u, opts, argc, argv, &paths, &npaths);
	if (rc >= 0)
		return rc;
	*path = paths[0];
	free(paths);
	if (npaths > 1)
		return say_usage_error(cmd, "one HISTORY at a time");
	o->only_device = a->has_device ? a->device : -1;
	o->device_size = a->device_size;
	if (o->have_asked) { /* whatif: what to try, checked before the read */
		if (!a->conf && !a->fraction_s && !a->device_size)
			return say_usage_error(cmd,
					       "what to try: --alloc-conf CONF, --fraction F or "
					       "--device-size SIZE");
		if (a->conf) {
			char err[160];
			if (ar_check_conf(a->conf, err, sizeof err))
				return say_usage_error(cmd, "--alloc-conf: %s", err);
			o->asked_conf = a->conf;
		}
		if (a->fraction_s &&
		    (rc = parse_fraction(cmd, a->fraction_s, &o->asked_fraction)) >= 0)
			return rc;
		a->fraction = o->asked_fraction;
	}
	struct trace t;
	rc = trace_open(&t, cmd, *path);
	if (rc >= 0)
		return rc;
	if (!ar_has_history(&t)) {
		int fin = trace_finish(&t); /* a damaged trace: the reader's own line */
		if (fin > 0) {
			trace_close(&t);
			return fin;
		}
		say_error(cmd,
			  "%s: no allocator history: %s needs a PyTorch memory snapshot recorded "
			  "with torch.cuda.memory._record_memory_history (its pickle, or a trace "
			  "of gpumemtrace run --framework-history)",
			  *path, cmd);
		trace_close(&t);
		return EXIT_INPUT;
	}
	rc = ar_replay(&t, o, r);
	int fin = trace_finish(&t);
	a->complete = t.complete;
	a->lost = trace_lost_own(&t);
	if (trace_partial(&t)) {
		trace_partial_what(&t, a->partial_what, sizeof a->partial_what);
		trace_partial_text(&t, a->partial_text, sizeof a->partial_text);
	}
	if (rc < 0 && a->has_device && !r->ndev) {
		say_usage_error(cmd, "%s: no history on device %" PRId64, *path, a->device);
		ar_free(r);
		rc = EXIT_USAGE;
	}
	trace_close(&t);
	if (rc < 0 && fin > 0) {
		ar_free(r);
		return fin;
	}
	return rc;
}

static const char *order_name(enum ta_order o)
{
	return o == TA_ORDER_AGE ? "by segment age, then address (PyTorch since 2025)"
				 : "by address (PyTorch before 2025)";
}

int cmd_replay(int argc, char **argv)
{
	struct args a = {0};
	const struct option opts[] = {
	    OPT_BOOL("json", &a.json, "one JSON object instead of text (keys: docs/cli.md)"),
	    OPT_INT("device", &a.device, "N", 0, INT32_MAX, "only device N",
		    .given = &a.has_device),
	    OPT_SIZE(
		"device-size", &a.device_size, "SIZE",
		"the device's memory, for the free run's OOM path\n(default: estimated from an "
		"oom entry, else none)"),
	    OPT_END(),
	};
	static const struct opt_usage u = {.name = "replay",
					   .args = "HISTORY",
					   .min_args = 1,
					   .about = replay_about,
					   .more = more};
	struct ar_options o = {0};
	struct ar_result r;
	const char *path = NULL;
	int rc = run_replay("replay", &u, opts, argc, argv, &a, &o, &r, &path);
	if (rc >= 0)
		return rc;
	if (a.json) {
		printf("{\"history\": ");
		json_cstr0(stdout, path);
		printf(", \"settings\": ");
		json_cstr0(stdout, r.conf);
		json_partial(&a);
		printf(", \"order\": \"%s\", \"devices\": [", r.order_tied ? "either"
							      : r.order == TA_ORDER_AGE
								  ? "age"
								  : "address");
		for (size_t i = 0; i < r.ndev; i++) {
			fputs(i ? ", " : "", stdout);
			json_device(stdout, &r.dev[i]);
		}
		printf("]}\n");
		ar_free(&r);
		return 0;
	}
	cli_wrapf(
	    stdout, 2,
	    "replay %s: PyTorch's caching allocator, modelled, under the recorded settings (%s)",
	    path, r.conf[0] ? r.conf : "defaults");
	print_partial(&a);
	if (r.order_tied)
		cli_wrapf(
		    stdout, 4,
		    "  free blocks of one size: ordered by segment age (PyTorch since 2025) or by "
		    "address (before), the same choices");
	else
		printf("  free blocks of one size ordered %s\n", order_name(r.order));
	if (!r.ndev)
		printf("  no history: the snapshot was taken without _record_memory_history\n");
	for (size_t i = 0; i < r.ndev; i++) {
		const struct ar_device *d = &r.dev[i];
		char b1[32], b2[32];
		if (!d->entries) { /* segments at the end, no history: nothing to replay */
			cli_wrapf(stdout, 2,
				  "device %" PRId64 ": no history entries (none recorded on it, or "
				  "its ring kept none): nothing to replay",
				  d->device);
			print_end(stdout, &d->end);
			continue;
		}
		print_fidelity(stdout, d);
		uint64_t mp = d->as_recorded.reserved_peak, rp = d->recorded_reserved_peak;
		printf("  reserved peak: the model %s, recorded %s%s\n", fmt_size(b1, mp),
		       fmt_size(b2, rp), mp == rp ? " (exact)" : "");
		print_ooms(stdout, d);
		print_first(stdout, d);
		print_end(stdout, &d->end);
	}
	if (r.private_pool_segments)
		cli_wrapf(stdout, 2,
			  "note: %" PRIu64
			  " segments belong to private pools (CUDA graphs): replayed as "
			  "recorded, not modelled",
			  r.private_pool_segments);
	ar_free(&r);
	return 0;
}

static void side(const char *what, const char *rec, const char *asked)
{
	printf("  %-34s %-22s %s\n", what, rec, asked);
}

static const char *oom_text(char *buf, size_t size, const struct ar_run *r, bool known)
{
	char b[32];
	if (!known)
		snprintf(buf, size, "not modelled");
	else if (!r->ooms)
		snprintf(buf, size, "no");
	else
		snprintf(buf, size, "yes, %" PRIu64 " (first %s)", r->ooms,
			 fmt_size(b, r->first_oom_request));
	return buf;
}

static void print_whatif(const struct args *a, const struct ar_result *r, const char *path)
{
	char rec[160], ask[160];
	ar_config_text(&r->recorded_config, rec, sizeof rec);
	ar_config_text(&r->asked_config, ask, sizeof ask);
	if (a->fraction_s) {
		size_t n = strlen(ask);
		snprintf(ask + n, sizeof ask - n, "%sfraction %s", n ? ", " : "", a->fraction_s);
	}
	cli_wrapf(stdout, 2, "whatif %s: PyTorch's caching allocator, modelled", path);
	print_partial(a);
	printf("  recorded: %s\n  asked:    %s\n", rec, ask);
	for (size_t i = 0; i < r->ndev; i++) {
		const struct ar_device *d = &r->dev[i];
		char b1[32], b2[32], s1[48], s2[48];
		char head[160];
		if (!d->entries) {
			printf("\ndevice %" PRId64 ": no history entries: nothing to plan from\n",
			       d->device);
			continue;
		}
		if (d->device_size)
			snprintf(head, sizeof head, "(%s, %s)", fmt_size(b1, d->device_size),
				 size_source(d));
		else
			snprintf(head, sizeof head,
				 "(its size unknown: no OOM is modelled; --device-size gives it)");
		printf("\n");
		cli_wrapf(stdout, 2,
			  "device %" PRId64
			  " %s: the model made the allocator's choice in %.2f%% of "
			  "%" PRIu64 " allocations",
			  d->device, head, pct(d->same, d->allocs), d->allocs);
		if (d->before_segments)
			cli_wrapf(stdout, 4,
				  "  %" PRIu64
				  " segments (%s) were reserved before the history began: "
				  "they keep their recorded shape in both",
				  d->before_segments, fmt_size(b1, d->before_segment_bytes));
		side("", "recorded settings", "asked");
		side("reserved peak", fmt_size(b1, d->as_recorded.reserved_peak),
		     fmt_size(b2, d->asked.reserved_peak));
		snprintf(s1, sizeof s1, "%" PRIu64, d->as_recorded.segments_at_peak);
		snprintf(s2, sizeof s2, "%" PRIu64, d->asked.segments_at_peak);
		side("segments at the peak", s1, s2);
		snprintf(s1, sizeof s1, "%s (%.0f%%)", fmt_size(b1, d->as_recorded.free_at_peak),
			 pct(d->as_recorded.free_at_peak, d->as_recorded.reserved_peak));
		snprintf(s2, sizeof s2, "%s (%.0f%%)", fmt_size(b2, d->asked.free_at_peak),
			 pct(d->asked.free_at_peak, d->asked.reserved_peak));
		side("free inside the cache at the peak", s1, s2);
		side("largest free block at the peak",
		     fmt_size(b1, d->as_recorded.largest_free_at_peak),
		     fmt_size(b2, d->asked.largest_free_at_peak));
		side("out of memory", oom_text(s1, sizeof s1, &d->as_recorded, d->device_size),
		     oom_text(s2, sizeof s2, &d->asked, d->device_size));
		printf("  (recorded, as the history went: reserved peak %s, %" PRIu64
		       " oom entr%s)\n",
		       fmt_size(b1, d->recorded_reserved_peak), d->recorded_ooms,
		       d->recorded_ooms == 1 ? "y" : "ies");
	}
	printf("\nWhat the model cannot know: frees on other streams (replayed when the history\n"
	       "says they completed), CUDA graphs' private pools (replayed as recorded), when\n"
	       "empty_cache runs (as recorded), memory outside the allocator (contexts, cuBLAS,\n"
	       "NCCL: gpumemtrace accounting on a driver trace shows them).\n");
}

static void print_whatif_json(const struct args *a, const struct ar_result *r, const char *path)
{
	char rec[160], ask[160];
	printf("{\"history\": ");
	json_cstr0(stdout, path);
	json_partial(a);
	printf(", \"recorded_settings\": ");
	json_cstr0(stdout, ar_config_text(&r->recorded_config, rec, sizeof rec));
	printf(", \"asked_settings\": ");
	json_cstr0(stdout, ar_config_text(&r->asked_config, ask, sizeof ask));
	if (a->fraction_s)
		printf(", \"asked_fraction\": %g", a->fraction);
	else
		printf(", \"asked_fraction\": null");
	printf(", \"devices\": [");
	for (size_t i = 0; i < r->ndev; i++) {
		fputs(i ? ", " : "", stdout);
		json_device(stdout, &r->dev[i]);
	}
	printf("]}\n");
}

int cmd_whatif(int argc, char **argv)
{
	struct args a = {0};
	const struct option opts[] = {
	    OPT_STRING(
		"alloc-conf", &a.conf, "CONF",
		"the settings to try, as PYTORCH_CUDA_ALLOC_CONF\n(expandable_segments:True, "
		"max_split_size_mb:N,\nroundup_power2_divisions:N, "
		"garbage_collection_threshold:T); a key PyTorch\ndoes not know is refused, as "
		"PyTorch refuses it"),
	    OPT_STRING("fraction", &a.fraction_s, "F",
		       "set_per_process_memory_fraction(F) (needs a device size)"),
	    OPT_SIZE(
		"device-size", &a.device_size, "SIZE",
		"the device's memory (default: estimated from an\noom entry, else unknown: no OOM "
		"is modelled)"),
	    OPT_BOOL("json", &a.json, "one JSON object instead of text (keys: docs/cli.md)"),
	    OPT_INT("device", &a.device, "N", 0, INT32_MAX, "only device N",
		    .given = &a.has_device),
	    OPT_END(),
	};
	static const struct opt_usage u = {.name = "whatif",
					   .args = "HISTORY",
					   .min_args = 1,
					   .about = whatif_about,
					   .more = more};
	struct ar_options o = {.have_asked = true};
	struct ar_result r;
	const char *path = NULL;
	int rc = run_replay("whatif", &u, opts, argc, argv, &a, &o, &r, &path);
	if (rc >= 0)
		return rc;
	if (a.json)
		print_whatif_json(&a, &r, path);
	else
		print_whatif(&a, &r, path);
	ar_free(&r);
	return 0;
}
