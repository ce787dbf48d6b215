/* gpumemtrace: reads the traces libgpumemtrace.so writes. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
    {"run", cmd_run,
     "run a command under the tracer, then print its summary (and gate with --check-max-peak)"},
    {"dump", cmd_dump, "print every record of a trace, one per line"},
    {"summary", cmd_summary, "peak device memory, calls, failures, top allocation sites"},
    {"explain", cmd_explain,
     "the questions about GPU memory answered: findings with evidence and what to change"},
    {"top", cmd_top,
     "allocation sites ranked by bytes at the peak, at the end, in total, or by calls"},
    {"growth", cmd_growth,
     "leak or not: a verdict per device (leak, no leak, undetermined), its rate and site"},
    {"fragmentation", cmd_fragmentation,
     "size histogram, address span against live bytes, free gaps, rounding waste"},
    {"oom", cmd_oom, "every failed allocation: size, free memory then, who held it, a verdict"},
    {"leaks", cmd_leaks, "allocations still live at exit, grouped by stack"},
    {"diff", cmd_diff, "two traces side by side: environment, peaks, sites added, removed, grown"},
    {"check", cmd_check, "CI gate: peak, live-at-end and regression limits; exit 1 when one fails"},
    {"accounting", cmd_accounting,
     "nvidia-smi against the trace: traced, contexts, unexplained, the likely route"},
    {"plot", cmd_plot,
     "SVG timeline of live bytes per device: kinds or libraries, peak, OOMs, phases"},
    {"flamegraph", cmd_flamegraph,
     "interactive flame graph (SVG/HTML) or folded stacks of live bytes"},
    {"export", cmd_export, "convert a trace: Perfetto/Chrome JSON, CSV, or pprof"},
    {"watch", cmd_watch,
     "a trace as it grows: live bytes, history, top sites, leak suspects (a terminal view)"},
    {"import", cmd_import,
     "convert a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) into a trace"},
    {"replay", cmd_replay,
     "PyTorch's allocator history through gpumemtrace's model: how often it chose alike"},
    {"whatif", cmd_whatif,
     "a PyTorch history under other allocator settings: reserved peak, fragmentation, OOM"},
    {"symbolize", cmd_symbolize,
     "name a trace's frames from this machine's files, into the trace, so it reads anywhere"},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fputs("usage: gpumemtrace COMMAND [OPTIONS] TRACE\n"
	      "       gpumemtrace --help | --version | help [COMMAND]\n"
	      "\n"
	      "Reads the GPU memory traces that libgpumemtrace.so writes\n"
	      "(LD_PRELOAD=libgpumemtrace.so PROGRAM... writes gpumemtrace.PID.gmt).\n"
	      "\n"
	      "commands:\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].help);
	fputs("\n"
	      "Run 'gpumemtrace COMMAND --help' for a command's options.\n"
	      "\n"
	      "exit status:\n"
	      "  0  success (a trace with a torn tail is read up to it, with a warning)\n"
	      "  1  a check failed\n"
	      "  2  usage error: bad command, option or argument\n"
	      "  3  cannot read the input (missing file, permissions, I/O error)\n"
	      "     or write the output\n"
	      "  4  invalid or corrupt trace (not a trace, corrupt header or chunk,\n"
	      "     unsupported future format version)\n"
	      "Errors are one line on stderr: 'gpumemtrace COMMAND: message'.\n",
	      f);
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* gpumemtrace --gen KIND [COMMAND]: the documents made from the option
 * tables (make gen-docs); undocumented, for the build. */
static int gen_docs(int argc, char **argv)
{
	static const char *const kinds[] = {"completion",  "man-synopsis", "man-heading",
					    "man-options", "md-synopsis",  "md-options"};
	if (argc == 3 && cli_gen_table(argv[2], stdout) == 0)
		return 0;
	size_t k = 0;
	while (argc > 2 && k < sizeof(kinds) / sizeof(kinds[0]) && strcmp(argv[2], kinds[k]) != 0)
		k++;
	if (argc < 3 || k == sizeof(kinds) / sizeof(kinds[0]))
		return say_usage_error(NULL, "--gen: want one of completion, man-synopsis, "
					     "man-heading, man-options, md-synopsis, md-options, "
					     "md-site-rules, md-frameworks, md-settings");
	struct opt_gen_state g = {
	    .what = (enum opt_gen)k, .out = stdout, .only = argc > 3 ? argv[3] : NULL};
	if (g.only && !find(g.only))
		return say_usage_error(NULL, "unknown command '%s'", g.only);
	const char *names[NCOMMANDS];
	for (size_t i = 0; i < NCOMMANDS; i++)
		names[i] = commands[i].name;
	opt_gen_head(&g, names, NCOMMANDS);
	opt_gen_begin(&g);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char *av[] = {(char *)commands[i].name, NULL};
		commands[i].fn(1, av);
	}
	opt_gen_end();
	opt_gen_tail(&g);
	return 0;
}

int main(int argc, char **argv)
{
	/* A reader that stops early (`| head`, `| grep -q`) is not an error:
	 * writes fail with EPIPE instead of killing us, commands stop at the
	 * first failed write, and we exit with the command's status. */
	signal(SIGPIPE, SIG_IGN);
	xalloc_on_failure(diag_out_of_memory);
	if (argc < 2)
		return say_usage_error(NULL, "no command given");
	const char *a = argv[1];
	if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
		printf("gpumemtrace %s (trace format %d)\n", GMT_VERSION, GMT_FORMAT_VERSION);
		return 0;
	}
	if (strcmp(a, "help") == 0) {
		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		const struct command *c = find(argv[2]);
		if (!c)
			return say_usage_error(NULL, "unknown command '%s'", argv[2]);
		char *help_argv[] = {(char *)c->name, "--help", NULL};
		return c->fn(2, help_argv);
	}
	if (strcmp(a, "--gen") == 0)
		return gen_docs(argc, argv);
	if (a[0] == '-')
		return say_usage_error(NULL, "unknown option '%s'", a);
	const struct command *c = find(a);
	if (!c)
		return say_usage_error(NULL, "unknown command '%s'", a);
	int rc = c->fn(argc - 1, argv + 1);
	if ((fflush(stdout) != 0 || ferror(stdout)) && errno != EPIPE) {
		say_error(c->name, "cannot write the output: %s", strerror(errno));
		return rc ? rc : EXIT_INPUT;
	}
	return rc;
}
