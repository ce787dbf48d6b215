/* Frames the trace did not name, named from the module files on this
 * machine (common/symbolize.h): once per address, the answer kept in the
 * symbol table beside the trace's own SYMBOLs, misses too; each C++ name
 * demangled once. Settings (docs/cli.md): GPUMEMTRACE_SYMBOL_PATH, folders
 * to look in for moved files by build-id; GPUMEMTRACE_NAME_SECONDS, the
 * bound on naming per trace. Naming cut short by that bound is said in
 * one warning line at the end of the report (trace_names_warn); modules
 * whose files are not here show as module+offset (`gpumemtrace symbolize`
 * says which and why). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/symbolize.h"
#include "common/text.h"
#include "analysis/trace-records.h"

enum { NAME_SECONDS_DEFAULT = 120 };

/* A demangled name, by the symbolizer's string (stable until it is freed). */
struct trace_demangled {
	UT_hash_handle hh;
	const char *raw;
	char *name; /* NULL: not a C++ name */
};

static uint64_t name_seconds(const char *cmd)
{
	const char *v = getenv("GPUMEMTRACE_NAME_SECONDS");
	if (!v || !*v)
		return NAME_SECONDS_DEFAULT;
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	if (*end || v[0] == '-') {
		static bool said;
		if (!said)
			fprintf(stderr,
				"gpumemtrace %s: warning: GPUMEMTRACE_NAME_SECONDS=%s is not a "
				"number of seconds; %d used\n",
				cmd, v, NAME_SECONDS_DEFAULT);
		said = true;
		return NAME_SECONDS_DEFAULT;
	}
	return n;
}

struct gmt_symbolizer *trace_symbolizer(struct trace *t)
{
	if (t->symbolizer_tried)
		return t->symbolizer;
	t->symbolizer_tried = true;
	/* elfutils may ask a debuginfod server when this is set (a dwz
	 * file's lookup): the reader makes no network requests. */
	unsetenv("DEBUGINFOD_URLS");
	/* The files are read once for all the traces a command reads (the
	 * ranks of a job, the processes of a run load the same libraries). */
	static struct gmt_symfiles *files;
	if (!files)
		files = gmt_symfiles_new(getenv("GPUMEMTRACE_SYMBOL_PATH"));
	struct gmt_symbolizer *s = gmt_symbolizer_new_shared(files);
	if (!s)
		return NULL;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t secs = name_seconds(t->cmd);
	t->name_seconds = secs;
	if (secs < 100000000)
		gmt_symbolizer_set_deadline(s, ((uint64_t)ts.tv_sec + secs) * 1000000000u +
						   (uint64_t)ts.tv_nsec);
	for (size_t i = 0; i < t->nmods; i++) {
		const struct trace_module *m = &t->mods[i];
		gmt_symbolizer_add_module(s, m->path, m->bias, m->start, m->end, m->build_id,
					  (unsigned)m->build_id_len);
	}
	t->symbolizer = s;
	return s;
}

/* The raw name demangled, once per name: a copy to keep. */
static char *demangled_copy(struct trace *t, const char *raw)
{
	struct trace_demangled *d = NULL;
	HASH_FIND_PTR(t->demangled, &raw, d);
	if (!d) {
		d = xcalloc(1, sizeof(*d));
		d->raw = raw;
		d->name = trace_demangle(raw);
		HASH_ADD_PTR(t->demangled, raw, d);
	}
	return xstrdup(d->name ? d->name : raw);
}

struct trace_symbol *trace_name_from_files(struct trace *t, uint64_t ip, struct trace_symbol *sym)
{
	struct gmt_symbol out = {0};
	struct gmt_symbolizer *s = trace_symbolizer(t);
	/* ip is a return address (the innermost frame's too: the call into
	 * the API): name the call, as the library names its SYMBOLs */
	bool named = s && ip && gmt_symbolize(s, ip - 1, &out) == 0;
	char *function = named ? demangled_copy(t, out.function) : xstrdup("");
	const char *file = named && out.file ? out.file : "";
	if (!sym) {
		sym = trace_add_symbol(t, ip, 0, function, file, named ? out.line : 0);
	} else {
		free(sym->function);
		free(sym->file);
		sym->function = function;
		sym->file = xstrdup(file);
		sym->line = named ? out.line : 0;
	}
	sym->looked_up = true;
	return sym;
}

void trace_names_free(struct trace *t)
{
	struct trace_demangled *d, *tmp;
	HASH_ITER(hh, t->demangled, d, tmp)
	{
		HASH_DEL(t->demangled, d);
		free(d->name);
		free(d);
	}
	gmt_symbolizer_free(t->symbolizer);
	t->symbolizer = NULL;
}

void trace_names_warn(const struct trace *t)
{
	const struct gmt_symbolizer *s = t->symbolizer;
	if (!s)
		return;
	struct gmt_symbolizer_stats st;
	gmt_symbolizer_stats(s, &st);
	if (st.cut)
		fprintf(stderr,
			"gpumemtrace %s: warning: %s: naming stopped at its %" PRIu64
			" s bound (GPUMEMTRACE_NAME_SECONDS): %" PRIu64 " of %" PRIu64
			" frames looked up were left as module+offset\n",
			t->cmd, t->path, t->name_seconds, st.cut, st.asked);
}
