/* Address -> function, file:line, through elfutils' libdwfl.
 *
 * Used at exit by the library (modules from the live process) and by the CLI
 * for traces whose process died before symbolizing (modules from the trace's
 * MODULE records, where those files are still on this machine). */
#ifndef GMT_SYMBOLIZE_H
#define GMT_SYMBOLIZE_H

#include <stdint.h>

struct gmt_symbolizer;

struct gmt_symbol {
	const char *function; /* NULL: unknown. Owned by the symbolizer. */
	const char *file;     /* NULL: no debug info */
	unsigned line;	      /* 0: unknown */
};

struct gmt_symbolizer *gmt_symbolizer_new(void);
void gmt_symbolizer_free(struct gmt_symbolizer *s);

/* Registers the module mapped at [start, end) from `path`, whose link-time
 * addresses are offset by `load_bias`. build_id may be NULL; when given and
 * the file on disk has another build-id, the module is skipped (returns -1)
 * so a rebuilt library is never used to name old addresses. */
int gmt_symbolizer_add_module(struct gmt_symbolizer *s, const char *path, uint64_t load_bias,
			      uint64_t start, uint64_t end, const uint8_t *build_id,
			      unsigned build_id_len);

/* Resolves `pc`, an address inside the instruction (callers pass a return
 * address minus one). Returns 0 when at least the function was found. */
int gmt_symbolize(struct gmt_symbolizer *s, uint64_t pc, struct gmt_symbol *out);

#endif
