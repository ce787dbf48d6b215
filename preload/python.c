/* Python frames in native stacks.
 *
 * The CPython C API is found at run time (dlsym, RTLD_DEFAULT): we never
 * link libpython, and a process without Python pays one failed lookup.
 * Python 3.9+ only (PyThreadState_GetFrame and PyFrame_Get* appeared
 * there); older or incomplete APIs leave stacks native.
 *
 * Python objects are touched only when the thread holds the GIL, the
 * interpreter is initialized and not finalizing, and the thread has a
 * thread state. We never take the GIL (PyGILState_Ensure can block or end
 * the thread at shutdown). */
#include "preload/python.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "preload/tracer.h"

static int cache_oom;
#define HASH_NONFATAL_OOM      1
#define uthash_nonfatal_oom(e) (cache_oom = 1)
#include <uthash.h>

typedef void pyobj;

static struct {
	int (*is_initialized)(void);
	int (*is_finalizing)(void);
	int (*gil_check)(void);
	void *(*current_tstate)(void);
	pyobj *(*tstate_frame)(void *tstate);
	pyobj *(*frame_back)(pyobj *frame);
	pyobj *(*frame_code)(pyobj *frame);
	int (*frame_line)(pyobj *frame);
	void (*incref)(pyobj *o);
	void (*decref)(pyobj *o);
	pyobj *(*getattr)(pyobj *o, const char *name);
	const char *(*utf8)(pyobj *str);
	/* The pending exception, kept across our attribute reads: either pair. */
	void (*err_fetch)(pyobj **type, pyobj **value, pyobj **tb);
	void (*err_restore)(pyobj *type, pyobj *value, pyobj *tb);
	pyobj *(*err_get_raised)(void);
	void (*err_set_raised)(pyobj *exc);
	/* 3.10+: a frame object materialized for us (3.11+) must not run a
	 * collection, whose finalizers could re-enter the allocator we hook. */
	int (*gc_disable)(void);
	int (*gc_enable)(void);
	uintptr_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code */
} py;

enum { API_UNRESOLVED = 0, API_PRESENT, API_ABSENT };
static int api_state;
int gmt_python_absent; /* see python.h */
static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;

/* Code object -> its strings, and (code, line) -> PYFRAME id. Only GIL
 * holders get here, so the lock is uncontended unless sub-interpreters
 * with their own GILs (or a free-threaded build) race for it. */
struct code_entry {
	pyobj *code; /* a strong reference: its address is never reused */
	char *file, *function;
	UT_hash_handle hh;
};
struct line_key {
	pyobj *code;
	uint64_t line;
};
struct line_entry {
	struct line_key key;
	uint64_t id;
	UT_hash_handle hh;
};
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct code_entry *codes;
static struct line_entry *lines;
static uint64_t next_id = 1; /* 0 is GMT_PYFRAME_NONE */

static void *lookup(const char *name)
{
	return gmt_libc_dlsym(RTLD_DEFAULT, name);
}

static void *lookup_either(const char *name, const char *fallback)
{
	void *p = lookup(name);
	return p ? p : lookup(fallback);
}

static void cache_after_fork(void)
{
	/* The parent thread that held it is gone in the child. */
	pthread_mutex_init(&cache_lock, NULL);
}

static int resolve_api(void)
{
	py.is_initialized = (__typeof__(py.is_initialized))lookup("Py_IsInitialized");
	if (!py.is_initialized)
		return API_ABSENT;
	py.is_finalizing =
	    (__typeof__(py.is_finalizing))lookup_either("Py_IsFinalizing", "_Py_IsFinalizing");
	py.gil_check = (__typeof__(py.gil_check))lookup("PyGILState_Check");
	py.current_tstate = (__typeof__(py.current_tstate))lookup_either(
	    "PyThreadState_GetUnchecked", "_PyThreadState_UncheckedGet");
	py.tstate_frame = (__typeof__(py.tstate_frame))lookup("PyThreadState_GetFrame");
	py.frame_back = (__typeof__(py.frame_back))lookup("PyFrame_GetBack");
	py.frame_code = (__typeof__(py.frame_code))lookup("PyFrame_GetCode");
	py.frame_line = (__typeof__(py.frame_line))lookup("PyFrame_GetLineNumber");
	py.incref = (__typeof__(py.incref))lookup("Py_IncRef");
	py.decref = (__typeof__(py.decref))lookup("Py_DecRef");
	py.getattr = (__typeof__(py.getattr))lookup("PyObject_GetAttrString");
	py.utf8 = (__typeof__(py.utf8))lookup("PyUnicode_AsUTF8");
	py.err_fetch = (__typeof__(py.err_fetch))lookup("PyErr_Fetch");
	py.err_restore = (__typeof__(py.err_restore))lookup("PyErr_Restore");
	py.err_get_raised = (__typeof__(py.err_get_raised))lookup("PyErr_GetRaisedException");
	py.err_set_raised = (__typeof__(py.err_set_raised))lookup("PyErr_SetRaisedException");
	py.gc_disable = (__typeof__(py.gc_disable))lookup("PyGC_Disable");
	py.gc_enable = (__typeof__(py.gc_enable))lookup("PyGC_Enable");
	int errors_kept =
	    (py.err_fetch && py.err_restore) || (py.err_get_raised && py.err_set_raised);
	if (!py.is_finalizing || !py.gil_check || !py.current_tstate || !py.tstate_frame ||
	    !py.frame_back || !py.frame_code || !py.frame_line || !py.incref || !py.decref ||
	    !py.getattr || !py.utf8 || !errors_kept || !py.gc_disable != !py.gc_enable)
		return API_ABSENT; /* older than 3.9, or not CPython */

	void *eval = lookup("_PyEval_EvalFrameDefault");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
		py.eval_lo = (uintptr_t)eval;
		py.eval_hi = (uintptr_t)eval + sym->st_size;
	}
	pthread_atfork(NULL, NULL, cache_after_fork);
	return API_PRESENT;
}

static int python_present(void)
{
	/* Pairs with the release store below: PRESENT publishes the pointers. */
	int st = __atomic_load_n(&api_state, __ATOMIC_ACQUIRE);
	if (st != API_UNRESOLVED)
		return st == API_PRESENT;
	pthread_mutex_lock(&resolve_lock);
	st = __atomic_load_n(&api_state, __ATOMIC_ACQUIRE);
	if (st == API_UNRESOLVED) {
		st = resolve_api();
		/* Pairs with the acquire loads above. */
		__atomic_store_n(&api_state, st, __ATOMIC_RELEASE);
		__atomic_store_n(&gmt_python_absent, st == API_ABSENT, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&resolve_lock);
	return st == API_PRESENT;
}

static char *code_string(pyobj *code, const char *attr, const char *fallback_attr)
{
	pyobj *o = py.getattr(code, attr);
	if (!o && fallback_attr)
		o = py.getattr(code, fallback_attr);
	const char *s = o ? py.utf8(o) : NULL;
	char *copy = strdup(s ? s : "");
	if (o)
		py.decref(o);
	return copy;
}

/* The strings of a code object seen for the first time. Reading them may
 * raise (a lone surrogate in a file name): the program's pending
 * exception, if any, is kept aside and put back. */
static struct code_entry *new_code_entry(pyobj *code)
{
	struct code_entry *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	pyobj *type = NULL, *value = NULL, *tb = NULL, *raised = NULL;
	if (py.err_fetch && py.err_restore)
		py.err_fetch(&type, &value, &tb);
	else
		raised = py.err_get_raised();
	c->file = code_string(code, "co_filename", NULL);
	c->function = code_string(code, "co_qualname", "co_name"); /* co_qualname: 3.11+ */
	if (py.err_fetch && py.err_restore)
		py.err_restore(type, value, tb); /* also clears whatever we raised */
	else
		py.err_set_raised(raised);
	if (!c->file || !c->function) {
		free(c->file);
		free(c->function);
		free(c);
		return NULL;
	}
	py.incref(code);
	c->code = code;
	return c;
}

/* The PYFRAME id of (code, line), defined in the trace on first use, or 0
 * when memory ran out. Caller holds cache_lock. */
static uint64_t frame_id(pyobj *code, uint64_t line)
{
	struct line_key key = {code, line};
	struct line_entry *le;
	HASH_FIND(hh, lines, &key, sizeof key, le);
	if (le)
		return le->id;
	struct code_entry *c;
	HASH_FIND_PTR(codes, &code, c);
	if (!c) {
		if (!(c = new_code_entry(code)))
			return 0;
		cache_oom = 0;
		HASH_ADD_PTR(codes, code, c);
		if (cache_oom) {
			py.decref(code);
			free(c->file);
			free(c->function);
			free(c);
			return 0;
		}
	}
	if (!(le = calloc(1, sizeof *le)))
		return 0;
	le->key = key;
	le->id = next_id++;
	cache_oom = 0;
	HASH_ADD(hh, lines, key, sizeof key, le);
	if (cache_oom) {
		free(le);
		return 0;
	}
	/* Before the event that uses it, in the same ring. */
	gmt_record_pyframe(le->id, c->function, c->file, line);
	return le->id;
}

static unsigned mark_unavailable(uint64_t *ips, unsigned n, unsigned cap)
{
	if (n >= cap)
		n = cap - 1;
	ips[n++] = GMT_PYFRAME_IP(GMT_PYFRAME_NONE);
	return n;
}

unsigned gmt_python_splice(uint64_t *ips, unsigned n, unsigned cap)
{
	if (cap == 0 || !python_present() || !py.is_initialized() || py.is_finalizing())
		return n;
	void *tstate = py.gil_check() ? py.current_tstate() : NULL;
	if (!tstate)
		return mark_unavailable(ips, n, cap);
	pyobj *frame = py.tstate_frame(tstate);
	if (!frame)
		return n; /* holds the GIL but runs no Python code */

	/* Python frames replace the innermost interpreter frame and all that is
	 * outer to it (docs/design.md says why). */
	unsigned keep = n;
	for (unsigned i = 0; i < n && py.eval_hi; i++) {
		if (ips[i] >= py.eval_lo && ips[i] < py.eval_hi) {
			keep = i;
			break;
		}
	}
	if (keep >= cap)
		keep = cap - 1;

	int gc_was_on = py.gc_disable ? py.gc_disable() : 0;
	unsigned out = keep;
	pthread_mutex_lock(&cache_lock);
	while (frame && out < cap) {
		pyobj *code = py.frame_code(frame);
		int line = py.frame_line(frame);
		uint64_t id = code ? frame_id(code, line > 0 ? (uint64_t)line : 0) : 0;
		if (code)
			py.decref(code);
		if (!id)
			break;
		ips[out++] = GMT_PYFRAME_IP(id);
		pyobj *back = py.frame_back(frame);
		py.decref(frame);
		frame = back;
	}
	pthread_mutex_unlock(&cache_lock);
	if (frame)
		py.decref(frame);
	if (gc_was_on)
		py.gc_enable();
	/* No frame could be named (memory ran out): the native stack stays. */
	return out > keep ? out : n;
}
