/* The allocation site past the frameworks (sites.h). */
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/api.h"
#include "analysis/frameworks.h"
#include "analysis/sites.h"
#include "analysis/trace.h"

/* The rules, first match wins: built once from the framework table
 * (common/frameworks.h) and the rules below, in this order: the CUDA
 * libraries and the static runtime; glue that lives inside a framework's
 * library (pybind11, the autograd engine); the frameworks' allocators by
 * symbol (a framework linked statically); the frameworks and CUDA
 * libraries by module; then the rest below. docs/reports.md's table is
 * generated from the result (gpumemtrace --gen md-site-rules). */
#define R(n, m, p, c)                                                                              \
	{                                                                                          \
		n, m, p, c                                                                         \
	}
/* glue inside the frameworks' libraries, before their modules' rules */
static const struct site_rule bindings_rules[] = {
    R("bindings", SM_SYMBOL, "pybind11::*", SITE_GLUE),
    R("bindings", SM_SYMBOL, "nanobind::*", SITE_GLUE),
};
/* after the frameworks' */
static const struct site_rule rest_rules[] = {
    /* ctypes and libffi */
    R("libffi", SM_MODULE, "libffi.so*", SITE_GLUE),
    R("libffi", SM_SYMBOL, "ffi_call*", SITE_GLUE),
    R("ctypes", SM_MODULE, "_ctypes*", SITE_GLUE),
    R("ctypes", SM_SYMBOL, "_ctypes_*", SITE_GLUE),
    /* the interpreter, as a library or linked into the python binary */
    R("libpython", SM_MODULE, "libpython*", SITE_GLUE),
    R("python", SM_MODULE, "python", SITE_GLUE),
    R("python", SM_MODULE, "python[0-9]*", SITE_GLUE),
    R("python", SM_SYMBOL, "_PyEval_*", SITE_GLUE),
    R("python", SM_SYMBOL, "_PyObject_*", SITE_GLUE),
    R("python", SM_SYMBOL, "PyObject_*", SITE_GLUE),
    R("python", SM_SYMBOL, "_PyFunction_*", SITE_GLUE),
    R("python", SM_SYMBOL, "PyEval_*", SITE_GLUE),
    R("python", SM_SYMBOL, "*PyRun_*", SITE_GLUE),
    R("python", SM_SYMBOL, "Py_*Main", SITE_GLUE),
    /* the C library and thread start */
    R("system", SM_MODULE, "libc.so*", SITE_GLUE),
    R("system", SM_MODULE, "libstdc++.so*", SITE_GLUE),
    R("system", SM_MODULE, "libgcc_s.so*", SITE_GLUE),
    R("system", SM_MODULE, "ld-linux*", SITE_GLUE),
    R("system", SM_SYMBOL, "__libc_start*", SITE_GLUE),
    R("system", SM_SYMBOL, "_start", SITE_GLUE),
    /* any other native library an installer put in site-packages */
    R("installed-package", SM_PATH, "*/site-packages/*", SITE_FRAMEWORK),
    R("installed-package", SM_PATH, "*/dist-packages/*", SITE_FRAMEWORK),
    /* Python frames: installed packages and the standard library */
    R("python-package", SM_PYFILE, "*/site-packages/*", SITE_PYPKG),
    R("python-package", SM_PYFILE, "*/dist-packages/*", SITE_PYPKG),
    R("python-stdlib", SM_PYFILE, "*/lib/python3*/*", SITE_PYPKG),
    R("python-stdlib", SM_PYFILE, "<frozen *>", SITE_PYPKG),
    R("no-python-frames", SM_NOPYTHON, "", SITE_GLUE),
};
#undef R
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static struct {
	pthread_once_t once;
	struct site_rule *v;
	size_t n;
	int module_rule[GMT_FW_COUNT]; /* each row's first module rule */
} site_rules = {.once = PTHREAD_ONCE_INIT};

static void add_rules(struct site_rule *out, size_t *n, const char *name, enum site_match how,
		      const char *const *globs, enum site_class cls)
{
	for (size_t i = 0; globs && globs[i]; i++)
		if (out)
			out[(*n)++] = (struct site_rule){name, how, globs[i], cls};
		else
			(*n)++;
}

/* The rules in order into out (NULL: only counted into *n). */
static void make_rules(struct site_rule *out, size_t *n)
{
	const struct gmt_framework *fw = gmt_frameworks;
	*n = 0;
	for (int id = 1; id < GMT_FW_COUNT; id++)
		if (fw[id].kind == GMT_FWK_CUDA) {
			site_rules.module_rule[id] = (int)*n;
			add_rules(out, n, fw[id].key, SM_MODULE, fw[id].modules, SITE_CUDA);
		}
	for (int id = 1; id < GMT_FW_COUNT; id++)
		if (fw[id].kind == GMT_FWK_CUDA)
			add_rules(out, n, fw[id].alloc_rule, SM_SYMBOL, fw[id].alloc_symbols,
				  SITE_CUDA);
	if (out) /* the static runtime's functions, by their API names */
		out[*n] = (struct site_rule){fw[GMT_FW_CUDA_RUNTIME].alloc_rule, SM_RUNTIME_API,
					     "cuda*", SITE_CUDA};
	(*n)++;
	for (size_t i = 0; i < NELEM(bindings_rules); i++, (*n)++)
		if (out)
			out[*n] = bindings_rules[i];
	for (int id = 1; id < GMT_FW_COUNT; id++)
		add_rules(out, n, fw[id].glue_rule, SM_SYMBOL, fw[id].glue_symbols, SITE_GLUE);
	for (int id = 1; id < GMT_FW_COUNT; id++)
		if (fw[id].kind != GMT_FWK_CUDA)
			add_rules(out, n, fw[id].alloc_rule, SM_SYMBOL, fw[id].alloc_symbols,
				  SITE_FRAMEWORK);
	for (int id = 1; id < GMT_FW_COUNT; id++)
		if (fw[id].kind != GMT_FWK_CUDA) {
			site_rules.module_rule[id] = (int)*n;
			add_rules(out, n, fw[id].key, SM_MODULE, fw[id].modules, SITE_FRAMEWORK);
			add_rules(out, n, fw[id].key, SM_PATH, fw[id].paths, SITE_FRAMEWORK);
		}
	for (size_t i = 0; i < NELEM(rest_rules); i++, (*n)++)
		if (out)
			out[*n] = rest_rules[i];
}

static void build_rules(void)
{
	size_t n;
	make_rules(NULL, &n);
	site_rules.v = xcalloc(n, sizeof(*site_rules.v));
	make_rules(site_rules.v, &site_rules.n);
}

const struct site_rule *site_rule_list(size_t *n)
{
	pthread_once(&site_rules.once, build_rules);
	*n = site_rules.n;
	return site_rules.v;
}

const char *site_opts_init(struct site_opts *o, const char *const *hide, size_t nhide,
			   const char *const *focus, size_t nfocus, char *err, size_t errsize)
{
	o->hide = nhide ? calloc(nhide, sizeof(regex_t)) : NULL;
	o->focus = nfocus ? calloc(nfocus, sizeof(regex_t)) : NULL;
	o->src = nhide + nfocus ? xcalloc(nhide + nfocus, sizeof(*o->src)) : NULL;
	o->hits = nhide + nfocus ? xcalloc(nhide + nfocus, sizeof(*o->hits)) : NULL;
	for (size_t i = 0; i < nhide + nfocus; i++)
		o->src[i] = i < nhide ? hide[i] : focus[i - nhide];
	for (int k = 0; k < 2; k++) {
		const char *const *v = k ? focus : hide;
		size_t n = k ? nfocus : nhide;
		regex_t *re = k ? o->focus : o->hide;
		for (size_t i = 0; i < n; i++) {
			int rc = regcomp(&re[i], v[i], REG_EXTENDED | REG_NOSUB);
			if (rc) {
				char msg[128];
				regerror(rc, &re[i], msg, sizeof(msg));
				snprintf(err, errsize, "--%s '%s': %s", k ? "focus" : "hide", v[i],
					 msg);
				site_opts_free(o);
				return err;
			}
			*(k ? &o->nfocus : &o->nhide) = i + 1;
		}
	}
	return NULL;
}

void site_opts_free(struct site_opts *o)
{
	for (size_t i = 0; i < o->nhide; i++)
		regfree(&o->hide[i]);
	for (size_t i = 0; i < o->nfocus; i++)
		regfree(&o->focus[i]);
	free(o->hide);
	free(o->focus);
	free(o->src);
	free(o->hits);
	o->src = NULL;
	o->hits = NULL;
	o->hide = o->focus = NULL;
	o->nhide = o->nfocus = 0;
}

/* Whether any of the n expressions matches f; each that does counts a hit
 * (all are tried: an expression that never matches is warned of). */
static bool any_match(const regex_t *re, size_t n, size_t *hits, const struct trace_frame *f)
{
	const char *what[3] = {f->function, f->file, f->module ? f->module->path : NULL};
	bool any = false;
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			if (what[k] && regexec(&re[i], what[k], 0, NULL, 0) == 0) {
				hits[i]++;
				any = true;
				break;
			}
	return any;
}

const char *site_opts_unmatched(const struct site_opts *o, size_t *i, bool *focus)
{
	for (; o && *i < o->nhide + o->nfocus; (*i)++)
		if (!o->hits[*i]) {
			*focus = *i >= o->nhide;
			return o->src[(*i)++];
		}
	return NULL;
}

static bool runtime_api_name(const char *fn)
{
	if (!fn || strncmp(fn, "cuda", 4) != 0)
		return false;
	for (uint32_t a = 0; a <= GMT_API_MAX_; a++) {
		const struct api_info *i = api_lookup(a);
		if (i && strcmp(i->name, fn) == 0)
			return true;
	}
	return false;
}

static bool rule_matches(const struct site_rule *r, const struct trace_frame *f)
{
	const struct trace_module *m = f->module;
	switch (r->match) {
	case SM_MODULE:
		return !f->python && m && fnmatch(r->pattern, m->library, 0) == 0;
	case SM_PATH:
		return !f->python && m && fnmatch(r->pattern, m->path, 0) == 0;
	case SM_SYMBOL:
		return !f->python && f->function && fnmatch(r->pattern, f->function, 0) == 0;
	case SM_RUNTIME_API: /* the shared runtime's are matched by module */
		return !f->python && runtime_api_name(f->function);
	case SM_PYFILE:
		return f->python && f->file && fnmatch(r->pattern, f->file, 0) == 0;
	case SM_NOPYTHON:
		return f->python && !f->file && f->function && f->function[0] == '[';
	}
	return false;
}

int site_rule_of(const struct site_opts *o, const struct trace_frame *f, enum site_class *cls)
{
	bool hidden = o && o->nhide && any_match(o->hide, o->nhide, o->hits, f);
	if (o && o->nfocus && any_match(o->focus, o->nfocus, o->hits + o->nhide, f)) {
		*cls = SITE_USER;
		return SITE_RULE_FOCUS;
	}
	if (hidden) {
		*cls = SITE_GLUE;
		return SITE_RULE_HIDE;
	}
	size_t n;
	const struct site_rule *r = site_rule_list(&n);
	if (!f->python && f->module && f->module->cuda) { /* the module's row says */
		*cls = SITE_CUDA;
		return site_rules.module_rule[f->module->fw];
	}
	for (size_t i = 0; i < n; i++) {
		if (rule_matches(&r[i], f)) {
			*cls = r[i].cls;
			return (int)i;
		}
	}
	*cls = SITE_USER;
	return SITE_RULE_NONE;
}

const char *site_rule_name(int rule)
{
	if (rule == SITE_RULE_HIDE)
		return "--hide";
	if (rule == SITE_RULE_FOCUS)
		return "--focus";
	size_t n;
	const struct site_rule *r = site_rule_list(&n);
	if (rule < 0 || (size_t)rule >= n)
		return NULL;
	return r[rule].name;
}

/* ---- choosing --------------------------------------------------------- */

struct site_cache {
	UT_hash_handle hh;
	uint64_t id;
	struct site_choice c;
};

/* --raw-sites: the first frame outside the CUDA libraries and the tracer. */
static void choose_raw(const struct trace_frame *fr, int n, struct site_choice *c)
{
	for (int i = 0; i < n; i++)
		if (fr[i].python || !fr[i].module || !fr[i].module->cuda) {
			c->depth = i;
			return;
		}
	c->in_cuda = true;
}

static bool python_rule(int rule)
{
	const char *n = site_rule_name(rule);
	return n && (strcmp(n, "python") == 0 || strcmp(n, "libpython") == 0);
}

bool site_is_interpreter(const struct trace_frame *f)
{
	enum site_class cls;
	return !f->python && python_rule(site_rule_of(NULL, f, &cls));
}

/* The interpreter and the C library: never a site, even as a fallback. */
static bool interpreter_rule(int rule)
{
	const char *n = site_rule_name(rule);
	return python_rule(rule) || (n && strcmp(n, "system") == 0);
}

/* No frame of the user's code (a thread that never ran Python, or a trace
 * without Python frames): the outermost frame of the innermost run of
 * framework frames, the framework's entry point (THPVariable_ones,
 * ReluBackward0::apply); else a Python frame (an installed package's, the
 * "no Python frames" marker); else the way in from the interpreter (ctypes'
 * PyCFuncPtr_call past libffi); else the first frame outside the CUDA
 * libraries. */
static void choose_fallback(const struct trace_frame *fr, const enum site_class *cls,
			    const int *rule, int n, struct site_choice *c)
{
	c->fallback = true;
	int i = 0;
	while (i < n && cls[i] != SITE_FRAMEWORK)
		i++;
	if (i < n) {
		while (i + 1 < n && cls[i + 1] == SITE_FRAMEWORK)
			i++;
		c->depth = i;
		return;
	}
	for (i = 0; i < n; i++)
		if (fr[i].python) {
			c->depth = i;
			return;
		}
	for (i = 0; i < n && cls[i] == SITE_CUDA; i++)
		;
	if (i < n && cls[i] == SITE_GLUE && !interpreter_rule(rule[i])) {
		while (i + 1 < n && cls[i + 1] == SITE_GLUE && !interpreter_rule(rule[i + 1]))
			i++;
		c->depth = i;
		return;
	}
	choose_raw(fr, n, c);
	c->fallback = !c->in_cuda;
}

static void choose(struct trace *t, const struct trace_frame *fr, int n, struct site_choice *c)
{
	const struct site_opts *o = t->site_opts;
	c->depth = 0;
	if (o && o->raw) {
		choose_raw(fr, n, c);
		return;
	}
	enum site_class *cls = xrealloc(NULL, (size_t)(n ? n : 1) * sizeof(*cls));
	int *rules = xrealloc(NULL, (size_t)(n ? n : 1) * sizeof(*rules));
	int user = -1, user_py = -1, focus = -1;
	for (int i = 0; i < n; i++) {
		int rule = rules[i] = site_rule_of(o, &fr[i], &cls[i]);
		if (rule == SITE_RULE_FOCUS && focus < 0)
			focus = i;
		if (cls[i] == SITE_USER && user < 0)
			user = i;
		if (cls[i] == SITE_USER && fr[i].python && user_py < 0)
			user_py = i;
	}
	if (focus >= 0) /* pprof's --focus: the stack goes through this frame */
		c->depth = focus;
	else if (user_py >= 0) /* a Python caller is preferred */
		c->depth = user_py;
	else if (user >= 0)
		c->depth = user;
	else
		choose_fallback(fr, cls, rules, n, c);
	free(cls);
	free(rules);
}

void site_choose(struct trace *t, uint64_t id, struct site_choice *out)
{
	struct site_cache *e = NULL;
	HASH_FIND(hh, t->site_cache, &id, sizeof(id), e);
	if (e) {
		*out = e->c;
		return;
	}
	struct trace_frame *fr = NULL;
	int n = trace_frames(t, id, &fr);
	struct site_choice c = {.depth = -1};
	if (n > 0)
		choose(t, fr, n, &c);
	free(fr);
	e = xcalloc(1, sizeof(*e));
	e->id = id;
	e->c = c;
	HASH_ADD(hh, t->site_cache, id, sizeof(e->id), e);
	*out = c;
}

/* ---- the static runtime's API ----------------------------------------- */

struct site_api_cache {
	UT_hash_handle hh;
	uint64_t key[2]; /* stack, api */
	uint32_t api;
};

/* How many frames past the driver the runtime's entry point may be: the
 * static runtime's own helpers (libcudart_static_<hash>) stand between. */
#define RUNTIME_REACH 6

static uint32_t api_named(const char *fn)
{
	for (uint32_t a = 0; fn && a <= GMT_API_MAX_; a++) {
		const struct api_info *i = api_lookup(a);
		if (i && strcmp(i->name, fn) == 0)
			return a;
	}
	return UINT32_MAX;
}

static uint32_t find_runtime_api(struct trace *t, uint64_t id, const struct api_info *drv)
{
	struct trace_frame f;
	int seen = 0;
	for (int d = 0; seen < RUNTIME_REACH && trace_frame(t, id, d, &f); d++) {
		if (!f.python && f.module && f.module->cuda)
			continue; /* the driver, the tracer */
		seen++;
		uint32_t a = api_named(f.function);
		const struct api_info *rt = a == UINT32_MAX ? NULL : api_lookup(a);
		if (rt && rt->op == drv->op)
			return a;
	}
	return UINT32_MAX;
}

uint32_t site_api(struct trace *t, uint64_t id, uint32_t api)
{
	const struct api_info *drv = api_lookup(api);
	/* every operation the runtime has an API for (alloc, free, pool trim):
	 * the same op named among the first frames past the driver */
	if (!id || !drv || strncmp(drv->name, "cuda", 4) == 0 ||
	    (t->site_opts && t->site_opts->raw))
		return api;
	uint64_t key[2] = {id, api};
	struct site_api_cache *e = NULL;
	HASH_FIND(hh, t->api_cache, key, sizeof(key), e);
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		memcpy(e->key, key, sizeof(key));
		uint32_t a = find_runtime_api(t, id, drv);
		e->api = a == UINT32_MAX ? api : a;
		HASH_ADD(hh, t->api_cache, key, sizeof(e->key), e);
	}
	return e->api;
}

/* ---- short names ------------------------------------------------------ */

static size_t put(char *out, size_t size, size_t o, const char *s, size_t n)
{
	for (size_t i = 0; i < n && o + 1 < size; i++)
		out[o++] = s[i];
	return o;
}

/* The index just past the bracket that closes the one at s[i]. */
static size_t skip_group(const char *s, size_t i)
{
	int depth = 0;
	for (; s[i]; i++) {
		if (s[i] == '<' || s[i] == '(' || s[i] == '[' || s[i] == '{')
			depth++;
		else if ((s[i] == '>' || s[i] == ')' || s[i] == ']' || s[i] == '}') && --depth == 0)
			return i + 1;
	}
	return i;
}

static bool after_operator(const char *out, size_t o)
{
	return o >= 8 && memcmp(out + o - 8, "operator", 8) == 0 &&
	       (o == 8 || out[o - 9] == ':' || out[o - 9] == ' ');
}

/* A template's arguments, g = "<...>" (n bytes): "<…>", but one function
 * given by address (a wrapper made per function, as PyTorch's
 * TypeError_to_NotImplemented_<&THPVariable___eq__> for `==`) keeps that
 * function's own name: the wrapper's name alone says nothing of which. */
static size_t fn_argument(const char *g, size_t n, char *out, size_t size, size_t o)
{
	size_t len = n >= 2 && g[n - 1] == '>' ? n - 2 : 0, k;
	const char *a = g + 1;
	if (len < 2 || a[0] != '&' || strcspn(a, "<>(), ") < len)
		return put(out, size, o, "<\xe2\x80\xa6>", 5);
	for (k = len; k > 1 && a[k - 1] != ':'; k--)
		;
	o = put(out, size, o, "<", 1);
	o = put(out, size, o, a + k, len - k);
	return put(out, size, o, ">", 1);
}

const char *site_short_name(const char *s, char *out, size_t size)
{
	static const char anon[] = "(anonymous namespace)";
	size_t o = 0, start = 0;
	for (size_t i = 0; s[i];) {
		if (strncmp(s + i, anon, sizeof(anon) - 1) == 0) {
			o = put(out, size, o, "(anon)", 6);
			i += sizeof(anon) - 1;
		} else if (after_operator(out, o) && s[i] != ' ') {
			/* operator(), operator<<, operator->: part of the name */
			size_t n = s[i] == '(' ? 2 : strcspn(s + i, "(");
			o = put(out, size, o, s + i, n);
			i += n;
		} else if (s[i] == '{') { /* {lambda(int)#1}: kept whole */
			size_t e = skip_group(s, i);
			o = put(out, size, o, s + i, e - i);
			i = e;
		} else if (s[i] == '<') {
			size_t e = skip_group(s, i);
			o = fn_argument(s + i, e - i, out, size, o);
			i = e;
		} else if (s[i] == '(') {
			i = skip_group(s, i); /* a parameter list */
			if (strncmp(s + i, "::", 2) != 0)
				break; /* " const", " [clone .constprop.0]" */
		} else if (s[i] == ' ') {
			start = o + 1; /* a return type ends here: "void f<…>" */
			o = put(out, size, o, " ", 1);
			i++;
		} else {
			o = put(out, size, o, s + i, 1);
			i++;
		}
	}
	out[o < size ? o : size - 1] = 0;
	if (start && start < o)
		memmove(out, out + start, o - start + 1);
	return out;
}

struct site_name {
	UT_hash_handle hh;
	const char *full; /* the symbol table's string: lives as long as t */
	char *shrt;
};

const char *site_short_cached(struct trace *t, const char *full)
{
	struct site_name *e = NULL;
	HASH_FIND_PTR(t->short_cache, &full, e);
	if (!e) {
		char buf[1024];
		e = xcalloc(1, sizeof(*e));
		e->full = full;
		e->shrt = xstrdup(site_short_name(full, buf, sizeof(buf)));
		HASH_ADD_PTR(t->short_cache, full, e);
	}
	return e->shrt;
}

void site_cache_free(struct trace *t)
{
	struct site_name *n, *nt;
	HASH_ITER(hh, t->short_cache, n, nt)
	{
		HASH_DEL(t->short_cache, n);
		free(n->shrt);
		free(n);
	}
	struct site_cache *c, *ct;
	HASH_ITER(hh, t->site_cache, c, ct)
	{
		HASH_DEL(t->site_cache, c);
		free(c);
	}
	struct site_api_cache *a, *at;
	HASH_ITER(hh, t->api_cache, a, at)
	{
		HASH_DEL(t->api_cache, a);
		free(a);
	}
}
