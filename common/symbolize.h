/* Address -> function, file:line, from the module files (ELF symbol table
 * and DWARF, through elfutils).
 *
 * Used by the CLI to name frames after the run (from the trace's MODULE
 * records), and by the library where it still names in-process. Time is
 * proportional to the distinct addresses asked: each module's symbol table
 * is read once, sorted and searched by address; each compile unit's line
 * table and its inlined call sites are read once and searched by address;
 * every answer, a miss too, is kept. Files are opened when a frame first
 * needs them, never blocking (O_NONBLOCK, regular files only), and a file
 * whose build-id is not the module's is never used: the module is looked
 * for by build-id instead (symbolize-files.c). */
#ifndef GMT_SYMBOLIZE_H
#define GMT_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct gmt_symbolizer;

struct gmt_symbol {
	const char *function; /* NULL: unknown. Owned by the symbolizer. */
	const char *file;     /* NULL: no debug info */
	unsigned line;	      /* 0: unknown */
};

/* The module files read for naming, each once per (recorded path,
 * build-id): symbolizers made on one share them, so the processes of a run
 * (one trace each, the same libraries at other addresses) read each file
 * once. dirs: folders, ':'-separated (NULL: none), to look in for a module
 * whose file moved or was replaced, and for separate debug files, by
 * build-id: DIR/.build-id/xx/rest[.debug], DIR/BASENAME, then the ELF
 * files under DIR. /usr/lib/debug is always looked in. NULL on ENOMEM. */
struct gmt_symfiles;
struct gmt_symfiles *gmt_symfiles_new(const char *dirs);
/* After every symbolizer made on it. */
void gmt_symfiles_free(struct gmt_symfiles *fs);

/* A symbolizer with files of its own, or on shared ones. NULL on ENOMEM. */
struct gmt_symbolizer *gmt_symbolizer_new(void);
struct gmt_symbolizer *gmt_symbolizer_new_shared(struct gmt_symfiles *fs);
void gmt_symbolizer_free(struct gmt_symbolizer *s);

/* Naming stops at deadline_ns (CLOCK_MONOTONIC; 0: never): an address not
 * named by then is not looked up, and is counted as cut. */
void gmt_symbolizer_set_deadline(struct gmt_symbolizer *s, uint64_t deadline_ns);

/* Registers the module mapped at [start, end) from `path`, whose link-time
 * addresses are offset by `load_bias`; its file is opened when a frame
 * first needs it. build_id may be NULL; when given, only a file with that
 * build-id is used: the one at `path`, else one found by build-id. Returns
 * 0, or -1 when it cannot be registered (out of memory). */
int gmt_symbolizer_add_module(struct gmt_symbolizer *s, const char *path, uint64_t load_bias,
			      uint64_t start, uint64_t end, const uint8_t *build_id,
			      unsigned build_id_len);

/* Resolves `pc`, an address inside the instruction (callers pass a return
 * address minus one). Returns 0 when at least the function was found. */
int gmt_symbolize(struct gmt_symbolizer *s, uint64_t pc, struct gmt_symbol *out);

/* What became of a module's file, for the reports' lines about frames left
 * unnamed. */
enum gmt_symmod_state {
	GMT_SYMMOD_UNUSED = 0,	 /* no frame needed it (not opened) */
	GMT_SYMMOD_OK = 1,	 /* read at its path */
	GMT_SYMMOD_MOVED = 2,	 /* read elsewhere, found by build-id (found_at) */
	GMT_SYMMOD_MISSING = 3,	 /* no file at its path, none found by build-id */
	GMT_SYMMOD_REPLACED = 4, /* the file at its path has another build-id */
	GMT_SYMMOD_NOT_FILE = 5, /* its path is not a regular file (a FIFO, a device) */
	GMT_SYMMOD_NOT_ELF = 6,	 /* unreadable or not an ELF file */
	GMT_SYMMOD_NO_PATH = 7,	 /* no file name ([vdso], anonymous) */
	GMT_SYMMOD_STATES_ = 8,
};

struct gmt_symmod_info {
	const char *path;     /* as registered */
	const char *found_at; /* GMT_SYMMOD_MOVED: the file read instead */
	enum gmt_symmod_state state;
	uint64_t asked; /* distinct addresses looked up in it */
	uint64_t named; /* of those, with a function */
	int has_lines;	/* DWARF line tables were found */
};

size_t gmt_symbolizer_nmodules(const struct gmt_symbolizer *s);
/* Module i, in the order they were added. */
void gmt_symbolizer_module(const struct gmt_symbolizer *s, size_t i, struct gmt_symmod_info *out);

struct gmt_symbolizer_stats {
	uint64_t asked; /* distinct addresses looked up */
	uint64_t named; /* of those, with a function */
	uint64_t cut;	/* of those, not looked up: the deadline had passed */
	uint64_t nomod; /* of those, in no registered module */
};
void gmt_symbolizer_stats(const struct gmt_symbolizer *s, struct gmt_symbolizer_stats *out);

/* A state as a phrase: "not on this machine", "the file at its path has
 * another build-id"... */
const char *gmt_symmod_state_text(enum gmt_symmod_state st);

#endif
