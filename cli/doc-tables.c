/* The tables docs/reports.md shows, rendered from the framework table and
 * the site rules (gpumemtrace --gen md-frameworks | md-site-rules), and docs/settings.md's
 * (md-settings). */
#include <stdio.h>
#include <string.h>

#include "analysis/sites.h"
#include "cli/cli.h"
#include "common/frameworks.h"

static void globs(FILE *f, const char *sep, const char *const *v, const char *what)
{
	for (size_t i = 0; v && v[i]; i++)
		fprintf(f, "%s%s`%s`", i ? ", " : sep, i || !what ? "" : what, v[i]);
}

static const char *const match_name[] = {
    [SM_MODULE] = "module",	 [SM_PATH] = "path",	      [SM_SYMBOL] = "symbol",
    [SM_RUNTIME_API] = "symbol", [SM_PYFILE] = "Python file", [SM_NOPYTHON] = "frame",
};
static const char *const class_name[] = {
    [SITE_USER] = "the user's code",	       [SITE_CUDA] = "CUDA",
    [SITE_FRAMEWORK] = "framework or library", [SITE_GLUE] = "glue",
    [SITE_PYPKG] = "installed Python",
};

/* One row per run of rules of one name: "module `a`, `b`; symbol `c`". */
static void site_rules_md(FILE *f)
{
	size_t n;
	const struct site_rule *r = site_rule_list(&n);
	fputs("| rule | matches | passed over as |\n| --- | --- | --- |\n", f);
	for (size_t i = 0; i < n;) {
		fprintf(f, "| `%s` | ", r[i].name);
		size_t j = i;
		for (; j < n && strcmp(r[j].name, r[i].name) == 0; j++) {
			bool first_of_kind = j == i || r[j].match != r[j - 1].match;
			if (j > i)
				fputs(first_of_kind ? "; " : ", ", f);
			if (first_of_kind)
				fprintf(f, "%s ", match_name[r[j].match]);
			if (r[j].match == SM_RUNTIME_API)
				fputs("named as a CUDA runtime API (`cudaMalloc`)", f);
			else if (r[j].match == SM_NOPYTHON)
				fputs("\"Python frames unavailable\"", f);
			else
				fprintf(f, "`%s`", r[j].pattern);
		}
		fprintf(f, " | %s |\n", class_name[r[i].cls]);
		i = j;
	}
}

static void frameworks_md(FILE *f)
{
	static const char *const kind[] = {
	    [GMT_FWK_FRAMEWORK] = "framework",
	    [GMT_FWK_LIBRARY] = "library",
	    [GMT_FWK_CUDA] = "CUDA",
	};
	fputs("| name | kind | site rule | its code | its symbols, linked statically | static CUDA "
	      "runtime "
	      "| settings recorded |\n| --- | --- | --- | --- | --- | --- | --- |\n",
	      f);
	for (int id = 1; id < GMT_FW_COUNT; id++) {
		const struct gmt_framework *w = &gmt_frameworks[id];
		fprintf(f, "| %s | %s | `%s` | ", w->name, kind[w->kind], w->key);
		globs(f, "", w->modules, "module ");
		globs(f, w->modules ? "; " : "", w->paths, "path ");
		globs(f, w->modules || w->paths ? "; " : "", w->loose, "loaded if ");
		fputs(" | ", f);
		globs(f, "", w->alloc_symbols, NULL);
		fprintf(f, " | %s | ", w->static_runtime ? "yes" : "");
		const char *sep = "";
		for (size_t i = 0; i < gmt_fw_nenv; i++) /* by prefix: one glob */
			if ((int)gmt_fw_env[i].fw == id && gmt_fw_env[i].how != GMT_ENV_IN_PREFIX) {
				fprintf(f, "%s`%s%s`", sep, gmt_fw_env[i].name,
					gmt_fw_env[i].how == GMT_ENV_PREFIX ? "*" : "");
				sep = ", ";
			}
		fputs(" |\n", f);
	}
}

/* Every recorded variable that changes memory, by who reads it: what it
 * changes, its newer name when it has one, and the source. */
static void settings_md(FILE *f)
{
	fputs("| variable | read by | what it changes | source |\n| --- | --- | --- | --- |\n", f);
	for (size_t i = 0; i < gmt_fw_nenv; i++) {
		const struct gmt_fw_env *e = &gmt_fw_env[i];
		if (!e->what)
			continue;
		fprintf(f, "| `%s%s` | %s | %s", e->name, e->how == GMT_ENV_PREFIX ? "*" : "",
			gmt_frameworks[e->fw].name, e->what);
		if (e->current)
			fprintf(f, " (older name of `%s`)", e->current);
		fprintf(f, " | %s |\n", e->source);
	}
}

int cli_gen_table(const char *kind, FILE *f)
{
	if (strcmp(kind, "md-site-rules") == 0)
		site_rules_md(f);
	else if (strcmp(kind, "md-frameworks") == 0)
		frameworks_md(f);
	else if (strcmp(kind, "md-settings") == 0)
		settings_md(f);
	else
		return -1;
	return 0;
}
