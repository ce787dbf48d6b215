/* Naming in time proportional to distinct addresses (symbolize.h): the
 * module of an address by binary search, each module's file read once
 * (shared by every symbolizer on one gmt_symfiles: the processes of a run
 * load the same files at other addresses), its tables searched at the
 * address's link-time value (symbolize-tables.c), every answer kept. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/symbolize-int.h"

enum {
	MEMO_NAMED = 1, /* the function was found */
	MEMO_CUT = 2,	/* not looked up: the deadline had passed */
};

/* ---- the files ---- */

struct gmt_symfiles *gmt_symfiles_new(const char *dirs)
{
	elf_version(EV_CURRENT);
	struct gmt_symfiles *fs = calloc(1, sizeof(*fs));
	for (const char *p = dirs; fs && p && *p;) {
		size_t n = strcspn(p, ":");
		if (n) {
			char **v = realloc(fs->dirs, (fs->ndirs + 1) * sizeof(*v));
			if (!v || !(v[fs->ndirs] = strndup(p, n))) {
				fs->dirs = v ? v : fs->dirs;
				gmt_symfiles_free(fs);
				return NULL;
			}
			fs->dirs = v;
			fs->ndirs++;
		}
		p += n + (p[n] == ':');
	}
	return fs;
}

void gmt_symfiles_free(struct gmt_symfiles *fs)
{
	if (!fs)
		return;
	for (size_t i = 0; i < fs->n; i++)
		gmt_sym_file_free(fs->v[i]);
	free(fs->v);
	for (size_t i = 0; i < fs->ndirs; i++)
		free(fs->dirs[i]);
	free(fs->dirs);
	for (size_t i = 0; i < fs->nfound; i++) {
		free(fs->found[i].id);
		free(fs->found[i].path);
	}
	free(fs->found);
	free(fs);
}

/* The file of a module recorded at path with build_id, opened the first
 * time it is asked for; NULL when memory ran out. */
static struct sym_file *file_of(struct gmt_symfiles *fs, const struct sym_mod *m)
{
	for (size_t i = 0; i < fs->n; i++) {
		struct sym_file *f = fs->v[i];
		if (f->build_id_len == m->build_id_len && !strcmp(f->path, m->path) &&
		    (!m->build_id_len || !memcmp(f->build_id, m->build_id, m->build_id_len)))
			return f;
	}
	if (fs->n == fs->cap) {
		size_t cap = fs->cap ? 2 * fs->cap : 32;
		struct sym_file **v = realloc(fs->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		fs->v = v;
		fs->cap = cap;
	}
	struct sym_file *f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(m->path)) ||
	    (m->build_id_len && !(f->build_id = malloc(m->build_id_len)))) {
		gmt_sym_file_free(f);
		return NULL;
	}
	if (m->build_id_len)
		memcpy(f->build_id, m->build_id, m->build_id_len);
	f->build_id_len = m->build_id_len;
	fs->v[fs->n++] = f;
	gmt_sym_file_open(fs, f);
	return f;
}

/* ---- the symbolizer ---- */

struct gmt_symbolizer *gmt_symbolizer_new_shared(struct gmt_symfiles *fs)
{
	struct gmt_symbolizer *s = fs ? calloc(1, sizeof(*s)) : NULL;
	if (s)
		s->files = fs;
	return s;
}

struct gmt_symbolizer *gmt_symbolizer_new(void)
{
	struct gmt_symfiles *fs = gmt_symfiles_new(NULL);
	struct gmt_symbolizer *s = gmt_symbolizer_new_shared(fs);
	if (!s)
		gmt_symfiles_free(fs);
	else
		s->own_files = true;
	return s;
}

void gmt_symbolizer_free(struct gmt_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++) {
		free(s->mods[i].path);
		free(s->mods[i].build_id);
	}
	free(s->mods);
	free(s->order);
	free(s->order_maxend);
	free(s->memo);
	if (s->own_files)
		gmt_symfiles_free(s->files);
	free(s);
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

/* ---- the memo ---- */

static struct sym_memo *memo_slot(struct gmt_symbolizer *s, uint64_t pc)
{
	size_t mask = s->memo_cap - 1;
	for (size_t i = gmt_sym_mix(pc) & mask;; i = (i + 1) & mask)
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
		if (!m->file)
			m->file = file_of(s->files, m);
		if (m->file && m->file->mod)
			gmt_sym_file_lookup(m->file, pc - m->bias, out);
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
	const struct sym_file *f = m->file;
	*out = (struct gmt_symmod_info){
	    m->path,  f ? f->found_at : NULL, f ? f->state : GMT_SYMMOD_UNUSED, m->asked,
	    m->named, f ? f->has_lines : 0};
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
