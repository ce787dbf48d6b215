/* Naming in time proportional to distinct addresses (symbolize.h): one
 * sorted symbol table per module, one sorted table of outermost inlined
 * call sites per compile unit, libdw's line tables (read once per compile
 * unit and searched by address), and a memo of every answer. libdwfl finds
 * the files and the load bias; its own lookups (a linear symbol-table scan,
 * a walk of the compile unit's scopes) are not used. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/symbolize-int.h"

enum {
	MEMO_NAMED = 1, /* the function was found */
	MEMO_CUT = 2,	/* not looked up: the deadline had passed */
	BACK_SCAN = 64, /* symbols looked at below an address for one containing it */
	INL_DEPTH = 64, /* DIE nesting walked for inlined call sites */
};

struct gmt_symbolizer *gmt_symbolizer_new(void)
{
	elf_version(EV_CURRENT);
	return calloc(1, sizeof(struct gmt_symbolizer));
}

static void mod_free(struct sym_mod *m)
{
	if (m->dwfl)
		dwfl_end(m->dwfl); /* closes the files */
	for (size_t i = 0; i < m->cus_cap; i++)
		free(m->cus[i].v);
	free(m->cus);
	free(m->fns);
	free(m->maxend);
	free(m->path);
	free(m->found_at);
	free(m->build_id);
}

void gmt_symbolizer_free(struct gmt_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++)
		mod_free(&s->mods[i]);
	free(s->mods);
	free(s->order);
	free(s->order_maxend);
	free(s->memo);
	for (size_t i = 0; i < s->ndirs; i++)
		free(s->dirs[i]);
	free(s->dirs);
	for (size_t i = 0; i < s->nfound; i++) {
		free(s->found[i].id);
		free(s->found[i].path);
	}
	free(s->found);
	free(s);
}

int gmt_symbolizer_set_path(struct gmt_symbolizer *s, const char *dirs)
{
	for (const char *p = dirs; p && *p;) {
		size_t n = strcspn(p, ":");
		if (n) {
			char **v = realloc(s->dirs, (s->ndirs + 1) * sizeof(*v));
			if (!v)
				return -1;
			s->dirs = v;
			if (!(v[s->ndirs] = strndup(p, n)))
				return -1;
			s->ndirs++;
		}
		p += n + (p[n] == ':');
	}
	return 0;
}

void gmt_symbolizer_set_deadline(struct gmt_symbolizer *s, uint64_t deadline_ns)
{
	if (s)
		s->deadline_ns = deadline_ns;
}

int gmt_symbolizer_add_module(struct gmt_symbolizer *s, const char *path, uint64_t load_bias,
			      uint64_t start, uint64_t end, const uint8_t *build_id,
			      unsigned build_id_len)
{
	if (!s || !path)
		return -1;
	if (s->nmods == s->mods_cap) {
		size_t cap = s->mods_cap ? 2 * s->mods_cap : 64;
		struct sym_mod *v = realloc(s->mods, cap * sizeof(*v));
		if (!v)
			return -1;
		s->mods = v;
		s->mods_cap = cap;
	}
	struct sym_mod *m = &s->mods[s->nmods];
	memset(m, 0, sizeof(*m));
	m->path = strdup(path);
	if (build_id && build_id_len) {
		m->build_id = malloc(build_id_len);
		if (m->build_id)
			memcpy(m->build_id, build_id, build_id_len);
		m->build_id_len = build_id_len;
	}
	if (!m->path || (build_id_len && build_id && !m->build_id)) {
		free(m->path);
		free(m->build_id);
		return -1;
	}
	m->bias = load_bias;
	m->start = start;
	m->end = end;
	s->nmods++;
	s->order_dirty = true;
	return 0;
}

/* ---- modules by address ---- */

static int by_start(const void *a, const void *b, void *ctx)
{
	const struct gmt_symbolizer *s = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	if (s->mods[i].start != s->mods[j].start)
		return s->mods[i].start < s->mods[j].start ? -1 : 1;
	return i < j ? -1 : 1;
}

static int sort_modules(struct gmt_symbolizer *s)
{
	size_t *o = realloc(s->order, s->nmods * sizeof(*o));
	uint64_t *e = o ? realloc(s->order_maxend, s->nmods * sizeof(*e)) : NULL;
	if (o)
		s->order = o;
	if (e)
		s->order_maxend = e;
	if (!o || !e)
		return -1;
	for (size_t i = 0; i < s->nmods; i++)
		o[i] = i;
	qsort_r(o, s->nmods, sizeof(*o), by_start, s);
	for (size_t i = 0; i < s->nmods; i++) {
		uint64_t end = s->mods[o[i]].end;
		e[i] = i && e[i - 1] > end ? e[i - 1] : end;
	}
	s->order_dirty = false;
	return 0;
}

/* The module holding pc; where several do (a library unloaded and another
 * loaded in its place), the first registered, as the reports' own lookup. */
static struct sym_mod *module_at(struct gmt_symbolizer *s, uint64_t pc)
{
	if (s->order_dirty && sort_modules(s) != 0)
		return NULL;
	size_t lo = 0, hi = s->nmods; /* the first with start > pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->mods[s->order[mid]].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t best = SIZE_MAX;
	for (size_t i = lo; i-- > 0 && s->order_maxend[i] > pc;)
		if (pc < s->mods[s->order[i]].end && s->order[i] < best)
			best = s->order[i];
	return best == SIZE_MAX ? NULL : &s->mods[best];
}

/* ---- the symbol table ---- */

static int by_lo(const void *a, const void *b)
{
	const struct sym_fn *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->index < y->index ? -1 : 1;
}

/* libdwfl's order of preference (dwfl_module_addrsym): non-local symbols
 * first, then global before weak; the lower the better. */
static uint32_t rank_of(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	case STB_LOCAL:
		return 4;
	default:
		return 2;
	}
}

/* Where an assembly label (a symbol without a size) stops: the end of its
 * section; one past it for an absolute symbol (libdwfl's same_section). */
static uint64_t label_end(Elf *elf, GElf_Word shndx, GElf_Addr addr, Dwarf_Addr bias)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = shndx < SHN_LORESERVE && elf ? elf_getscn(elf, shndx) : NULL;
	if (!scn || !gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_ALLOC))
		return addr + 1;
	return shdr.sh_addr + bias + shdr.sh_size;
}

/* Every symbol that can hold code, sorted by address, with the running
 * highest end so that a lookup knows how far down to look. */
static void load_functions(struct sym_mod *m)
{
	int n = dwfl_module_getsymtab(m->mod);
	if (n <= 1)
		return;
	struct sym_fn *v = malloc((size_t)n * sizeof(*v));
	if (!v)
		return;
	size_t k = 0;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		Dwarf_Addr bias = 0;
		const char *name =
		    dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, &elf, &bias);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS)
			continue;
		uint64_t sec_end = sym.st_size ? 0 : label_end(elf, shndx, addr, bias);
		v[k++] =
		    (struct sym_fn){addr, sym.st_size, sec_end, name, rank_of(&sym), (uint32_t)i};
	}
	if (k)
		qsort(v, k, sizeof(*v), by_lo);
	uint64_t *e = malloc((k ? k : 1) * sizeof(*e));
	if (!e) {
		free(v);
		return;
	}
	for (size_t i = 0; i < k; i++) {
		uint64_t end = v[i].lo + v[i].size;
		e[i] = i && e[i - 1] > end ? e[i - 1] : end;
	}
	m->fns = v;
	m->maxend = e;
	m->nfns = k;
}

static bool better(const struct sym_fn *a, const struct sym_fn *b)
{
	if (!b)
		return true;
	if ((a->rank >= 4) != (b->rank >= 4)) /* libdwfl looks at locals last */
		return a->rank < 4;
	if (a->lo != b->lo)
		return a->lo > b->lo; /* the closest start */
	if (a->rank != b->rank)
		return a->rank < b->rank;
	if (a->size != b->size)
		return a->size < b->size;
	return a->index < b->index;
}

/* The symbol holding pc: the best sized symbol that contains it, else an
 * assembly label (size 0) above the end of every sized symbol below pc. */
static const char *function_at(const struct sym_mod *m, uint64_t pc)
{
	size_t lo = 0, hi = m->nfns; /* the first with lo > pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->fns[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct sym_fn *best = NULL;
	size_t i = lo;
	for (int seen = 0; i-- > 0 && seen < BACK_SCAN; seen++) {
		const struct sym_fn *f = &m->fns[i];
		if (m->maxend[i] <= pc)
			break; /* nothing further down reaches pc */
		if (f->size && pc - f->lo < f->size && better(f, best))
			best = f;
	}
	if (best)
		return best->name;
	/* An assembly label: the nearest symbol at or below pc, when it has no
	 * size and no sized symbol below it reaches it. */
	const struct sym_fn *label = NULL;
	for (i = lo; i-- > 0 && m->fns[i].lo == m->fns[lo - 1].lo;)
		if (!m->fns[i].size && (!label || m->fns[i].rank <= label->rank))
			label = &m->fns[i];
	size_t below = label ? (size_t)(label - m->fns) : 0;
	while (below > 0 && m->fns[below - 1].lo == label->lo)
		below--;
	if (label && ((below && m->maxend[below - 1] > label->lo) || pc >= label->sec_end))
		return NULL;
	return label ? label->name : NULL;
}

/* ---- inlined call sites, per compile unit ---- */

struct inl_vec {
	struct sym_inl *v;
	size_t n, cap;
	bool failed;
};

static void inl_push(struct inl_vec *iv, const struct sym_inl *x)
{
	if (iv->n == iv->cap) {
		size_t cap = iv->cap ? 2 * iv->cap : 64;
		struct sym_inl *v = realloc(iv->v, cap * sizeof(*v));
		if (!v) {
			iv->failed = true;
			return;
		}
		iv->v = v;
		iv->cap = cap;
	}
	iv->v[iv->n++] = *x;
}

static void inl_add(struct inl_vec *iv, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word line = 0, file = UINT64_MAX;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line) != 0)
		line = 0;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &file) != 0)
		file = UINT64_MAX;
	Dwarf_Addr base, lo, hi;
	for (ptrdiff_t off = 0; (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0;)
		if (hi > lo)
			inl_push(iv, &(struct sym_inl){lo, hi, line, file});
}

/* Scopes that may hold code, and so inlined calls. */
static bool may_hold_code(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_lexical_block:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_module:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_with_stmt:
	case DW_TAG_entry_point:
		return true;
	default:
		return false;
	}
}

/* Every outermost inlined call under die: the ones not inside another. */
static void inl_walk(struct inl_vec *iv, Dwarf_Die *die, int depth)
{
	Dwarf_Die child;
	if (depth >= INL_DEPTH || dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_inlined_subroutine)
			inl_add(iv, &child);
		else if (may_hold_code(tag))
			inl_walk(iv, &child, depth + 1);
	} while (!iv->failed && dwarf_siblingof(&child, &child) == 0);
}

static int by_inl_lo(const void *a, const void *b)
{
	const struct sym_inl *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static struct sym_cu *cu_slot(struct sym_mod *m, uint64_t off)
{
	size_t mask = m->cus_cap - 1;
	for (size_t i = mix(off) & mask;; i = (i + 1) & mask)
		if (m->cus[i].off == off || m->cus[i].off == 0)
			return &m->cus[i];
}

/* The compile unit's inlined call sites, read on first use. NULL when
 * memory ran out: the line table's own answer stands. */
static const struct sym_cu *cu_inlines(struct sym_mod *m, Dwarf_Die *cudie)
{
	uint64_t off = dwarf_dieoffset(cudie) + 1; /* 0 marks an empty slot */
	if (m->ncus * 2 >= m->cus_cap) {
		size_t cap = m->cus_cap ? 2 * m->cus_cap : 16;
		struct sym_cu *old = m->cus, *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		size_t oldcap = m->cus_cap;
		m->cus = v;
		m->cus_cap = cap;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].off)
				*cu_slot(m, old[i].off) = old[i];
		free(old);
	}
	struct sym_cu *c = cu_slot(m, off);
	if (c->off)
		return c;
	struct inl_vec iv = {0};
	inl_walk(&iv, cudie, 0);
	if (iv.failed) {
		free(iv.v);
		return NULL;
	}
	if (iv.n)
		qsort(iv.v, iv.n, sizeof(*iv.v), by_inl_lo);
	*c = (struct sym_cu){off, iv.v, iv.n};
	m->ncus++;
	return c;
}

/* The line table names the innermost inlined code, but the function name
 * comes from the symbol table: the function that was really called. When
 * pc is inside inlined code, name instead the line of that function where
 * the outermost inlined call sits, so function and file:line are one frame. */
static void call_site_of_inlined(struct sym_mod *m, uint64_t pc, struct gmt_symbol *out)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(m->mod, pc, &bias);
	const struct sym_cu *c = cudie ? cu_inlines(m, cudie) : NULL;
	if (!c || !c->n)
		return;
	uint64_t a = pc - bias;
	size_t lo = 0, hi = c->n; /* the first with lo > a */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->v[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || a >= c->v[lo - 1].hi)
		return;
	const struct sym_inl *in = &c->v[lo - 1];
	if (in->call_line)
		out->line = (unsigned)in->call_line;
	Dwarf_Files *files;
	size_t nfiles;
	if (in->call_file != UINT64_MAX && dwarf_getsrcfiles(cudie, &files, &nfiles) == 0 &&
	    in->call_file < nfiles) {
		const char *f = dwarf_filesrc(files, in->call_file, NULL, NULL);
		if (f)
			out->file = f;
	}
}

/* ---- modules' files ---- */

static void module_open(struct gmt_symbolizer *s, struct sym_mod *m)
{
	m->opened = true;
	int fd = gmt_sym_open_module(s, m);
	if (fd < 0)
		return;
	const char *file = m->found_at ? m->found_at : m->path;
	const char *slash = strrchr(m->path, '/');
	m->dwfl = dwfl_begin(&gmt_sym_callbacks);
	if (!m->dwfl) {
		close(fd);
		m->state = GMT_SYMMOD_NOT_ELF;
		return;
	}
	dwfl_report_begin(m->dwfl);
	/* the Dwfl owns fd from here, even on failure */
	m->mod = dwfl_report_elf(m->dwfl, slash ? slash + 1 : m->path, file, fd, m->bias, false);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!m->mod) {
		m->state = GMT_SYMMOD_NOT_ELF;
		return;
	}
	void **userdata = NULL;
	dwfl_module_info(m->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	if (userdata) /* for find_debuginfo: the folders to look in (s stays put;
		       * m may move as modules are added) */
		*userdata = s;
	load_functions(m);
	Dwarf_Addr bias;
	m->has_lines = dwfl_module_getdwarf(m->mod, &bias) != NULL;
}

static void lookup(struct sym_mod *m, uint64_t pc, struct gmt_symbol *out)
{
	out->function = function_at(m, pc);
	if (!m->has_lines)
		return;
	Dwfl_Line *line = dwfl_module_getsrc(m->mod, pc);
	if (line) {
		int lineno = 0;
		out->file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		out->line = lineno > 0 ? (unsigned)lineno : 0;
	}
	call_site_of_inlined(m, pc, out);
}

/* ---- the memo ---- */

static struct sym_memo *memo_slot(struct gmt_symbolizer *s, uint64_t pc)
{
	size_t mask = s->memo_cap - 1;
	for (size_t i = mix(pc) & mask;; i = (i + 1) & mask)
		if (s->memo[i].pc == pc || s->memo[i].pc == 0)
			return &s->memo[i];
}

/* Room for one more entry; false when memory ran out (nothing is kept). */
static bool memo_grow(struct gmt_symbolizer *s)
{
	if ((s->nmemo + 1) * 4 < s->memo_cap * 3)
		return true;
	size_t cap = s->memo_cap ? 2 * s->memo_cap : 1024;
	struct sym_memo *old = s->memo, *v = calloc(cap, sizeof(*v));
	if (!v)
		return false;
	size_t oldcap = s->memo_cap;
	s->memo = v;
	s->memo_cap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].pc)
			*memo_slot(s, old[i].pc) = old[i];
	free(old);
	return true;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int gmt_symbolize(struct gmt_symbolizer *s, uint64_t pc, struct gmt_symbol *out)
{
	memset(out, 0, sizeof *out);
	if (!s || !pc)
		return -1;
	struct sym_memo *e = s->memo_cap ? memo_slot(s, pc) : NULL;
	if (e && e->pc == pc) {
		*out = (struct gmt_symbol){e->function, e->file, e->line};
		return e->flags & MEMO_NAMED ? 0 : -1;
	}
	uint32_t flags = 0;
	struct sym_mod *m = NULL;
	if (s->deadline_ns && now_ns() >= s->deadline_ns) {
		flags = MEMO_CUT;
		s->stats.cut++;
	} else if (!(m = module_at(s, pc))) {
		s->stats.nomod++;
	} else {
		if (!m->opened)
			module_open(s, m);
		if (m->mod)
			lookup(m, pc, out);
		m->asked++;
		if (out->function) {
			m->named++;
			flags = MEMO_NAMED;
			s->stats.named++;
		}
	}
	s->stats.asked++;
	if (memo_grow(s)) {
		e = memo_slot(s, pc);
		*e = (struct sym_memo){pc, out->function, out->file, out->line, flags};
		s->nmemo++;
	}
	return out->function ? 0 : -1;
}

/* ---- what happened ---- */

size_t gmt_symbolizer_nmodules(const struct gmt_symbolizer *s)
{
	return s ? s->nmods : 0;
}

void gmt_symbolizer_module(const struct gmt_symbolizer *s, size_t i, struct gmt_symmod_info *out)
{
	const struct sym_mod *m = &s->mods[i];
	*out = (struct gmt_symmod_info){m->path,  m->found_at, m->state,
					m->asked, m->named,    m->has_lines};
}

void gmt_symbolizer_stats(const struct gmt_symbolizer *s, struct gmt_symbolizer_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (s)
		*out = s->stats;
}

const char *gmt_symmod_state_text(enum gmt_symmod_state st)
{
	static const char *const text[GMT_SYMMOD_STATES_] = {
	    [GMT_SYMMOD_UNUSED] = "not needed",
	    [GMT_SYMMOD_OK] = "read",
	    [GMT_SYMMOD_MOVED] = "found by build-id",
	    [GMT_SYMMOD_MISSING] = "not on this machine",
	    [GMT_SYMMOD_REPLACED] = "the file at its path has another build-id",
	    [GMT_SYMMOD_NOT_FILE] = "its path is not a regular file",
	    [GMT_SYMMOD_NOT_ELF] = "not a readable ELF file",
	    [GMT_SYMMOD_NO_PATH] = "no file to read",
	};
	return (unsigned)st < GMT_SYMMOD_STATES_ ? text[st] : "?";
}
