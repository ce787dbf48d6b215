/* Growable columns in Apache Arrow's layout, for the tables of
 * libgpumemtrace-reader.so (capi/trace-tables.c). */
#ifndef GMT_CAPI_COLUMNS_H
#define GMT_CAPI_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpumemtrace/trace-reader.h>

struct dict_entry;

/* Strings, each once: their index is their order of first use. */
struct dict {
	struct dict_entry *index;
	int32_t *offsets; /* n + 1 */
	char *data;
	size_t n, cap, data_len, data_cap;
};

struct col {
	int type; /* enum gmtr_type */
	bool want;
	uint64_t n, cap;
	void *v;
	uint8_t *valid; /* NULL until the first null */
	uint64_t nulls;
	struct dict dict;
	const char *last; /* the last string pushed (its pointer) and its index */
	int32_t last_index;
};

/* Room for at least n rows (a hint: pushes grow the column anyway). */
void col_reserve(struct col *c, uint64_t n);
void col_i64(struct col *c, int64_t v);
void col_u64(struct col *c, uint64_t v);
void col_i32(struct col *c, int32_t v);
void col_bool(struct col *c, bool v);
void col_str(struct col *c, const char *s); /* NULL: a null */
/* col_str for strings that stay put while the table is built (API names,
 * phase names): the same pointer as the last row's skips the lookup. */
void col_str_stable(struct col *c, const char *s);
void col_null(struct col *c);
void col_free(struct col *c);
void col_view(const struct col *c, const char *name, struct gmtr_column *out);

#endif
