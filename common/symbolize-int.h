/* What common/symbolize.c (lookups) and common/symbolize-files.c (finding
 * and opening the files) share. Not for other callers: symbolize.h is. */
#ifndef GMT_SYMBOLIZE_INT_H
#define GMT_SYMBOLIZE_INT_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>

#include "common/symbolize.h"

/* One entry of a module's symbol table: [lo, lo + size) (size 0: an
 * assembly label, up to the next symbol but not past the end of its
 * section, sec_end). rank orders entries at one address as libdwfl
 * prefers them: global before weak before local. */
struct sym_fn {
	uint64_t lo, size, sec_end;
	const char *name;
	uint32_t rank, index;
};

/* The outermost inlined call site covering [lo, hi) of a compile unit. */
struct sym_inl {
	uint64_t lo, hi;
	uint64_t call_line, call_file; /* call_file UINT64_MAX: none */
};

struct sym_cu {
	uint64_t off; /* the CU DIE's offset; 0: empty slot */
	struct sym_inl *v;
	size_t n;
};

struct sym_mod {
	char *path, *found_at;
	uint8_t *build_id;
	unsigned build_id_len;
	uint64_t bias, start, end;
	enum gmt_symmod_state state;
	bool opened;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct sym_fn *fns; /* sorted by lo, then rank */
	uint64_t *maxend;   /* maxend[i]: the highest lo + size of fns[0..i] */
	size_t nfns;
	struct sym_cu *cus; /* open addressing by off */
	size_t ncus, cus_cap;
	uint64_t asked, named;
	int has_lines;
};

/* A file found under a folder of the path, by its build-id. */
struct sym_found {
	uint8_t *id;
	unsigned len;
	char *path;
};

struct sym_memo {
	uint64_t pc; /* 0: empty slot */
	const char *function, *file;
	uint32_t line, flags;
};

struct gmt_symbolizer {
	struct sym_mod *mods;
	size_t nmods, mods_cap;
	size_t *order;		/* module indices sorted by start */
	uint64_t *order_maxend; /* the highest end of order[0..i] */
	bool order_dirty;
	struct sym_memo *memo;
	size_t nmemo, memo_cap;
	char **dirs;
	size_t ndirs;
	struct sym_found *found; /* ELF files under dirs, read when first needed */
	size_t nfound;
	bool found_scanned;
	uint64_t deadline_ns;
	struct gmt_symbolizer_stats stats;
};

/* Opens m's file: at its path when that is the module (build-id), else
 * found by build-id; sets m->state and m->found_at. Returns the fd or -1. */
int gmt_sym_open_module(struct gmt_symbolizer *s, struct sym_mod *m);

/* libdwfl's callbacks: separate debug files looked for by build-id and
 * .gnu_debuglink under the symbolizer's folders, opened never blocking.
 * A module's userdata must be its struct gmt_symbolizer. */
extern const Dwfl_Callbacks gmt_sym_callbacks;

#endif
