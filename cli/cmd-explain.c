/* gpumemtrace explain [--json] [--device N] TRACE [TRACE2]: the questions
 * people ask about GPU memory, answered as findings (analysis/explain.h);
 * with two traces, why one run needed more than the other first. This file
 * only parses and renders. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/explain.h"
#include "analysis/report-base.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/report-print.h"

#define WRAP 78

static const char about[] =
    "Answers the questions people ask about GPU memory, as a short list of\n"
    "findings: first what failed or is wrong, then what explains the figures,\n"
    "then notes; the largest first within each (--json: \"severity\" is\n"
    "problem, explains or note). Each has a one-line answer, the evidence\n"
    "(figures from the trace, with the command that shows more) and what to\n"
    "change, naming the environment variable, the API or the site in the code.\n"
    "It recognizes the framework (PyTorch, JAX, TensorFlow, CuPy) from the loaded\n"
    "modules, and the allocator's mode from the recorded environment\n"
    "(PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF, whichever is in force,\n"
    "XLA_PYTHON_CLIENT_*, TF_FORCE_GPU_ALLOW_GROWTH...: docs/settings.md)\n"
    "and the allocation pattern. Findings (their ids, for --json):\n"
    "problems:\n"
    "  oom-exceeds-device-total, oom-fragmentation, oom-limit,\n"
    "  oom-other-processes, oom-this-process, oom-unknown   each case of\n"
    "                       out-of-memory, with what to do; oom-hidden: the run\n"
    "                       ended badly with memory in a framework's pool;\n"
    "  leak                 memory kept growing after the warm-up;\n"
    "  partial-data         a cut or damaged trace, or events lost;\n"
    "what explains the figures:\n"
    "  smi-breakdown        nvidia-smi's figure against the framework's part, other\n"
    "                       libraries (NCCL, cuBLAS, cuDNN), contexts, unexplained;\n"
    "  preallocation        JAX's 75% or TensorFlow's free memory taken at start-up;\n"
    "  bfc-growth           allow_growth regions doubling, never returned;\n"
    "  torch-cache          PyTorch's cached segments, and empty_cache(),\n"
    "                       expandable_segments, max_split_size_mb;\n"
    "  pool-reserve         a stream-ordered pool's reserve and release threshold;\n"
    "  oom-retried          OOMs the framework recovered from by freeing its cache;\n"
    "notes:\n"
    "  warm-up, growth-undetermined   the growth verdict when it is no leak;\n"
    "  oom-invisible        how an OOM could escape this trace.\n"
    "With two traces A and B, the comparison comes first: compare-peak,\n"
    "compare-gpu, compare-driver, compare-env, compare-libs, compare-sites.\n"
    "docs/questions.md walks each question on a trace.\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace explain gpumemtrace.1234.gmt\n"
    "  gpumemtrace explain --json run.gmt | jq '.traces[0].findings[].id'\n"
    "  gpumemtrace explain here.gmt there.gmt      # why there needed more\n"
    "\n"
    "exit status: 0 findings printed, 2 usage, 3 cannot read a file, 4 not a trace\n"
    "or corrupt\n";
static const struct opt_usage usage = {
    .name = "explain", .args = "TRACE [TRACE2]", .min_args = 1, .about = about, .more = more};

/* Text wrapped at WRAP columns, each line after the first indented. */
static void wrapped(FILE *f, const char *lead, const char *indent, const char *s)
{
	size_t col = strlen(lead), ind = strlen(indent);
	size_t wrap = cli_text_width(f) < WRAP ? (size_t)cli_text_width(f) : WRAP;
	bool first = true;
	fputs(lead, f);
	while (*s) {
		while (*s == ' ')
			s++;
		size_t w = strcspn(s, " ");
		if (!w)
			break;
		if (!first && col + 1 + w > wrap && col > ind) {
			fprintf(f, "\n%s", indent);
			col = ind;
		} else if (!first) {
			fputc(' ', f);
			col++;
		}
		fwrite(s, 1, w, f);
		col += w;
		s += w;
		first = false;
	}
	fputc('\n', f);
}

static void command_text(char *buf, size_t size, const struct ex_evidence *e, const char *a,
			 const char *b)
{
	if (b)
		snprintf(buf, size, "gpumemtrace %s %s %s", e->cmd, a, b);
	else
		snprintf(buf, size, "gpumemtrace %s %s", e->cmd, a);
}

/* The heading of each severity's findings, before its first. */
static void severity_heading(FILE *f, const struct ex_finding *x)
{
	static const char *const head[] = {"problems: what failed or is wrong",
					   "what explains the figures", "notes"};
	fprintf(f, "\n%s\n", head[x->severity]);
}

static void finding_human(FILE *f, size_t k, const struct ex_finding *x, const char *a,
			  const char *b)
{
	char lead[64], cmdline[1200];
	if (x->device >= 0)
		fprintf(f, "\n%zu. [%s, device %" PRId64 "]\n", k + 1, x->id, x->device);
	else
		fprintf(f, "\n%zu. [%s]\n", k + 1, x->id);
	snprintf(lead, sizeof(lead), "   ");
	wrapped(f, lead, "   ", x->answer);
	for (size_t i = 0; i < x->nev; i++)
		wrapped(f, "     - ", "       ", x->ev[i].text);
	for (size_t i = 0; i < x->nev; i++) { /* each command once */
		bool seen = !*x->ev[i].cmd;
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(x->ev[j].cmd, x->ev[i].cmd) == 0;
		if (seen)
			continue;
		command_text(cmdline, sizeof(cmdline), &x->ev[i], a, b);
		cli_wrapf(f, 9, "     more: %s", cmdline);
	}
	if (*x->change)
		wrapped(f, "   change: ", "     ", x->change);
}

static void finding_json(FILE *f, const struct ex_finding *x, bool first, const char *a,
			 const char *b)
{
	char cmdline[1200];
	fprintf(f, "%s\n    {\"id\": ", first ? "" : ",");
	cli_json_s(f, x->id);
	if (x->device >= 0)
		fprintf(f, ", \"device\": %" PRId64, x->device);
	else
		fputs(", \"device\": null", f);
	fprintf(f, ", \"severity\": \"%s\", \"bytes\": %" PRIu64 ", \"answer\": ",
		explain_severity_name(x->severity), x->bytes);
	cli_json_s(f, x->answer);
	fputs(",\n     \"evidence\": [", f);
	for (size_t i = 0; i < x->nev; i++) {
		fputs(i ? ", {\"text\": " : "{\"text\": ", f);
		cli_json_s(f, x->ev[i].text);
		fputs(", \"command\": ", f);
		if (*x->ev[i].cmd) {
			command_text(cmdline, sizeof(cmdline), &x->ev[i], a, b);
			cli_json_s(f, cmdline);
		} else {
			fputs("null", f);
		}
		fputc('}', f);
	}
	fputs("],\n     \"change\": ", f);
	cli_json_s(f, x->change);
	fprintf(f, ", \"needs_framework_counters\": %s}", x->needs_counters ? "true" : "false");
}

static void findings_out(FILE *f, bool json, const struct ex_findings *fs, const char *a,
			 const char *b)
{
	for (size_t k = 0; k < fs->n; k++)
		if (json) {
			finding_json(f, &fs->v[k], k == 0, a, b);
		} else {
			if (!k || fs->v[k].severity != fs->v[k - 1].severity)
				severity_heading(f, &fs->v[k]);
			finding_human(f, k, &fs->v[k], a, b);
		}
}

static void recog_out(FILE *f, bool json, const struct ex_recog *r)
{
	if (json) {
		fputs(",\n   \"framework\": ", f);
		cli_json_s(f, r->fw_name);
		fputs(", \"framework_module\": ", f);
		if (r->fw_module)
			cli_json_s(f, r->fw_module);
		else
			fputs("null", f);
		fputs(", \"allocator\": ", f);
		cli_json_s(f, r->mode_name);
		fputs(", \"allocator_why\": ", f);
		cli_json_s(f, r->mode_why);
		return;
	}
	cli_wrapf(f, 4, "  framework: %s%s%s%s; allocator: %s (%s)", r->fw_name,
		  r->fw_module ? " (" : "", r->fw_module ? r->fw_module : "",
		  r->fw_module ? ")" : "", r->mode_name, r->mode_why);
}

/* The comparison of two traces' facts, before their own findings. */
static void compare_out(FILE *f, bool json, struct ex_facts *fa, const struct ex_recog *ra,
			struct ex_facts *fb, const struct ex_recog *rb)
{
	struct ex_findings cs;
	explain_compare(fa, ra, fb, rb, &cs);
	if (json) {
		fputs("],\n \"comparison\": {\"a\": ", f);
		cli_json_s(f, fa->path);
		fputs(", \"b\": ", f);
		cli_json_s(f, fb->path);
		fputs(", \"findings\": [", f);
	} else {
		fprintf(f, "comparison: why one run needed more than the other\n  A: %s\n  B: %s\n",
			fa->path, fb->path);
	}
	findings_out(f, json, &cs, fa->path, fb->path);
	if (json)
		fputs("]}", f);
	else
		fputc('\n', f);
	explain_findings_free(&cs);
}

int cmd_explain(int argc, char **argv)
{
	struct rb_opts o = {0};
	struct site_args sa = {0};
	struct trace *ts;
	/* the sites it names are top's and leaks' under the same options */
	const struct option opts[] = {
	    OPT_RB_JSON(&o),
	    OPT_RB_DEVICE(&o),
	    OPT_SITES(&sa),
	    OPT_END(),
	};
	int rc = cli_parse_open(&usage, opts, argc, argv, &o, &sa, &ts);
	if (rc >= 0)
		return rc;
	if (o.npaths > 2) {
		rb_finish_all(ts, o.npaths, 0);
		free(o.paths);
		site_args_done(usage.name, &sa);
		return say_usage_error("explain", "one trace, or two to compare, not %d", o.npaths);
	}
	FILE *f = stdout;
	int worst = 0;
	struct ex_facts fs[2];
	struct ex_recog rs[2];
	int nfacts = 0;
	bool nodev = false;
	for (int i = 0; i < o.npaths; i++, nfacts++) {
		int x = explain_facts(&ts[i], o.has_device, o.device, &fs[i]);
		worst = x > worst ? x : worst;
		explain_recognize(&fs[i], &rs[i]);
		if (o.has_device && !fs[i].ndevs) { /* as plot: a device not in the trace */
			say_error("explain", "%s: no device memory on device %" PRId64, ts[i].path,
				  o.device);
			nodev = true;
		}
	}
	if (nodev) {
		for (int i = 0; i < nfacts; i++)
			explain_facts_free(&fs[i]);
		free(o.paths);
		rc = rb_finish_all(ts, o.npaths, EXIT_USAGE);
		site_args_done(usage.name, &sa);
		return rc;
	}
	if (o.json)
		fputs("{\"traces\": [", f);
	else if (o.npaths == 2)
		compare_out(f, false, &fs[0], &rs[0], &fs[1], &rs[1]);
	for (int i = 0; i < o.npaths; i++) {
		struct ex_findings out;
		explain_findings(&fs[i], &rs[i], &out);
		if (o.json) {
			fprintf(f, "%s\n  {", i ? "," : "");
			cli_json_head(f, &ts[i]);
			recog_out(f, true, &rs[i]);
			fputs(",\n   \"findings\": [", f);
		} else {
			if (i)
				fputc('\n', f);
			cli_human_head(f, &ts[i]);
			recog_out(f, false, &rs[i]);
		}
		findings_out(f, o.json, &out, ts[i].path, NULL);
		if (o.json)
			fputs("]}", f);
		explain_findings_free(&out);
	}
	if (o.json && o.npaths == 2)
		compare_out(f, true, &fs[0], &rs[0], &fs[1], &rs[1]);
	else if (o.json)
		fputs("],\n \"comparison\": null", f);
	if (o.json)
		fputs("}\n", f);
	for (int i = 0; i < o.npaths; i++)
		explain_facts_free(&fs[i]);
	free(o.paths);
	rc = rb_finish_all(ts, o.npaths, worst);
	site_args_done(usage.name, &sa);
	return rc;
}
