/* What the symbolizer's files share. Not for other callers: symbolize.h is.
 *   symbolize.c         the symbolizer: modules by address, the memo, the API
 *   symbolize-tables.c  one module file's tables and lookups
 *   symbolize-files.c   finding and opening the files (by build-id) */
#ifndef GMT_SYMBOLIZE_INT_H
#define GMT_SYMBOLIZE_INT_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>

#include "common/symbolize.h"

/* One entry of a file's symbol table: [lo, lo + size) at link-time
 * addresses (size 0: an assembly label, up to the next symbol but not past
 * the end of its section, sec_end). rank orders entries at one address as
 * libdwfl prefers them: global before weak before local. */
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
	uint64_t off; /* the CU DIE's offset + 1; 0: empty slot */
	struct sym_inl *v;
	size_t n;
};

/* A module's file as found and read, once per (recorded path, build-id)
 * whatever the process and load address: reported to libdwfl at its
 * link-time addresses. */
struct sym_file {
	char *path; /* as recorded */
	uint8_t *build_id;
	unsigned build_id_len;
	char *found_at; /* GMT_SYMMOD_MOVED: the file read instead */
	enum gmt_symmod_state state;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct sym_fn *fns; /* sorted by lo, then rank */
	uint64_t *maxend;   /* maxend[i]: the highest lo + size of fns[0..i] */
	size_t nfns;
	struct sym_cu *cus; /* open addressing by off */
	size_t ncus, cus_cap;
	int has_lines;
};

/* A file found under a folder of the path, by its build-id. */
struct sym_found {
	uint8_t *id;
	unsigned len;
	char *path;
};

struct gmt_symfiles {
	struct sym_file **v;
	size_t n, cap;
	char **dirs;
	size_t ndirs;
	struct sym_found *found; /* ELF files under dirs, read when first needed */
	size_t nfound;
	bool found_scanned;
};

/* A module of one process: where its file is mapped. */
struct sym_mod {
	char *path;
	uint8_t *build_id;
	unsigned build_id_len;
	uint64_t bias, start, end;
	struct sym_file *file; /* NULL until a frame needs it */
	uint64_t asked, named;
};

struct sym_memo {
	uint64_t pc; /* 0: empty slot */
	const char *function, *file;
	uint32_t line, flags;
};

struct gmt_symbolizer {
	struct gmt_symfiles *files;
	bool own_files;
	struct sym_mod *mods;
	size_t nmods, mods_cap;
	size_t *order;		/* module indices sorted by start */
	uint64_t *order_maxend; /* the highest end of order[0..i] */
	bool order_dirty;
	struct sym_memo *memo;
	size_t nmemo, memo_cap;
	uint64_t deadline_ns;
	struct gmt_symbolizer_stats stats;
};

/* symbolize-tables.c: f's file read (its fd found by symbolize-files.c),
 * its symbol table loaded; f->state says how it went. */
void gmt_sym_file_open(struct gmt_symfiles *fs, struct sym_file *f);
void gmt_sym_file_free(struct sym_file *f);
/* The name of link-time address a in f. */
void gmt_sym_file_lookup(struct sym_file *f, uint64_t a, struct gmt_symbol *out);
uint64_t gmt_sym_mix(uint64_t h);

/* symbolize-files.c: f's file, at its path when that is the module
 * (build-id), else found by build-id; sets f->state and f->found_at.
 * Returns the fd or -1. */
int gmt_sym_open_file(struct gmt_symfiles *fs, struct sym_file *f);

/* libdwfl's callbacks: separate debug files looked for by build-id and
 * .gnu_debuglink under the folders of the path, opened never blocking.
 * A module's userdata must be its struct gmt_symfiles. */
extern const Dwfl_Callbacks gmt_sym_callbacks;

#endif
