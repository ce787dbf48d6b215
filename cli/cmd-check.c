/* gpumemtrace check: a CI gate. Measures each trace's device-memory peak,
 * what was live at the end and the peak's increase over a baseline trace,
 * per device, against the limits given; one line per check; exit 1 when a
 * check fails, 2 on any error (bad flags, unreadable or corrupt trace). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/check-measure.h"
#include "analysis/oom.h"
#include "analysis/smi-footprint.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/report-print.h"

static const char about[] =
    "A CI gate on GPU memory. For each TRACE (one per rank or process) and each\n"
    "device (or only device N), checks the peak of live device memory, the device\n"
    "memory still live at the end, and the peak's increase over the same device's\n"
    "peak in a baseline trace. Prints one line per check, PASS or FAIL, with the\n"
    "measured figure and the limit. A figure equal to its limit passes.\n"
    "\n"
    "Three peaks, three meanings:\n"
    "  --max-peak        the traced allocations: what the program's allocation calls\n"
    "                    held (a framework's cache or pool counts whole: PyTorch's\n"
    "                    reserved segments, a BFC region);\n"
    "  --max-smi         what nvidia-smi showed for the process: NVML's per-process\n"
    "                    peak where the tracer sampled it, else the traced peak +\n"
    "                    the contexts and module code + a stream-ordered pool's\n"
    "                    reserve; the line says which;\n"
    "  --max-framework-reserved  the framework's own reserved peak (PyTorch's\n"
    "                    reserved_bytes, JAX's pool_bytes), from the counters of\n"
    "                    `run --framework-counters`: a trace without them fails.\n";
static const char more[] =
    "SIZE: bytes, or with a unit: 1.5GiB, 512MiB, 2GB (GB = 10^9, GiB = 2^30).\n"
    "\n"
    "exit status: 0 every check passed, 1 a check failed, 2 an error: bad flags,\n"
    "no check given, a missing, unreadable or corrupt trace, an unwritable --junit\n"
    "file (the other commands' codes 3 and 4 become 2 here), 3 partial data: a\n"
    "trace (or the baseline) lost events or is incomplete (no trailer, a torn\n"
    "tail), so its figures may be short or long: the checks are printed, one\n"
    "line says why, and no verdict is given. --allow-lost judges partial data\n"
    "anyway (0 or 1, with a note).\n"
    "\n"
    "A note line follows the checks for a trace whose process ran out of memory\n"
    "(an out-of-memory failure that no retry recovered: its peak is only what it\n"
    "reached before failing; `gpumemtrace oom` says why) and for an incomplete\n"
    "trace (no trailer: the process was killed or crashed). --fail-on-oom makes\n"
    "the first a failed check (no-oom), exit 1.\n"
    "\n"
    "examples:\n"
    "  gpumemtrace check --max-peak 8GiB gpumemtrace.*.gmt\n"
    "  gpumemtrace check --baseline main.gmt --max-increase 5 --junit mem.xml pr.gmt\n"
    "  gpumemtrace check --max-peak 70GiB --device 0 --ignore-library 'libcublas*' run.gmt\n"
    "  gpumemtrace check --max-live-at-end 0 --json run.gmt\n";
static const struct opt_usage usage = {
    .name = "check", .args = "TRACE...", .min_args = 0, .about = about, .more = more};

#define CMD "check"
/* check's own: a trace lost events or is incomplete, and no --allow-lost
 * (the other commands' 3, cannot read, is 2 here) */
#define EXIT_PARTIAL 3

enum check_kind { CK_PEAK, CK_LIVE_END, CK_INCREASE, CK_OOM, CK_SMI, CK_FW };
static const char *const check_name[] = {"max-peak", "max-live-at-end", "max-increase",
					 "no-oom",   "max-smi",		"max-framework-reserved"};

struct check_result {
	const char *trace;
	enum check_kind kind;
	int64_t device; /* -1: all devices (a trace without any) */
	uint64_t measured, limit, baseline;
	double increase_pct; /* INFINITY: the baseline had 0 */
	bool pass;
	char source[320]; /* max-smi: where the figure comes from; max-framework-reserved:
			     its API, or why there is none */
};

struct check_args {
	bool has_peak, has_live, has_increase, has_device, json, fail_on_oom, allow_lost, has_smi,
	    has_fw;
	uint64_t max_peak, max_live, max_smi, max_fw;
	double max_increase;
	int64_t device;
	const char *baseline, *junit;
	struct opt_list ignore; /* --ignore-library globs */
	const char **traces;
	size_t ntraces;
};

struct check_state {
	struct check_result *res;
	size_t n, cap;
	struct {
		const char *path;
		bool complete;
		uint64_t ignored_allocs, ignored_bytes;
		uint64_t ooms;	   /* out-of-memory errors no retry recovered */
		const char *kase;  /* the first one's case (oom_case_name) */
		int64_t end_ns;	   /* where the trace ends (its last flush when incomplete) */
		uint64_t lost;	   /* this process's events lost */
		char partial[160]; /* trace_partial_what, "" when complete and none lost */
		char hidden[720];  /* oom-hidden's note, or "" */
	} * tinfo;
	size_t ntinfo;
	char base_partial[160]; /* the baseline's */
	size_t npartial;	/* traces (and baseline) with partial data */
};

static void add_result(struct check_state *s, struct check_result r)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->res = xrealloc(s->res, s->cap * sizeof(*s->res));
	}
	s->res[s->n++] = r;
}

/* Maps the general exit codes of the reader (3, 4) to check's error code. */
static int as_error(int rc)
{
	return rc == 0 ? 0 : EXIT_USAGE;
}

/* --max-increase PCT: "5", "2.5", "5%". */
static int parse_pct(const char *cmd, const struct option *o, const char *val)
{
	char *end;
	errno = 0;
	double v = strtod(val, &end);
	if (end < val + strlen(val) && *end == '%' && end[1] == 0)
		end++;
	if (!*val || *end || errno || !isfinite(v) || v < 0)
		return say_usage_error(cmd, "--max-increase: bad percentage '%s' (e.g. 5 or 2.5)",
				       val);
	*(double *)o->value = v;
	return -1;
}

static int parse_args(int argc, char **argv, struct check_args *a)
{
	const struct option opts[] = {
	    OPT_SIZE("max-peak", &a->max_peak, "SIZE", "fail when a device's peak is above SIZE",
		     .given = &a->has_peak),
	    OPT_SIZE("max-smi", &a->max_smi, "SIZE",
		     "fail when what nvidia-smi showed for the process on\n"
		     "a device peaked above SIZE (NVML's per-process peak,\n"
		     "else traced + contexts + a pool's reserve)",
		     .given = &a->has_smi),
	    OPT_SIZE("max-framework-reserved", &a->max_fw, "SIZE",
		     "fail when the framework's own reserved peak (its\n"
		     "counters: run --framework-counters) is above SIZE",
		     .given = &a->has_fw),
	    OPT_SIZE("max-live-at-end", &a->max_live, "SIZE",
		     "fail when more than SIZE is live at the end", .given = &a->has_live),
	    OPT_FILE("baseline", &a->baseline, "TRACE",
		     "the trace to compare peaks with (needs --max-increase)"),
	    OPT_CALLBACK("max-increase", &a->max_increase, "PCT", parse_pct,
			 "fail when a peak is more than PCT percent above\n"
			 "the baseline's (a peak where the baseline had\n"
			 "none is an infinite increase)",
			 .given = &a->has_increase),
	    OPT_INT("device", &a->device, "N", 0, INT32_MAX,
		    "check device N only (an error if a trace lacks it)", .given = &a->has_device),
	    OPT_STRINGS("ignore-library", &a->ignore, "GLOB",
			"leave out allocations charged to a library whose\n"
			"file name matches GLOB (fnmatch; repeatable), in\n"
			"the traces and the baseline alike"),
	    OPT_BOOL("fail-on-oom", &a->fail_on_oom,
		     "fail (exit 1) when an out-of-memory failure was\n"
		     "not recovered by the framework's retry"),
	    OPT_BOOL("allow-lost", &a->allow_lost,
		     "judge traces that lost events or are incomplete\n"
		     "(default: exit 3, no verdict on partial data)"),
	    OPT_FILE("junit", &a->junit, "FILE", "also write the results as JUnit XML to FILE"),
	    OPT_BOOL("json", &a->json, "one JSON object instead of lines (keys: docs/cli.md)"),
	    OPT_END(),
	};
	int n = 0;
	int rc = opt_parse(&usage, opts, argc, argv, &a->traces, &n);
	if (rc >= 0)
		return rc;
	a->ntraces = (size_t)n;
	if (a->junit && !*a->junit)
		return say_usage_error(CMD, "--junit: empty file name");
	if (!a->has_peak && !a->has_live && !a->has_increase && !a->baseline && !a->fail_on_oom &&
	    !a->has_smi && !a->has_fw)
		return say_usage_error(CMD, "no check given: use --max-peak, --max-smi, "
					    "--max-framework-reserved, --max-live-at-end, "
					    "--fail-on-oom or --baseline with --max-increase");
	if (a->baseline && !a->has_increase)
		return say_usage_error(CMD, "--baseline needs --max-increase PCT");
	if (a->has_increase && !a->baseline)
		return say_usage_error(CMD, "--max-increase needs --baseline TRACE");
	if (!a->ntraces)
		return say_usage_error(CMD, "missing TRACE argument");
	return -1;
}

/* Peak increase over the baseline, in percent; INFINITY from nothing. */
static double increase(uint64_t peak, uint64_t base)
{
	if (base == 0)
		return peak ? INFINITY : 0;
	return ((double)peak - (double)base) * 100.0 / (double)base;
}

/* peak <= base * (1 + pct/100), exactly for whole and decimal percentages:
 * the percentage is taken in millionths. */
static bool within(uint64_t peak, uint64_t base, double pct)
{
	if (peak <= base || pct >= 1e12)
		return true;
	unsigned __int128 lim = (unsigned __int128)base * (uint64_t)(pct * 1e6 + 1e8 + 0.5);
	return (unsigned __int128)peak * 100000000u <= lim;
}

static void check_trace(struct check_state *s, const struct check_args *a, const char *path,
			struct measure *m, struct measure *base)
{
	int64_t *devs;
	size_t ndevs = check_measure_devs(m, &devs);
	if (a->has_device) {
		devs[0] = a->device;
		ndevs = 1;
	}
	for (size_t i = 0; i < (ndevs ? ndevs : 1); i++) {
		int64_t d = ndevs ? devs[i] : -1;
		struct rp_level lv = d >= 0 ? check_measure_dev(m, d) : m->rp.buckets[BK_DEVICE];
		if (a->has_peak)
			add_result(s, (struct check_result){path, CK_PEAK, d, lv.peak, a->max_peak,
							    0, 0, lv.peak <= a->max_peak, ""});
		if (a->has_live)
			add_result(s, (struct check_result){path, CK_LIVE_END, d, lv.bytes,
							    a->max_live, 0, 0,
							    lv.bytes <= a->max_live, ""});
		if (a->has_increase) {
			struct rp_level bl =
			    d >= 0 ? check_measure_dev(base, d) : base->rp.buckets[BK_DEVICE];
			add_result(s, (struct check_result){
					  path, CK_INCREASE, d, lv.peak, 0, bl.peak,
					  increase(lv.peak, bl.peak),
					  within(lv.peak, bl.peak, a->max_increase), ""});
		}
	}
	free(devs);
}

/* What nvidia-smi showed (--max-smi) and the framework's reserved peak
 * (--max-framework-reserved), per device. */
static void smi_trace(struct check_state *s, const struct check_args *a, const char *path,
		      struct measure *m)
{
	if (!a->has_smi && !a->has_fw)
		return;
	struct smi_footprint *fp;
	size_t n;
	smi_footprint(&m->t, &fp, &n); /* a read error is trace_finish's to report */
	for (size_t i = 0; i < n; i++) {
		const struct smi_footprint *x = &fp[i];
		if (a->has_device && x->device != a->device)
			continue;
		if (a->has_smi) {
			struct check_result r = {.trace = path,
						 .kind = CK_SMI,
						 .device = x->device,
						 .measured = x->bytes,
						 .limit = a->max_smi,
						 .pass = x->bytes <= a->max_smi};
			smi_source_text(x, r.source, sizeof(r.source));
			add_result(s, r);
		}
		if (a->has_fw) {
			struct check_result r = {.trace = path,
						 .kind = CK_FW,
						 .device = x->device,
						 .measured = x->fw_reserved,
						 .limit = a->max_fw,
						 .pass =
						     x->fw_known && x->fw_reserved <= a->max_fw};
			snprintf(r.source, sizeof(r.source), "%s",
				 x->fw_known
				     ? x->fw_api
				     : "no framework counters in the trace (record them with "
				       "`gpumemtrace run --framework-counters`): nothing to pass");
			add_result(s, r);
		}
	}
	free(fp);
}

/* Whether the run ran out of memory for good (oom's cases), and where the
 * trace ends: the notes, and the no-oom check under --fail-on-oom. */
static void oom_trace(struct check_state *s, const struct check_args *a, const char *path,
		      struct measure *m)
{
	struct oom_result r;
	const char *kase;
	oom_compute(&m->t, &r); /* a read error is trace_finish's to report */
	uint64_t n = oom_unrecovered(&r, a->has_device, a->device, &kase);
	snprintf(s->tinfo[s->ntinfo].hidden, sizeof(s->tinfo[0].hidden), "%s",
		 r.hidden ? r.hidden_text : "");
	oom_free(&r);
	s->tinfo[s->ntinfo].ooms = n;
	s->tinfo[s->ntinfo].kase = kase;
	s->tinfo[s->ntinfo].end_ns = trace_duration_ns(&m->t);
	if (a->fail_on_oom)
		add_result(s, (struct check_result){path, CK_OOM, a->has_device ? a->device : -1, n,
						    0, 0, 0, n == 0, ""});
}

static void print_notes(FILE *f, const struct check_state *s)
{
	char line[1024], b[32];
	int width = cli_text_width(f);
	for (size_t i = 0; i < s->ntinfo; i++) {
		if (s->tinfo[i].ooms) {
			snprintf(
			    line, sizeof(line),
			    "note: %s: %" PRIu64 " out-of-memory error%s not recovered by retry "
			    "(%s): the run may have died of it, and its peak is only what it "
			    "reached first; `gpumemtrace oom` says why (--fail-on-oom fails on it)",
			    s->tinfo[i].path, s->tinfo[i].ooms, s->tinfo[i].ooms == 1 ? "" : "s",
			    s->tinfo[i].kase);
			cli_wrap(f, 0, width, line);
		}
		if (s->tinfo[i].hidden[0]) {
			snprintf(line, sizeof(line), "note: %s: %s", s->tinfo[i].path,
				 s->tinfo[i].hidden);
			cli_wrap(f, 0, width, line);
		}
		if (!s->tinfo[i].complete) {
			snprintf(
			    line, sizeof(line),
			    "note: %s: incomplete trace (no trailer: the process was killed or "
			    "crashed, or still runs): checked up to its last flush at %s",
			    s->tinfo[i].path, trace_fmt_time(b, s->tinfo[i].end_ns));
			cli_wrap(f, 0, width, line);
		}
		if (s->tinfo[i].lost) {
			snprintf(line, sizeof(line),
				 "note: %s: %" PRIu64
				 " events lost (a full ring): a lost allocation lowers the peak, a "
				 "lost free raises what is live",
				 s->tinfo[i].path, s->tinfo[i].lost);
			cli_wrap(f, 0, width, line);
		}
	}
	if (s->base_partial[0]) {
		snprintf(line, sizeof(line), "note: the baseline: %s: its peak may be short",
			 s->base_partial);
		cli_wrap(f, 0, width, line);
	}
}

/* Partial data: what was lost or cut, and where; NULL when nothing. The
 * one line that stands for check's exit status 3. */
static char *partial_line(const struct check_state *s, const char *baseline)
{
	if (!s->npartial)
		return NULL;
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	if (!m)
		xalloc_failed();
	const char *sep = "";
	if (s->base_partial[0]) {
		fprintf(m, "baseline %s: %s", baseline, s->base_partial);
		sep = "; ";
	}
	for (size_t i = 0; i < s->ntinfo; i++)
		if (s->tinfo[i].partial[0]) {
			fprintf(m, "%s%s: %s", sep, s->tinfo[i].path, s->tinfo[i].partial);
			sep = "; ";
		}
	fclose(m);
	return line;
}

static const char *pct_text(char *buf, double v)
{
	if (isinf(v))
		return "+inf%";
	snprintf(buf, 32, "%+.2f%%", v);
	return buf;
}

/* "1000 B", or "1.50 GiB (1610612736 B)": the exact figure for the boundary. */
static const char *size_exact(char *buf, uint64_t n)
{
	char tmp[32];
	if (n < 1024)
		snprintf(buf, 64, "%" PRIu64 " B", n);
	else
		snprintf(buf, 64, "%s (%" PRIu64 " B)", fmt_size(tmp, n), n);
	return buf;
}

static void print_line(FILE *f, const struct check_result *r, const struct check_args *a)
{
	char b1[64], b2[64], b3[32], dev[32], w[512] = "";
	if (r->device >= 0)
		snprintf(dev, sizeof(dev), "device %" PRId64, r->device);
	else
		snprintf(dev, sizeof(dev), "all devices");
	switch (r->kind) {
	case CK_PEAK:
	case CK_LIVE_END:
		snprintf(w, sizeof(w), "%s %s %s limit %s",
			 r->kind == CK_PEAK ? "peak" : "live at end", size_exact(b1, r->measured),
			 r->pass ? "<=" : ">", size_exact(b2, r->limit));
		break;
	case CK_INCREASE:
		snprintf(w, sizeof(w), "peak %s vs baseline %s: %s %s limit %+g%%",
			 size_exact(b1, r->measured), size_exact(b2, r->baseline),
			 pct_text(b3, r->increase_pct), r->pass ? "<=" : ">", a->max_increase);
		break;
	case CK_OOM:
		snprintf(w, sizeof(w), "%" PRIu64 " out-of-memory error%s not recovered by retry",
			 r->measured, r->measured == 1 ? "" : "s");
		break;
	case CK_SMI:
		snprintf(w, sizeof(w), "nvidia-smi peak %s %s limit %s (%s)",
			 size_exact(b1, r->measured), r->pass ? "<=" : ">",
			 size_exact(b2, r->limit), r->source);
		break;
	case CK_FW:
		if (strncmp(r->source, "no framework", 12) == 0)
			snprintf(w, sizeof(w), "%s", r->source);
		else
			snprintf(w, sizeof(w), "framework reserved peak %s %s limit %s (%s)",
				 size_exact(b1, r->measured), r->pass ? "<=" : ">",
				 size_exact(b2, r->limit), r->source);
		break;
	}
	/* the trace's path and the figures wrap under the verdict */
	cli_wrapf(f, 6, "%s%s%s  %-15s %-10s %s: %s", cli_paint(f, r->pass ? C_PASS : C_FAIL),
		  r->pass ? "PASS" : "FAIL", cli_paint(f, C_RESET), check_name[r->kind], dev,
		  r->trace, w);
}

static void json_pct(FILE *f, double v)
{
	if (isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.6g", v);
}

static void print_json(FILE *f, const struct check_state *s, const struct check_args *a,
		       size_t failed, const struct measure *base)
{
	bool no_verdict = s->npartial && !a->allow_lost;
	fprintf(f,
		"{\"passed\": %s, \"checks_total\": %zu, \"checks_failed\": %zu, \"partial\": %s, "
		"\"allow_lost\": %s,\n",
		failed || no_verdict ? "false" : "true", s->n, failed,
		s->npartial ? "true" : "false", a->allow_lost ? "true" : "false");
	fputs(" \"ignore_libraries\": [", f);
	for (size_t i = 0; i < a->ignore.n; i++) {
		if (i)
			fputs(", ", f);
		json_cstr(f, a->ignore.v[i]);
	}
	fputs("],\n \"baseline\": ", f);
	if (base) {
		fputs("{\"path\": ", f);
		json_cstr(f, a->baseline);
		fprintf(f,
			", \"complete\": %s, \"lost_events\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
			", \"ignored_allocations\": %" PRIu64 ", \"ignored_bytes\": %" PRIu64 "}",
			base->t.complete ? "true" : "false", trace_lost_own(&base->t),
			base->rp.buckets[BK_DEVICE].peak, base->ignored_allocs,
			base->ignored_bytes);
	} else {
		fputs("null", f);
	}
	fputs(",\n \"traces\": [", f);
	for (size_t i = 0; i < s->ntinfo; i++) {
		fputs(i ? ",\n  {\"path\": " : "\n  {\"path\": ", f);
		json_cstr(f, s->tinfo[i].path);
		fprintf(f,
			", \"complete\": %s, \"lost_events\": %" PRIu64
			", \"ignored_allocations\": %" PRIu64 ", \"ignored_bytes\": %" PRIu64
			", \"unrecovered_ooms\": %" PRIu64
			", \"oom_case\": \"%s\", \"oom_hidden\": %s, \"end_time_ns\": %" PRId64 "}",
			s->tinfo[i].complete ? "true" : "false", s->tinfo[i].lost,
			s->tinfo[i].ignored_allocs, s->tinfo[i].ignored_bytes, s->tinfo[i].ooms,
			s->tinfo[i].kase, s->tinfo[i].hidden[0] ? "true" : "false",
			s->tinfo[i].end_ns);
	}
	fputs("],\n \"checks\": [", f);
	for (size_t i = 0; i < s->n; i++) {
		const struct check_result *r = &s->res[i];
		fputs(i ? ",\n  {\"trace\": " : "\n  {\"trace\": ", f);
		json_cstr(f, r->trace);
		fprintf(f, ", \"check\": \"%s\", \"device\": ", check_name[r->kind]);
		if (r->device >= 0)
			fprintf(f, "%" PRId64, r->device);
		else
			fputs("null", f);
		fprintf(f, ", \"pass\": %s, \"measured_bytes\": %" PRIu64,
			r->pass ? "true" : "false", r->measured);
		if (r->kind == CK_OOM) {
			fputs(", \"limit\": 0", f);
		} else if (r->kind == CK_INCREASE) {
			fprintf(f, ", \"baseline_bytes\": %" PRIu64 ", \"increase_pct\": ",
				r->baseline);
			json_pct(f, r->increase_pct);
			fputs(", \"limit_pct\": ", f);
			json_pct(f, a->max_increase);
		} else {
			fprintf(f, ", \"limit_bytes\": %" PRIu64, r->limit);
		}
		if (r->kind == CK_SMI || r->kind == CK_FW) {
			fputs(", \"source\": ", f);
			json_cstr(f, r->source);
		}
		fputc('}', f);
	}
	fputs("]}\n", f);
}

static int write_junit(struct cli_out *o, const struct check_state *s, const struct check_args *a,
		       size_t failed, bool no_verdict)
{
	FILE *f = o->f;
	size_t tests = s->n + (no_verdict ? s->npartial : 0);
	failed += no_verdict ? s->npartial : 0;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<testsuites name=\"gpumemtrace check\" tests=\"%zu\" failures=\"%zu\" "
		"errors=\"0\">\n"
		"  <testsuite name=\"gpumemtrace check\" tests=\"%zu\" failures=\"%zu\" "
		"errors=\"0\" skipped=\"0\">\n",
		tests, failed, tests, failed);
	/* partial data: a failed test case per trace, so a CI page says why */
	for (size_t i = 0; no_verdict && i <= s->ntinfo; i++) {
		const char *path = i < s->ntinfo ? s->tinfo[i].path : a->baseline;
		const char *what = i < s->ntinfo ? s->tinfo[i].partial : s->base_partial;
		if (!path || !what[0])
			continue;
		fputs("    <testcase classname=\"", f);
		xml_text(f, path);
		fputs("\" name=\"complete-data\">\n      <failure type=\"partial-data\" message=\"",
		      f);
		xml_text(f, what);
		fputs("\">", f);
		xml_text(f, what);
		fputs(": no verdict on partial data (--allow-lost judges it)</failure>\n"
		      "    </testcase>\n",
		      f);
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct check_result *r = &s->res[i];
		char dev[32], *line = NULL;
		size_t len = 0;
		if (r->device >= 0)
			snprintf(dev, sizeof(dev), "device %" PRId64, r->device);
		else
			snprintf(dev, sizeof(dev), "all devices");
		FILE *mem = open_memstream(&line, &len);
		if (mem) {
			print_line(mem, r, a);
			fclose(mem);
		}
		if (line && len && line[len - 1] == '\n')
			line[len - 1] = 0;
		fputs("    <testcase classname=\"", f);
		xml_text(f, r->trace);
		fprintf(f, "\" name=\"%s %s\"", check_name[r->kind], dev);
		if (r->pass) {
			fputs("/>\n", f);
		} else {
			fputs(">\n      <failure type=\"", f);
			fputs(check_name[r->kind], f);
			fputs("\" message=\"", f);
			xml_text(f, line ? line : "");
			fputs("\">", f);
			xml_text(f, line ? line : "");
			fputs("</failure>\n    </testcase>\n", f);
		}
		free(line);
	}
	fputs("  </testsuite>\n</testsuites>\n", f);
	return as_error(cli_out_close(o, CMD, true) < 0 ? 0 : EXIT_INPUT);
}

int cmd_check(int argc, char **argv)
{
	struct check_args a = {0};
	struct check_state s = {0};
	struct measure base = {0};
	struct cli_out junit = {0};
	int rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		goto out;
	if (a.junit) { /* before reading: never over a trace, and no wasted run */
		const char **in = xcalloc(a.ntraces + 1, sizeof(*in));
		memcpy(in, a.traces, a.ntraces * sizeof(*in));
		if (a.baseline)
			in[a.ntraces] = a.baseline;
		rc = cli_out_open(&junit, CMD, a.junit, in, a.ntraces + !!a.baseline);
		free(in);
		if (rc >= 0) {
			rc = as_error(rc);
			goto out;
		}
	}
	struct cm_options opt = {.ignore = a.ignore.v, .nignore = a.ignore.n};
	s.tinfo = xrealloc(NULL, a.ntraces * sizeof(*s.tinfo));

	if (a.baseline) {
		rc = check_measure(&base, CMD, a.baseline, &opt);
		if (rc >= 0 || (rc = trace_finish(&base.t)) != 0) {
			rc = as_error(rc);
			goto out;
		}
		trace_partial_what(&base.t, s.base_partial, sizeof(s.base_partial));
		s.npartial += trace_partial(&base.t);
		rc = -1;
	}
	for (size_t i = 0; i < a.ntraces; i++) {
		struct measure m;
		rc = check_measure(&m, CMD, a.traces[i], &opt);
		if (rc < 0 && a.has_device && !check_measure_has_dev(&m, a.device)) {
			char devs[256] = "none";
			int64_t *ds;
			size_t nd = check_measure_devs(&m, &ds);
			for (size_t k = 0, len = 0; k < nd && len + 24 < sizeof(devs); k++)
				len += (size_t)snprintf(devs + len, sizeof(devs) - len,
							"%s%" PRId64, k ? ", " : "", ds[k]);
			free(ds);
			say_error(CMD, "%s: no device %" PRId64 " in the trace (its devices: %s)",
				  a.traces[i], a.device, devs);
			rc = EXIT_USAGE;
		}
		if (rc < 0) {
			check_trace(&s, &a, a.traces[i], &m, &base);
			smi_trace(&s, &a, a.traces[i], &m);
			oom_trace(&s, &a, a.traces[i], &m);
			s.tinfo[s.ntinfo].path = a.traces[i];
			s.tinfo[s.ntinfo].complete = m.t.complete;
			s.tinfo[s.ntinfo].lost = trace_lost_own(&m.t);
			trace_partial_what(&m.t, s.tinfo[s.ntinfo].partial,
					   sizeof(s.tinfo[s.ntinfo].partial));
			s.npartial += trace_partial(&m.t);
			s.tinfo[s.ntinfo].ignored_allocs = m.ignored_allocs;
			s.tinfo[s.ntinfo].ignored_bytes = m.ignored_bytes;
			s.ntinfo++;
			rc = trace_finish(&m.t);
		}
		check_measure_free(&m);
		if (rc != 0 && rc != -1) {
			rc = as_error(rc);
			goto out;
		}
	}

	size_t failed = 0;
	for (size_t i = 0; i < s.n; i++)
		failed += !s.res[i].pass;
	bool no_verdict = s.npartial && !a.allow_lost;
	if (a.json) {
		print_json(stdout, &s, &a, failed, a.baseline ? &base : NULL);
	} else {
		for (size_t i = 0; i < s.n; i++)
			print_line(stdout, &s.res[i], &a);
		print_notes(stdout, &s);
		printf("check: %zu passed, %zu failed%s\n", s.n - failed, failed,
		       no_verdict   ? "; no verdict: partial data (--allow-lost judges it)"
		       : s.npartial ? "; partial data judged (--allow-lost)"
				    : "");
	}
	fflush(stdout);
	rc = failed ? EXIT_CHECK : 0;
	if (no_verdict) { /* before a pass or a fail: neither can be trusted */
		char *line = partial_line(&s, a.baseline);
		say_error(CMD, "partial data, no verdict (--allow-lost checks it anyway): %s",
			  line);
		free(line);
		rc = EXIT_PARTIAL;
	}
	if (a.junit) {
		int jrc = write_junit(&junit, &s, &a, failed, no_verdict);
		if (jrc)
			rc = jrc;
	}
out:
	if (junit.f) /* not written: a trace could not be read */
		cli_out_close(&junit, CMD, false);
	check_measure_free(&base);
	free(s.res);
	free(s.tinfo);
	free((void *)a.traces);
	free(a.ignore.v);
	return rc;
}
