/* gpumemtrace symbolize TRACE...: names the frames a trace does not name,
 * from the module files on this machine, into the trace (analysis/
 * trace-symbolize.c), so that it reads with names anywhere. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/output.h"
#include "common/symbolize.h"
#include "analysis/trace.h"

#define CMD "symbolize"

static const char about[] =
    "Names every native frame of TRACE's stacks that the trace does not name\n"
    "yet, from the module files on this machine, and adds the names to the\n"
    "trace as SYMBOL records, so that it reads with names on any machine.\n"
    "Reports name such frames themselves when the files are here; a trace\n"
    "taken elsewhere needs its names inside. `gpumemtrace run` does this for\n"
    "its traces once the command has ended; use this command for a trace\n"
    "made with plain LD_PRELOAD, before copying it away.\n";
static const char more[] =
    "Each module's file is read at the path the trace recorded when its GNU\n"
    "build-id is the one recorded, else looked for by build-id in the\n"
    "--symbol-path folders (DIR/.build-id/xx/rest[.debug], DIR/NAME, then\n"
    "the ELF files under DIR) and /usr/lib/debug; a file with another\n"
    "build-id is never used. Separate debug files are found by build-id and\n"
    ".gnu_debuglink. Nothing that is not a regular file is opened, and no\n"
    "network request is made.\n"
    "\n"
    "The names are added in place, as whole chunks after the last one (a\n"
    "fresh trailer follows them when the trace ended with one). A trace whose\n"
    "process still holds it open, or whose end is torn or corrupt, is left\n"
    "as it is: -o FILE writes a named copy instead (of the readable part, with\n"
    "a NOTE saying what was left out). Running it again adds only what is\n"
    "still missing. Naming stops after GPUMEMTRACE_NAME_SECONDS (default\n"
    "120) per trace; a warning NOTE in the trace then says how many frames\n"
    "were not looked up.\n"
    "\n"
    "exit status: 0 when every trace was handled (frames whose module file\n"
    "is not here stay unnamed: the lines say which and why); 2 on a usage\n"
    "error; 3 if a trace cannot be read or written, or its process still\n"
    "holds it; 4 if it is corrupt or its end torn (without -o).\n"
    "\n"
    "examples:\n"
    "  gpumemtrace symbolize gpumemtrace.1234.gmt\n"
    "  gpumemtrace symbolize --symbol-path ~/venv/lib:/opt/build killed.gmt\n"
    "  gpumemtrace symbolize -o named.gmt /shared/readonly/run.gmt\n";
static const struct opt_usage usage = {
    .name = CMD, .args = "TRACE...", .min_args = 1, .about = about, .more = more};

struct sym_args {
	const char *output, *symbol_path;
	bool quiet;
};

static void print_build_id(FILE *f, const struct trace_module *m)
{
	for (size_t i = 0; i < m->build_id_len && i < 20; i++)
		fprintf(f, "%02x", m->build_id[i]);
}

/* One line per module whose frames stayed unnamed because its file could
 * not be read, with why. */
static void print_modules(struct trace *t)
{
	struct gmt_symbolizer *s = trace_symbolizer(t);
	size_t n = gmt_symbolizer_nmodules(s);
	for (size_t i = 0; i < n && i < t->nmods; i++) {
		struct gmt_symmod_info m;
		gmt_symbolizer_module(s, i, &m);
		if (m.state == GMT_SYMMOD_MOVED && m.asked)
			printf("  %s: read from %s (found by build-id)\n", m.path, m.found_at);
		if (!m.asked || m.named == m.asked || m.state == GMT_SYMMOD_OK ||
		    m.state == GMT_SYMMOD_MOVED)
			continue;
		printf("  %" PRIu64 " frame%s left unnamed in %s: %s", m.asked - m.named,
		       m.asked - m.named == 1 ? "" : "s", m.path, gmt_symmod_state_text(m.state));
		if (!strcmp(m.path, t->mods[i].path) && t->mods[i].build_id_len) {
			fputs(" (build-id ", stdout);
			print_build_id(stdout, &t->mods[i]);
			fputs(")", stdout);
		}
		putchar('\n');
	}
}

static int one(const char *path, const struct sym_args *a)
{
	struct trace t;
	int rc = trace_open(&t, CMD, path);
	if (rc >= 0)
		return rc;
	struct trace_symbolize res;
	struct cli_out o;
	if (a->output) {
		rc = cli_out_open(&o, CMD, a->output, &path, 1);
		if (rc >= 0 || !o.tmp) { /* not a regular file: a copy needs one */
			if (rc < 0) {
				cli_out_close(&o, CMD, false);
				rc = say_usage_error(CMD, "-o %s: not a regular file", a->output);
			}
			trace_close(&t);
			return rc;
		}
		fchmod(fileno(o.f), 0600); /* a trace, private as the library makes them */
	}
	rc = trace_symbolize(&t, a->output ? fileno(o.f) : -1, &res);
	if (a->output) {
		int closed = cli_out_close(&o, CMD, rc < 0);
		if (rc < 0)
			rc = closed;
	}
	const char *shown = a->output ? a->output : path;
	if (rc < 0 && !a->quiet && trace_partial(&t)) { /* named, but not whole */
		char text[256];
		printf("%s: %s\n", shown, trace_partial_text(&t, text, sizeof(text)));
	}
	if (rc < 0 && !a->quiet) {
		uint64_t left = res.frames - res.had - res.named;
		if (!res.named && !left)
			printf("%s: every frame already has a name (%" PRIu64 " frames)\n", shown,
			       res.frames);
		else if (!left)
			printf("%s: named %" PRIu64 " frames from the module files\n", shown,
			       res.named);
		else
			printf("%s: named %" PRIu64 " of %" PRIu64 " frames from the module files; "
			       "%" PRIu64 " left as module+offset\n",
			       shown, res.named, res.named + left, left);
		if (res.cut)
			printf("  naming stopped at its %" PRIu64 " s bound "
			       "(GPUMEMTRACE_NAME_SECONDS): %" PRIu64 " frames not looked up\n",
			       t.name_seconds, res.cut);
		print_modules(&t);
	}
	int end = trace_finish(&t); /* the read's own warning (a torn tail) or error */
	trace_close(&t);
	return rc >= 0 ? rc : end;
}

int cmd_symbolize(int argc, char **argv)
{
	struct sym_args a = {0};
	const struct option opts[] = {
	    OPT_FILE("output", &a.output, "FILE",
		     "write a named copy to FILE instead of adding the\nnames in place (one TRACE)",
		     .short_name = 'o'),
	    OPT_STRING("symbol-path", &a.symbol_path, "DIRS",
		       "':'-separated folders to look in for module files\nthat moved, by "
		       "build-id (GPUMEMTRACE_SYMBOL_PATH)"),
	    OPT_BOOL("quiet", &a.quiet, "print nothing but errors", .short_name = 'q'),
	    OPT_END(),
	};
	const char **paths;
	int npaths;
	int rc = opt_parse(&usage, opts, argc, argv, &paths, &npaths);
	if (rc >= 0)
		return rc;
	if (a.output && npaths > 1) {
		free(paths);
		return say_usage_error(CMD, "-o takes one TRACE, not %d", npaths);
	}
	if (a.symbol_path)
		setenv("GPUMEMTRACE_SYMBOL_PATH", a.symbol_path, 1);
	int worst = 0;
	for (int i = 0; i < npaths; i++) {
		int r = one(paths[i], &a);
		if (r > worst)
			worst = r;
	}
	free(paths);
	return worst;
}
