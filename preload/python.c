/* Python frames in native stacks, read without the GIL.
 *
 * The thread that allocates is blocked in C code, and only it pushes and
 * pops its frames: its frame chain holds still while we read it, whether
 * or not it holds the GIL (PyTorch and ctypes.CDLL release it). So we read
 * CPython's structures as a debugger would (python-layouts.c has where
 * they sit, per version), with plain memory reads: no reference counts, no
 * C API that needs the GIL, never the GIL itself.
 *
 * Every read is checked: a pointer is read directly only inside a 4 KiB
 * page an earlier read proved mapped; any other read goes through
 * process_vm_readv on ourselves, which fails cleanly on a bad address. A
 * code object must have PyCode_Type as its type, names PyUnicode_Type and
 * line tables PyBytes_Type. */
#include "preload/python.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload/python-layouts.h"
#include "preload/real.h"
#include "preload/settings.h"
#include "preload/tracer.h"

#define NO_ASAN __attribute__((no_sanitize("address")))

static struct {
	const struct gmt_py_layout *l;
	int (*is_initialized)(void);
	int (*is_finalizing)(void);
	void *(*this_tstate)(void); /* PyGILState_GetThisThreadState: a TSS read */
	uintptr_t code_type, str_type, bytes_type;
	uintptr_t eval_lo, eval_hi;	/* _PyEval_EvalFrameDefault */
	uintptr_t interp_lo, interp_hi; /* the module that holds the interpreter */
} py;

enum { API_UNRESOLVED = 0, API_PRESENT, API_ABSENT };
static int api_state;
int gmt_python_absent; /* see python.h */
static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- checked reads ------------------------------------------------------ */

/* Pages known mapped: 4-way sets of page number + 1 (0 is empty), so
 * that a few hot pages mapping to one set do not evict each other. */
/* MAX_WALK: frames passed over (shims) count too, so a loop ends. */
enum { KNOWN_SETS_BITS = 10, KNOWN_WAYS = 4, MAX_STR = 1024, MAX_TABLE = 1 << 20, MAX_WALK = 4096 };
static uint64_t known_pages[1u << KNOWN_SETS_BITS][KNOWN_WAYS] __attribute__((aligned(64)));

static inline uint64_t *known_set(uint64_t page)
{
	return known_pages[(page * 0x9e3779b97f4a7c15ull) >> (64 - KNOWN_SETS_BITS)];
}

static inline int page_known(uintptr_t addr)
{
	uint64_t page = addr >> 12, *set = known_set(page);
	for (int w = 0; w < KNOWN_WAYS; w++)
		if (__atomic_load_n(&set[w], __ATOMIC_RELAXED) == page + 1)
			return 1;
	return 0;
}

static void page_remember(uintptr_t addr)
{
	uint64_t page = addr >> 12, *set = known_set(page);
	int victim = (int)(page % KNOWN_WAYS);
	for (int w = 0; w < KNOWN_WAYS; w++) {
		uint64_t v = __atomic_load_n(&set[w], __ATOMIC_RELAXED);
		if (v == page + 1)
			return;
		if (!v)
			victim = w;
	}
	__atomic_store_n(&set[victim], page + 1, __ATOMIC_RELAXED);
}

static inline int pages_known(uintptr_t addr, size_t n)
{
	uintptr_t last = addr + n - 1;
	if (!page_known(addr) || ((last ^ addr) >> 12 && !page_known(last)))
		return 0;
	for (uintptr_t p = (addr | 4095) + 1; p < last; p += 4096) /* long reads only */
		if (!page_known(p))
			return 0;
	return 1;
}

static int plausible(uintptr_t addr, size_t n)
{
	return addr >= 4096 && addr < 0x800000000000ull && n < 0x800000000000ull - addr;
}

/* Copies n bytes at addr into dst; 0 when they are not all readable. */
static NO_ASAN int checked_read(void *dst, uintptr_t addr, size_t n)
{
	if (!plausible(addr, n))
		return 0;
	if (pages_known(addr, n)) {
		memcpy(dst, (const void *)addr, n);
		return 1;
	}
	struct iovec local = {dst, n}, remote = {(void *)addr, n};
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)n)
		return 0;
	for (uintptr_t p = addr & ~(uintptr_t)4095; p < addr + n; p += 4096)
		page_remember(p);
	return 1;
}

/* The n bytes at addr: the memory itself when known mapped, else a checked
 * copy in buf; NULL when unreadable. */
static inline const unsigned char *view(uintptr_t addr, size_t n, unsigned char *buf)
{
	if (plausible(addr, n) && pages_known(addr, n))
		return (const unsigned char *)addr;
	return checked_read(buf, addr, n) ? buf : NULL;
}

static NO_ASAN inline uintptr_t ptr_at(const unsigned char *p, int off)
{
	uintptr_t v;
	memcpy(&v, p + off, sizeof v);
	return v;
}

static NO_ASAN inline int int_at(const unsigned char *p, int off)
{
	int v;
	memcpy(&v, p + off, sizeof v);
	return v;
}

static int read_ptr(uintptr_t addr, uintptr_t *out)
{
	return checked_read(out, addr, sizeof *out);
}

/* ---- strings and line tables (on a cache miss only) --------------------- */

static void put_utf8(char *out, size_t *o, uint32_t c)
{
	if (c < 0x80) {
		out[(*o)++] = (char)c;
	} else if (c < 0x800) {
		out[(*o)++] = (char)(0xc0 | (c >> 6));
		out[(*o)++] = (char)(0x80 | (c & 63));
	} else if (c < 0x10000) {
		out[(*o)++] = (char)(0xe0 | (c >> 12));
		out[(*o)++] = (char)(0x80 | ((c >> 6) & 63));
		out[(*o)++] = (char)(0x80 | (c & 63));
	} else {
		out[(*o)++] = (char)(0xf0 | (c >> 18));
		out[(*o)++] = (char)(0x80 | ((c >> 12) & 63));
		out[(*o)++] = (char)(0x80 | ((c >> 6) & 63));
		out[(*o)++] = (char)(0x80 | (c & 63));
	}
}

/* A str object as UTF-8 in out (4 * MAX_STR + 1 bytes), cut at MAX_STR
 * characters. Compact strings only: every code object's are. */
static int read_str(uintptr_t s, char *out)
{
	unsigned char hdr[40];
	if (!checked_read(hdr, s, sizeof hdr) || ptr_at(hdr, 8) != py.str_type)
		return 0;
	uint64_t len;
	uint32_t state;
	memcpy(&len, hdr + 16, sizeof len);
	memcpy(&state, hdr + 32, sizeof state);
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
		return 0;
	if (len > MAX_STR)
		len = MAX_STR;
	int at = ascii ? py.l->str_ascii_data : py.l->str_compact_data;
	unsigned char raw[4 * MAX_STR];
	if (!checked_read(raw, s + (uintptr_t)at, len * kind))
		return 0;
	size_t o = 0;
	for (uint64_t i = 0; i < len; i++) {
		uint32_t c = kind == 1	 ? raw[i]
			     : kind == 2 ? ((uint16_t *)raw)[i]
					 : ((uint32_t *)raw)[i];
		put_utf8(out, &o, c > 0x10ffff ? 0xfffd : c);
	}
	out[o] = 0;
	return 1;
}

/* The line of byte offset addr in code's line table (a bytes object). */
static int read_line(uintptr_t table, int firstlineno, long addr)
{
	if (addr < 0)
		return firstlineno;
	unsigned char hdr[32];
	uint64_t n;
	if (!checked_read(hdr, table, sizeof hdr) || ptr_at(hdr, 8) != py.bytes_type)
		return 0;
	memcpy(&n, hdr + 16, sizeof n);
	if (n > MAX_TABLE)
		return 0;
	unsigned char *t = malloc(n ? n : 1);
	int line = 0;
	if (t && checked_read(t, table + 32, n))
		line = gmt_py_line(py.l->lines, t, n, firstlineno, addr);
	free(t);
	return line;
}

/* ---- caches ------------------------------------------------------------- */

/* (code object, instruction) -> PYFRAME id. A hit is checked against the
 * code object as it is now: its name, file and line table objects and its
 * first line, so a code object freed and another made at its address is
 * a miss. Open addressing, grown at half full. */
struct site {
	uintptr_t code, file, name, table;
	long addr;
	int firstlineno;
	uint64_t id;
};

/* (function, file, line) -> PYFRAME id: each is defined once. */
struct named {
	uint64_t hash, line, id;
	char *function, *file;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct site *sites;
static size_t nsites, sites_cap;
static struct named *names;
static size_t nnames, names_cap;
static uint64_t next_id = 1; /* 0 is GMT_PYFRAME_NONE, which old traces use */
static uint64_t no_python_id;

static inline size_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
	return (size_t)(h ^ (h >> 29));
}

static int grow_sites(void)
{
	size_t cap = sites_cap ? sites_cap * 2 : 4096;
	struct site *t = calloc(cap, sizeof *t);
	if (!t)
		return 0;
	for (size_t i = 0; i < sites_cap; i++) {
		if (!sites[i].code)
			continue;
		size_t j = mix(sites[i].code, (uint64_t)sites[i].addr) & (cap - 1);
		while (t[j].code)
			j = (j + 1) & (cap - 1);
		t[j] = sites[i];
	}
	free(sites);
	sites = t;
	sites_cap = cap;
	return 1;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The id of (function, file, line), defined in the trace on first use. */
static uint64_t named_id(const char *function, const char *file, uint64_t line)
{
	if (nnames * 2 >= names_cap) {
		size_t cap = names_cap ? names_cap * 2 : 1024;
		struct named *t = calloc(cap, sizeof *t);
		if (!t)
			return 0;
		for (size_t i = 0; i < names_cap; i++) {
			size_t j = names[i].id ? names[i].hash & (cap - 1) : 0;
			for (; names[i].id && t[j].id; j = (j + 1) & (cap - 1))
				;
			if (names[i].id)
				t[j] = names[i];
		}
		free(names);
		names = t;
		names_cap = cap;
	}
	uint64_t h = hash_str(hash_str(0xcbf29ce484222325ull ^ line, function), file);
	size_t j = h & (names_cap - 1);
	for (; names[j].id; j = (j + 1) & (names_cap - 1))
		if (names[j].hash == h && names[j].line == line &&
		    !strcmp(names[j].function, function) && !strcmp(names[j].file, file))
			return names[j].id;
	char *f = strdup(function), *p = strdup(file);
	if (!f || !p) {
		free(f);
		free(p);
		return 0;
	}
	names[j] = (struct named){h, line, next_id++, f, p};
	nnames++;
	/* Before the event that uses it, in the same ring. */
	gmt_record_pyframe(names[j].id, function, file, line);
	return names[j].id;
}

/* The PYFRAME id of a frame named by someone else (a framework's own
 * history: preload/fwhist.c), shared with the frames read here. */
uint64_t gmt_python_name_id(const char *function, const char *file, uint64_t line)
{
	pthread_mutex_lock(&cache_lock);
	uint64_t id = named_id(function ? function : "", file ? file : "", line);
	pthread_mutex_unlock(&cache_lock);
	return id;
}

/* What a code object says of itself, read on each frame. */
struct code_view {
	uintptr_t code, file, name, table;
	int firstlineno;
};

static uint64_t site_miss(const struct code_view *c, long addr, size_t slot)
{
	static char function[4 * MAX_STR + 1], file[4 * MAX_STR + 1]; /* under cache_lock */
	if (!read_str(c->name, function) || !read_str(c->file, file))
		return 0;
	int line = read_line(c->table, c->firstlineno, addr);
	uint64_t id = named_id(function, file, line > 0 ? (uint64_t)line : 0);
	if (!id)
		return 0;
	struct site *s = &sites[slot];
	if (!s->code)
		nsites++;
	*s = (struct site){c->code, c->file, c->name, c->table, addr, c->firstlineno, id};
	return id;
}

/* The PYFRAME id of the instruction at byte offset addr of c. Caller holds
 * cache_lock. */
static uint64_t site_id(const struct code_view *c, long addr)
{
	if (nsites * 2 >= sites_cap && !grow_sites())
		return 0;
	size_t mask = sites_cap - 1, j = mix(c->code, (uint64_t)addr) & mask;
	for (; sites[j].code; j = (j + 1) & mask) {
		const struct site *s = &sites[j];
		if (s->code != c->code || s->addr != addr)
			continue;
		if (s->file == c->file && s->name == c->name && s->table == c->table &&
		    s->firstlineno == c->firstlineno)
			return s->id;
		return site_miss(c, addr, j); /* another code object at that address */
	}
	return site_miss(c, addr, j);
}

static uint64_t no_python_frame(void)
{
	if (!no_python_id)
		no_python_id = named_id("[thread runs no Python]", "", 0);
	return no_python_id;
}

/* A child of fork writes a trace of its own: every frame is defined anew.
 * The tables keep their size. */
static void caches_clear(void)
{
	for (size_t i = 0; i < names_cap; i++) {
		free(names[i].function);
		free(names[i].file);
	}
	if (names)
		memset(names, 0, names_cap * sizeof *names);
	if (sites)
		memset(sites, 0, sites_cap * sizeof *sites);
	nnames = nsites = 0;
	no_python_id = 0;
}

static void cache_after_fork(void)
{
	/* The parent thread that held it is gone in the child. */
	pthread_mutex_init(&cache_lock, NULL);
	caches_clear();
}

void gmt_python_cache_reset(int pages)
{
	pthread_mutex_lock(&cache_lock);
	caches_clear();
	if (pages)
		memset(known_pages, 0, sizeof known_pages);
	pthread_mutex_unlock(&cache_lock);
}

/* ---- walking the thread's frames ---------------------------------------- */

struct pyframe {
	uint64_t id;
	int entry; /* the outermost frame one C call into the interpreter runs */
};

enum walk {
	WALK_OK,
	WALK_NONE, /* the thread runs no Python */
	WALK_CUT,  /* a frame could not be read: the inner ones only */
	WALK_BAD,
};

static int innermost_frame(uintptr_t tstate, uintptr_t *frame)
{
	const struct gmt_py_layout *l = py.l;
	if (!read_ptr(tstate + (uintptr_t)l->ts_frame, frame))
		return 0;
	if (l->cframe_frame >= 0 && *frame)
		return read_ptr(*frame + (uintptr_t)l->cframe_frame, frame);
	return 1;
}

/* The byte offset of the frame's instruction; negative before its first. */
static long frame_addr(const unsigned char *f, uintptr_t code)
{
	const struct gmt_py_layout *l = py.l;
	switch (l->instr) {
	case GMT_PY_LASTI_BYTES:
		return int_at(f, l->f_instr);
	case GMT_PY_LASTI_UNITS: {
		int lasti = int_at(f, l->f_instr);
		return lasti < 0 ? -1 : 2L * lasti;
	}
	case GMT_PY_INSTR_PTR:
		return (long)(ptr_at(f, l->f_instr) - (code + (uintptr_t)l->co_code));
	}
	return -1;
}

/* Reads code's fields into c; 0 when it is not a code object. */
static NO_ASAN int read_code(uintptr_t code, struct code_view *c, int *firsttraceable)
{
	const struct gmt_py_layout *l = py.l;
	unsigned char buf[512];
	if (code & 7)
		return 0;
	const unsigned char *p = view(code, (size_t)l->co_span, buf);
	if (!p || ptr_at(p, 8) != py.code_type)
		return 0;
	c->code = code;
	c->file = ptr_at(p, l->co_filename);
	c->name = ptr_at(p, l->co_name);
	c->table = ptr_at(p, l->co_linetable);
	c->firstlineno = int_at(p, l->co_firstlineno);
	*firsttraceable = l->co_firsttraceable >= 0 ? int_at(p, l->co_firsttraceable) : 0;
	return 1;
}

/* The thread's Python frames, innermost first, into out[0..*n). Caller
 * holds cache_lock. */
static NO_ASAN enum walk walk(uintptr_t tstate, struct pyframe *out, unsigned cap, unsigned *n)
{
	const struct gmt_py_layout *l = py.l;
	uintptr_t frame;
	*n = 0;
	if (!innermost_frame(tstate, &frame))
		return WALK_BAD;
	if (!frame)
		return WALK_NONE;
	unsigned char buf[512];
	/* The last frame's page, read directly: frames share pages. No page
	 * number is all ones, so it starts as none. */
	uintptr_t page = ~(uintptr_t)0;
	for (unsigned steps = 0; frame && *n < cap; steps++) {
		const unsigned char *f = (const unsigned char *)frame;
		if ((frame >> 12) != page || ((frame + (size_t)l->f_span - 1) >> 12) != page ||
		    (frame & 7)) {
			f = (frame & 7) || steps > MAX_WALK ? NULL
							    : view(frame, (size_t)l->f_span, buf);
			if (!f)
				return *n ? WALK_CUT : WALK_BAD;
			page = f == (const unsigned char *)frame ? frame >> 12 : ~(uintptr_t)0;
		} else if (steps > MAX_WALK) {
			return WALK_CUT;
		}
		uintptr_t code = ptr_at(f, l->f_code) & ~l->code_tag_mask;
		int owner = l->f_owner >= 0 ? f[l->f_owner] : -1;
		frame = ptr_at(f, l->f_previous);
		if (owner >= 0 && owner == l->owner_cstack) {
			if (*n) /* the frame this C call into the interpreter began with */
				out[*n - 1].entry = 1;
			continue;
		}
		if (l->owner_not_code >= 0 && owner >= l->owner_not_code)
			continue;
		struct code_view c;
		int firsttraceable;
		if (!read_code(code, &c, &firsttraceable)) {
			if (l->minor >= 13) /* f_executable may be None or a function */
				continue;
			return *n ? WALK_CUT : WALK_BAD;
		}
		long addr = frame_addr(f, code);
		/* Not started yet (CPython's _PyFrame_IsIncomplete): no line of
		 * its own, such as 3.13's __init__ clean-up shim. */
		if (l->co_firsttraceable >= 0 && owner != l->owner_generator &&
		    addr < 2L * firsttraceable)
			continue;
		uint64_t id = site_id(&c, addr);
		if (!id)
			return *n ? WALK_CUT : WALK_BAD;
		int entry = l->f_is_entry >= 0 ? f[l->f_is_entry] != 0 : l->minor < 11;
		out[(*n)++] = (struct pyframe){id, entry};
	}
	return WALK_OK;
}

/* ---- finding the interpreter -------------------------------------------- */

static void *lookup(const char *name)
{
	return gmt_libc_dlsym(RTLD_DEFAULT, name);
}

static void *lookup_either(const char *name, const char *fallback)
{
	void *p = lookup(name);
	return p ? p : lookup(fallback);
}

struct module_range {
	uintptr_t inside, lo, hi;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct module_range *m = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int found = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
		found |= m->inside >= a && m->inside < b;
	}
	if (found) {
		m->lo = lo;
		m->hi = hi;
	}
	return found;
}

/* The interpreter's minor version (3.x), -1 when it is not 3.x, -2 when
 * it cannot be told. */
static int python_minor(char *version, size_t len)
{
	const unsigned long *hexp = lookup("Py_Version"); /* 3.11+ */
	unsigned long hex;
	if (hexp && checked_read(&hex, (uintptr_t)hexp, sizeof hex)) {
		snprintf(version, len, "%lu.%lu", hex >> 24, (hex >> 16) & 0xff);
		return (hex >> 24) == 3 ? (int)((hex >> 16) & 0xff) : -1;
	}
	const char *(*get_version)(void) = (const char *(*)(void))lookup("Py_GetVersion");
	int major, minor;
	const char *s = get_version ? get_version() : NULL; /* a static buffer: no GIL */
	if (!s || sscanf(s, "%d.%d", &major, &minor) != 2)
		return -2;
	snprintf(version, len, "%d.%d", major, minor);
	return major == 3 ? minor : -1;
}

static void note_native(const char *why)
{
	char text[256];
	snprintf(text, sizeof text, "%s; stacks stay native (no Python frames)", why);
	gmt_note(1, text);
}

static int resolve_api(void)
{
	py.is_initialized = (int (*)(void))lookup("Py_IsInitialized");
	if (!py.is_initialized)
		return API_ABSENT; /* no Python in this process */
	char version[32], why[200];
	int minor = python_minor(version, sizeof version);
	int probe = 0;
	if (!checked_read(&probe, (uintptr_t)&api_state, sizeof probe)) {
		note_native("Python frames need process_vm_readv on ourselves, which is refused "
			    "here");
		return API_ABSENT;
	}
	if (minor < 0) {
		snprintf(why, sizeof why, "Python %s: gpumemtrace reads frames of 3.9 to 3.14",
			 minor == -1 ? version : "(version unknown)");
		note_native(why);
		return API_ABSENT;
	}
	py.l = gmt_py_layout_for(minor, (uintptr_t)lookup("_PyRuntime"), checked_read, why,
				 sizeof why);
	py.is_finalizing = (int (*)(void))lookup_either("Py_IsFinalizing", "_Py_IsFinalizing");
	py.this_tstate = (void *(*)(void))lookup("PyGILState_GetThisThreadState");
	py.code_type = (uintptr_t)lookup("PyCode_Type");
	py.str_type = (uintptr_t)lookup("PyUnicode_Type");
	py.bytes_type = (uintptr_t)lookup("PyBytes_Type");
	if (!py.l || !py.is_finalizing || !py.this_tstate || !py.code_type || !py.str_type ||
	    !py.bytes_type) {
		if (py.l)
			snprintf(why, sizeof why, "Python %s: part of its C API was not found",
				 version);
		note_native(why);
		return API_ABSENT;
	}
	void *eval = lookup("_PyEval_EvalFrameDefault");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
		py.eval_lo = (uintptr_t)eval;
		py.eval_hi = (uintptr_t)eval + sym->st_size;
	}
	struct module_range m = {(uintptr_t)py.is_initialized, 0, 0};
	if (dl_iterate_phdr(find_module, &m)) {
		py.interp_lo = m.lo;
		py.interp_hi = m.hi;
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

/* ---- splicing ----------------------------------------------------------- */

static inline int in_interp(uint64_t ip)
{
	return ip >= py.interp_lo && ip < py.interp_hi;
}

/* Memray's "hybrid" rule: each native evaluation frame stands for the
 * Python frames up to the next entry frame, and the interpreter's other
 * frames go. Native frames between (a C extension calling back into
 * Python) stay where they are; those outer to the last Python frame are
 * start-up code (Py_RunMain, main, a thread's start) and go too. Without
 * an evaluation frame in the stack (cut at its depth) the Python frames
 * follow the native ones. */
static unsigned splice(uint64_t *ips, unsigned n, unsigned cap, const struct pyframe *pf,
		       unsigned np)
{
	uint64_t out[GMT_MAX_STACK_DEPTH];
	unsigned o = 0, p = 0;
	int seen = 0, in_segment = 0;
	if (cap > GMT_MAX_STACK_DEPTH)
		cap = GMT_MAX_STACK_DEPTH;
	for (unsigned i = 0; i < n && o < cap; i++) {
		if (!in_interp(ips[i])) {
			if (seen && p == np)
				break;
			in_segment = 0;
			out[o++] = ips[i];
			continue;
		}
		/* Without the evaluation function's size (a build without its
		 * symbol, 3.14's tail-calling one), each run of interpreter
		 * frames stands for one entry. */
		int eval = py.eval_hi ? ips[i] >= py.eval_lo && ips[i] < py.eval_hi : !in_segment;
		in_segment = seen = 1;
		while (eval && p < np && o < cap) {
			out[o++] = GMT_PYFRAME_IP(pf[p].id);
			if (pf[p++].entry)
				break;
		}
	}
	while (p < np && o < cap)
		out[o++] = GMT_PYFRAME_IP(pf[p++].id);
	memcpy(ips, out, o * sizeof *ips);
	return o;
}

static void note_unread(void)
{
	static int noted;
	if (!__atomic_exchange_n(&noted, 1, __ATOMIC_RELAXED))
		gmt_note(1, "Python frames: a frame could not be read; stacks from it on "
			    "stay native");
}

unsigned gmt_python_splice(uint64_t *ips, unsigned n, unsigned cap)
{
	if (cap == 0 || !python_present() || !py.is_initialized() || py.is_finalizing())
		return n;
	uintptr_t tstate = (uintptr_t)py.this_tstate();
	struct pyframe pf[GMT_MAX_STACK_DEPTH];
	unsigned np = 0;
	if (cap > GMT_MAX_STACK_DEPTH)
		cap = GMT_MAX_STACK_DEPTH;
	pthread_mutex_lock(&cache_lock);
	enum walk w = tstate ? walk(tstate, pf, cap, &np) : WALK_NONE;
	uint64_t none = w == WALK_NONE ? no_python_frame() : 0;
	pthread_mutex_unlock(&cache_lock);
	switch (w) {
	case WALK_BAD:
		note_unread();
		return n;
	case WALK_NONE:
		if (!none)
			return n;
		if (n >= cap)
			n = cap - 1;
		ips[n++] = GMT_PYFRAME_IP(none);
		return n;
	case WALK_CUT:
		note_unread();
		break;
	case WALK_OK:
		break;
	}
	return splice(ips, n, cap, pf, np);
}
