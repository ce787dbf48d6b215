/* gpumemtrace accounting [--json] [--device N] TRACE...: what nvidia-smi
 * showed for the process against what the trace explains (traced
 * allocations by kind and library, contexts and module code), per device,
 * at the traced peak and at the end; a large unexplained share is flagged
 * with the route the memory likely took. The work is in accounting.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/accounting.h"
#include "cli/accounting-print.h"
#include "analysis/report-base.h"
#include "cli/cli.h"
#include "cli/options.h"

static const char about[] =
    "Reconciles what nvidia-smi shows for the process with what the trace explains,\n"
    "per device, at the peak of traced device bytes and at the end:\n"
    "  nvidia-smi            the process's usage from the NVML samples the tracer\n"
    "                        took: the highest within 1 s after the moment, else the\n"
    "                        nearest sample (the whole device's usage when NVML\n"
    "                        could not give the process's)\n"
    "  traced allocations    live device memory then, by kind and by library\n"
    "  contexts              the measured cost of the CUDA contexts live then\n"
    "                        (context and module code)\n"
    "  unexplained           nvidia-smi - traced - contexts; flagged LARGE above\n"
    "                        10% of nvidia-smi and 64 MiB, with the route the memory\n"
    "                        likely took and the evidence for it\n"
    "Without NVML samples it says why and still shows the traced figures.\n";
static const char more[] =
    "examples:\n"
    "  gpumemtrace accounting run.gmt\n"
    "  gpumemtrace accounting --json rank*.gmt | jq '.traces[].devices[].at_peak'\n"
    "\n"
    "exit status: 0 ok, 2 usage, 3 cannot read a file, 4 not a trace or corrupt\n";
static const struct opt_usage usage = {
    .name = "accounting", .args = "TRACE...", .min_args = 1, .about = about, .more = more};

int cmd_accounting(int argc, char **argv)
{
	struct rb_opts o = {0};
	struct trace *ts;
	int rc = cli_parse_open_plain(&usage, argc, argv, &o, &ts);
	if (rc >= 0)
		return rc;
	FILE *f = stdout;
	int worst = 0;
	int64_t only = o.has_device ? o.device : -1;
	struct acct *as = xcalloc((size_t)o.npaths, sizeof(*as));
	if (o.json)
		fputs("{\"traces\": [", f);
	for (int i = 0; i < o.npaths; i++) {
		int r = acct_compute(&as[i], &ts[i]);
		if (r > worst)
			worst = r;
		if (o.json) {
			fprintf(f, "%s\n  {", i ? "," : "");
			cli_json_head(f, &ts[i]);
			fputs(",\n   \"accounting\": ", f);
			acct_print_json(f, &as[i], only);
			fputc('}', f);
		} else {
			if (i)
				fputc('\n', f);
			cli_human_head(f, &ts[i]);
			acct_print(f, &as[i], only);
		}
	}
	if (o.json) {
		fputs("]}\n", f);
	} else if (o.npaths > 1) {
		char b[4][64], lab[64];
		fprintf(f,
			"\nper process, at each one's peak (all devices)\n  %-24s %11s %11s %11s "
			"%14s\n",
			"process", "nvidia-smi", "traced", "contexts", "unexplained");
		for (int i = 0; i < o.npaths; i++) {
			uint64_t smi = 0, traced = 0, ctx = 0;
			int64_t un = 0;
			bool nvml = false;
			for (size_t k = 0; k < as[i].ndevs; k++) {
				const struct acct_moment *m = &as[i].devs[k].peak;
				if (only >= 0 && as[i].devs[k].ordinal != only)
					continue;
				nvml |= m->nvml;
				smi += m->smi;
				traced += m->traced;
				ctx += m->contexts;
				un += m->nvml ? m->unexplained : 0;
			}
			char neg[64];
			snprintf(neg, sizeof(neg), "%s%s", un < 0 ? "-" : "",
				 fmt_size(b[3], un < 0 ? -(uint64_t)un : (uint64_t)un));
			fprintf(f, "  %-24.24s %11s %11s %11s %14s\n",
				trace_label(&ts[i], lab, sizeof(lab)),
				nvml ? fmt_size(b[0], smi) : "-", fmt_size(b[1], traced),
				fmt_size(b[2], ctx), nvml ? neg : "-");
		}
	}
	for (int i = 0; i < o.npaths; i++)
		acct_free(&as[i]);
	free(as);
	free(o.paths);
	return rb_finish_all(ts, o.npaths, worst);
}
