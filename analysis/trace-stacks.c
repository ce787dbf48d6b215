/* A trace's stacks as the reports show them: stack ids to frames, frames
 * to symbols (from the trace's SYMBOL and PYFRAME records, else the module
 * files: trace-names.c), and frames and callers as text. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/sites.h"
#include "analysis/trace-records.h"

#define MAX_DEPTH 4096

const struct trace_module *trace_module_at(const struct trace *t, uint64_t ip)
{
	for (size_t i = 0; i < t->nmods; i++)
		if (ip >= t->mods[i].start && ip < t->mods[i].end)
			return &t->mods[i];
	return NULL;
}

static void resolve(struct trace *t, struct trace_frame *f)
{
	if (GMT_IS_PYFRAME_IP(f->ip)) {
		struct trace_pyframe *pf = NULL;
		uint64_t id = GMT_PYFRAME_ID(f->ip);
		f->python = true;
		f->module = NULL;
		if (id == GMT_PYFRAME_NONE) {
			f->function = "[Python frames unavailable: the GIL was not held]";
			return;
		}
		HASH_FIND(hh, t->pyframes, &id, sizeof(id), pf);
		if (pf) {
			f->function = pf->function;
			f->file = pf->file[0] ? pf->file : NULL;
			f->line = pf->line;
		} else {
			f->function = "[Python frame]"; /* its PYFRAME record was lost */
		}
		return;
	}
	struct trace_symbol *sym = NULL;
	uint64_t ip = f->ip;
	HASH_FIND(hh, t->symbols, &ip, sizeof(ip), sym);
	if (!sym && ip) { /* a SYMBOL keyed by the call's address */
		struct trace_symbol *at_call = NULL;
		ip--;
		HASH_FIND(hh, t->symbols, &ip, sizeof(ip), at_call);
		if (at_call && at_call->function[0])
			sym = at_call;
	}
	/* No name in the trace (the process died before naming, or could not
	 * name it): from the module files on this machine, once per address. */
	if (!sym || (!sym->function[0] && !sym->looked_up))
		sym = trace_name_from_files(t, f->ip, sym);
	if (sym->function[0]) {
		f->function = sym->function;
		f->file = sym->file[0] ? sym->file : NULL;
		f->line = sym->line;
	}
}

int trace_stack_depth(const struct trace *t, uint64_t id)
{
	int n = 0;
	while (id != 0 && id <= t->nnodes && n < MAX_DEPTH) {
		n++;
		id = t->nodes[id - 1].parent;
	}
	return n;
}

static bool raw_frame(const struct trace *t, uint64_t id, int depth, struct trace_frame *out)
{
	for (int d = 0; id != 0 && id <= t->nnodes && d < MAX_DEPTH; d++) {
		const struct trace_node *n = &t->nodes[id - 1];
		if (d == depth) {
			memset(out, 0, sizeof(*out));
			out->ip = n->ip;
			out->depth = d;
			out->module = GMT_IS_PYFRAME_IP(n->ip) ? NULL : trace_module_at(t, n->ip);
			out->python = GMT_IS_PYFRAME_IP(n->ip);
			return true;
		}
		id = n->parent;
	}
	return false;
}

/* Tables show short C++ names (sites.h); the rules and --json see them whole. */
static void shorten(struct trace *t, struct trace_frame *f)
{
	if (t->short_names && !f->python && f->function &&
	    !(t->site_opts && t->site_opts->full_names))
		f->function = site_short_cached(t, f->function);
}

bool trace_frame(struct trace *t, uint64_t id, int depth, struct trace_frame *out)
{
	if (!raw_frame(t, id, depth, out))
		return false;
	resolve(t, out);
	shorten(t, out);
	return true;
}

int trace_frames(struct trace *t, uint64_t id, struct trace_frame **out)
{
	int n = trace_stack_depth(t, id);
	struct trace_frame *fr = xcalloc((size_t)(n ? n : 1), sizeof(*fr));
	for (int d = 0; d < n && id != 0 && id <= t->nnodes; d++) {
		const struct trace_node *nd = &t->nodes[id - 1];
		fr[d].ip = nd->ip;
		fr[d].depth = d;
		fr[d].python = GMT_IS_PYFRAME_IP(nd->ip);
		fr[d].module = fr[d].python ? NULL : trace_module_at(t, nd->ip);
		resolve(t, &fr[d]);
		id = nd->parent;
	}
	*out = fr;
	return n;
}

bool trace_site(struct trace *t, uint64_t stack_id, struct trace_frame *out)
{
	struct site_choice c;
	site_choose(t, stack_id, &c);
	if (c.depth < 0 || !raw_frame(t, stack_id, c.depth, out))
		return false;
	resolve(t, out);
	shorten(t, out);
	out->in_cuda = c.in_cuda;
	return true;
}

/* The first frame outside the CUDA libraries: whose library made the call. */
const char *trace_library(struct trace *t, uint64_t id)
{
	struct trace_frame f, first;
	if (!id || !raw_frame(t, id, 0, &first))
		return "(no stack)";
	f = first;
	for (int d = 1; !f.python && f.module && f.module->cuda; d++)
		if (!raw_frame(t, id, d, &f)) {
			f = first; /* all inside the CUDA libraries */
			break;
		}
	if (f.python)
		return "python";
	return f.module ? f.module->library : "(unknown module)";
}

const char *trace_frame_text(const struct trace_frame *f, char *buf, size_t size)
{
	if (f->function) {
		if (f->file)
			snprintf(buf, size, "%s (%s:%" PRIu64 ")", f->function, f->file, f->line);
		else if (f->module)
			snprintf(buf, size, "%s (%s+0x%" PRIx64 ")", f->function,
				 f->module->library, f->ip - f->module->bias);
		else
			snprintf(buf, size, "%s", f->function);
	} else if (f->module) {
		snprintf(buf, size, "%s+0x%" PRIx64, f->module->library, f->ip - f->module->bias);
	} else {
		snprintf(buf, size, "0x%" PRIx64, f->ip);
	}
	return buf;
}

/* Callers in tables are the user's code too: a frame the rules pass over is
 * left out (and does not count); true when fr is to be shown. Up to 64
 * frames are looked at past the site. */
static bool passed_over(struct trace *t, const struct trace_frame *fr, int *ncallers)
{
	if (t->site_opts && t->site_opts->raw)
		return true;
	struct trace_frame full = *fr;
	resolve(t, &full);
	enum site_class cls;
	site_rule_of(t->site_opts, &full, &cls);
	if (cls == SITE_USER)
		return true;
	if (*ncallers < 64)
		++*ncallers;
	return false;
}

const char *trace_callers_text(struct trace *t, uint64_t stack_id, int site_depth, int ncallers,
			       char *buf, size_t size)
{
	size_t len = strlen(buf);
	for (int d = 1; d <= ncallers && len + 1 < size; d++) {
		struct trace_frame fr;
		if (!trace_frame(t, stack_id, site_depth + d, &fr))
			break;
		/* Below main there is only the C start-up code. */
		if (fr.function &&
		    (!strncmp(fr.function, "__libc_start", 12) || !strcmp(fr.function, "_start")))
			break;
		if (!passed_over(t, &fr, &ncallers))
			continue;
		if (fr.python && fr.function && fr.file)
			snprintf(buf + len, size - len, " <- %s (%s:%" PRIu64 ")", fr.function,
				 fr.file, fr.line);
		else if (fr.function)
			snprintf(buf + len, size - len, " <- %s", fr.function);
		else if (fr.module)
			snprintf(buf + len, size - len, " <- %s+0x%" PRIx64, fr.module->library,
				 fr.ip - fr.module->bias);
		else
			snprintf(buf + len, size - len, " <- 0x%" PRIx64, fr.ip);
		len += strlen(buf + len);
	}
	return buf;
}
