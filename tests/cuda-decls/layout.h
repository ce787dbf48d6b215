/* Turns the lists of layout-list.h into a table of (fact, value) rows.
 * Each layout-*.c includes its headers, then this, and defines one function
 * per list; layout-main.c compares the tables row by row. */
#ifndef GMT_LAYOUT_H
#define GMT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "layout-list.h"

struct gmt_layout_row {
	const char *fact;
	long long value;
};

/* Which integer type a scalar is, as a number both sides agree on. */
#define GMT_TYPE_CLASS(T)                                                                          \
	_Generic((T)0, char : 1, signed char : 2, unsigned char : 3, short : 4,                    \
		 unsigned short : 5, int : 6, unsigned int : 7, long : 8, unsigned long : 9,       \
		 long long : 10, unsigned long long : 11, default : 0)

#define GMT_ROW_SIZE(T)                                                                            \
	{"sizeof(" #T ")", (long long)sizeof(T)}, {"_Alignof(" #T ")", (long long)_Alignof(T)},
#define GMT_ROW_SCALAR(T) {"integer type of " #T, GMT_TYPE_CLASS(T)},
#define GMT_ROW_FIELD(T, f)                                                                        \
	{"offsetof(" #T ", " #f ")", (long long)offsetof(T, f)},                                   \
	    {"sizeof(" #T "." #f ")", (long long)sizeof(((T *)0)->f)},
#define GMT_ROW_CONST(c)		    {#c, (long long)(intptr_t)(c)},
#define GMT_ROW_CONSTX_OURS(ours, theirs)   {#ours, (long long)(ours)},
#define GMT_ROW_CONSTX_THEIRS(ours, theirs) {#ours, (long long)(theirs)},
#define GMT_ROW_NONE(...)

#define GMT_SAME_ASSERT(T, U) _Static_assert(__builtin_types_compatible_p(T, U), #T " is not " #U);
#define GMT_NONE(...)

/* Defines size_t fn(const struct gmt_layout_row **rows) for LIST. */
#define GMT_LAYOUT_TABLE(fn, LIST, CONSTX)                                                         \
	LIST(GMT_NONE, GMT_NONE, GMT_NONE, GMT_NONE, GMT_NONE, GMT_SAME_ASSERT)                    \
	size_t fn(const struct gmt_layout_row **rows);                                             \
	size_t fn(const struct gmt_layout_row **rows)                                              \
	{                                                                                          \
		static struct gmt_layout_row table[] = {LIST(GMT_ROW_SIZE, GMT_ROW_SCALAR,         \
							     GMT_ROW_FIELD, GMT_ROW_CONST, CONSTX, \
							     GMT_ROW_NONE)};                       \
		*rows = table;                                                                     \
		return sizeof table / sizeof table[0];                                             \
	}

#endif
