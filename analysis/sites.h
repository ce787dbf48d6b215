/* Which frame of a stack is the allocation site: the first frame of the
 * user's code, innermost out, past the frameworks, the CUDA runtime and
 * driver, ctypes and the interpreter. The built-in rules are one table
 * (site_rule_list: the framework table and a few of its own,
 * generated into docs/reports.md); --hide and --focus add the
 * user's own (struct site_opts); --raw-sites keeps the innermost frame
 * outside the CUDA libraries, as before the rules.
 *
 * Also here: the runtime API a driver call made from inside the static
 * CUDA runtime stands for (site_api), and short C++ names for tables. */
#ifndef GMT_ANALYSIS_SITES_H
#define GMT_ANALYSIS_SITES_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trace;
struct trace_frame;

/* What a rule says of the frames it matches. */
enum site_class {
	SITE_USER,	/* no rule: the user's code */
	SITE_CUDA,	/* the CUDA runtime, driver, the tracer */
	SITE_FRAMEWORK, /* a framework or CUDA library (may hold the fallback site) */
	SITE_GLUE,	/* interpreter, ctypes/libffi, bindings, libc, thread start */
	SITE_PYPKG	/* a Python frame in an installed package or the stdlib */
};

/* How a rule matches a frame. */
enum site_match {
	SM_MODULE,	/* glob on the module's file name ("libtorch*") */
	SM_PATH,	/* glob on the module's path ("site-packages" globs) */
	SM_SYMBOL,	/* glob on the native function name */
	SM_RUNTIME_API, /* a function named as a CUDA runtime API (cudaMalloc) */
	SM_PYFILE,	/* glob on a Python frame's file */
	SM_NOPYTHON	/* the "Python frames unavailable" frame */
};

struct site_rule {
	const char *name; /* "pytorch", "cuda-runtime-static": JSON's skipped_by */
	enum site_match match;
	const char *pattern;
	enum site_class cls;
};

/* The built-in rules, first match wins (*n of them): made once from the
 * framework table and sites.c's own. */
const struct site_rule *site_rule_list(size_t *n);

/* The rule index of a frame: >= 0 into site_rules, or one of these. */
enum { SITE_RULE_NONE = -1, SITE_RULE_HIDE = -2, SITE_RULE_FOCUS = -3 };

/* The user's choices (the report commands' --hide, --focus, --raw-sites,
 * --full-names). Zeroed: the built-in rules, short names in tables. */
struct site_opts {
	bool raw, full_names;
	regex_t *hide, *focus;
	size_t nhide, nfocus;
	const char **src; /* the expressions, hide's then focus' */
	size_t *hits;	  /* the frames each matched (site_rule_of counts) */
};

/* Compiles the --hide and --focus expressions (POSIX extended, matched
 * against a frame's function, file and module path). NULL, or the error
 * text of the first bad one in err. */
const char *site_opts_init(struct site_opts *o, const char *const *hide, size_t nhide,
			   const char *const *focus, size_t nfocus, char *err, size_t errsize);
void site_opts_free(struct site_opts *o);
/* The i-th --hide or --focus expression that matched no frame, from i on
 * (*focus says which); NULL past the last. */
const char *site_opts_unmatched(const struct site_opts *o, size_t *i, bool *focus);

/* The rule a resolved frame falls under (SITE_RULE_*), and its class. */
int site_rule_of(const struct site_opts *o, const struct trace_frame *f, enum site_class *cls);
/* The rule's name ("--hide", "--focus" for the user's). */
const char *site_rule_name(int rule);

/* Whether f is one of the interpreter's own native frames (the rules
 * "python" and "libpython": _PyEval_*, python3.12+0x...), which stacks
 * shown whole (flamegraph, pprof) leave out. Python frames never are. */
bool site_is_interpreter(const struct trace_frame *f);

/* The choice for one stack. */
struct site_choice {
	int depth;     /* of the site frame; -1: no frame */
	bool fallback; /* no frame of the user's code: the framework's entry */
	bool in_cuda;  /* every frame is in the CUDA libraries */
};
/* Chooses the site of stack `id` under t->site_opts (cached per stack). */
void site_choose(struct trace *t, uint64_t id, struct site_choice *out);

/* The API a call stands for: a driver call (allocation, free, pool trim...)
 * made from inside the static CUDA runtime (a frame named as the runtime API of the same
 * operation among the first frames outside the driver) counts as that
 * runtime API, as the shared runtime records it. Else `api`. */
uint32_t site_api(struct trace *t, uint64_t id, uint32_t api);

/* A C++ name for tables: no parameter lists, template arguments as <…>,
 * "(anonymous namespace)" as "(anon)", no return type. Into out. */
const char *site_short_name(const char *name, char *out, size_t size);

/* The same, kept with the trace (full: a string that lives as long as t). */
const char *site_short_cached(struct trace *t, const char *full);

/* Frees the trace's caches (trace_close). */
void site_cache_free(struct trace *t);

#endif
