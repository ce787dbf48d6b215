/* Per-version frame layouts and line tables (see python-layouts.h).
 *
 * 3.9 to 3.12: offsetof() against each version's own headers
 * (frameobject.h, internal/pycore_frame.h, pycore_code.h), checked on
 * pyenv's 3.9.18, 3.10.13, 3.11.7 and 3.12.1 and Debian's 3.11.2.
 * 3.13 and 3.14: the _Py_DebugOffsets table CPython keeps at the start of
 * _PyRuntime for debuggers, read at run time; where each field sits in
 * that table changes between minors, so each minor has its own positions. */
#include "preload/python-layouts.h"

#include <stdio.h>
#include <string.h>

static const struct gmt_py_layout fixed[] = {
    {.minor = 9,
     .ts_frame = 24,
     .cframe_frame = -1,
     .f_previous = 24,
     .f_code = 32,
     .f_instr = 104,
     .f_owner = -1,
     .f_is_entry = -1,
     .f_span = 112,
     .instr = GMT_PY_LASTI_BYTES,
     .owner_generator = -1,
     .owner_cstack = -1,
     .owner_not_code = -1,
     .co_filename = 104,
     .co_name = 112,
     .co_linetable = 120,
     .co_firstlineno = 40,
     .co_code = -1,
     .co_firsttraceable = -1,
     .co_span = 128,
     .lines = GMT_PY_LNOTAB,
     .str_ascii_data = 48,
     .str_compact_data = 72},
    {.minor = 10,
     .ts_frame = 24,
     .cframe_frame = -1,
     .f_previous = 24,
     .f_code = 32,
     .f_instr = 96,
     .f_owner = -1,
     .f_is_entry = -1,
     .f_span = 104,
     .instr = GMT_PY_LASTI_UNITS,
     .owner_generator = -1,
     .owner_cstack = -1,
     .owner_not_code = -1,
     .co_filename = 104,
     .co_name = 112,
     .co_linetable = 120,
     .co_firstlineno = 40,
     .co_code = -1,
     .co_firsttraceable = -1,
     .co_span = 128,
     .lines = GMT_PY_LINETABLE,
     .str_ascii_data = 48,
     .str_compact_data = 72},
    {.minor = 11,
     .ts_frame = 56,
     .cframe_frame = 8,
     .f_previous = 48,
     .f_code = 32,
     .f_instr = 56,
     .f_owner = 69,
     .f_is_entry = 68,
     .f_span = 72,
     .instr = GMT_PY_INSTR_PTR,
     .owner_generator = 1,
     .owner_cstack = -1,
     .owner_not_code = -1,
     .co_filename = 112,
     .co_name = 128, /* co_qualname */
     .co_linetable = 136,
     .co_firstlineno = 72,
     .co_code = 184,
     .co_firsttraceable = 168,
     .co_span = 176,
     .lines = GMT_PY_LOCATIONS,
     .str_ascii_data = 48,
     .str_compact_data = 72},
    {.minor = 12,
     .ts_frame = 56,
     .cframe_frame = 0,
     .f_previous = 8,
     .f_code = 0,
     .f_instr = 56,
     .f_owner = 70,
     .f_is_entry = -1,
     .f_span = 72,
     .instr = GMT_PY_INSTR_PTR,
     .owner_generator = 1,
     .owner_cstack = 3,
     .owner_not_code = 3,
     .co_filename = 112,
     .co_name = 128,
     .co_linetable = 136,
     .co_firstlineno = 68,
     .co_code = 192,
     .co_firsttraceable = 176,
     .co_span = 184,
     .lines = GMT_PY_LOCATIONS,
     .str_ascii_data = 40,
     .str_compact_data = 56},
};

/* Where the fields we need sit inside _Py_DebugOffsets, per minor: each
 * names a uint64_t holding an offset (or a size). */
struct debug_positions {
	int minor;
	int ts_size, ts_current_frame;
	int f_size, f_previous, f_executable, f_instr_ptr, f_owner;
	int co_size, co_filename, co_qualname, co_linetable, co_firstlineno, co_code_adaptive;
	int ascii_size;
	/* not in the table: fixed per minor. _co_firsttraceable is trusted
	 * only where co_code_adaptive is where that minor's header puts it. */
	int co_firsttraceable, co_code_expected, owner_cstack, owner_not_code;
	uint64_t code_tag_mask;
};

static const struct debug_positions positions[] = {
    /* 3.13: Include/internal/pycore_runtime.h; _co_firsttraceable from
     * 3.13.0's cpython/code.h (the debug table lacks it); owner 3 is the C
     * stack's shim (FRAME_OWNED_BY_CSTACK) */
    {13, 152, 184, 224, 232, 240, 248, 264, 272, 280, 296, 304, 312, 344, 560, 184, 200, 3, 3, 0},
    /* 3.14: Include/internal/pycore_debug_offsets.h; the entry frame each
     * C call into the interpreter pushes is FRAME_OWNED_BY_INTERPRETER (3;
     * FRAME_OWNED_BY_CSTACK, 4, is set nowhere); f_executable is a
     * _PyStackRef whose low two bits are tags */
    {14, 176, 208, 248, 256, 264, 272, 288, 312, 320, 336, 344, 352, 384, 640, 192, 208, 3, 3, 3},
};

enum { DEBUG_FREE_THREADED = 16 };

static struct gmt_py_layout from_debug; /* filled once, under python.c's lock */

static int get(gmt_py_reader read, uintptr_t debug, int pos, uint64_t *out)
{
	return read(out, debug + (uintptr_t)pos, sizeof *out);
}

/* The debug table's offsets, each checked to lie inside its struct. */
static int fill_from_debug(const struct debug_positions *p, uintptr_t debug, gmt_py_reader read,
			   struct gmt_py_layout *l)
{
	uint64_t ts_size, ts_cur, f_size, prev, exec, ip, owner, co_size, file, qual, table, first,
	    adaptive, ascii;
	if (!get(read, debug, p->ts_size, &ts_size) ||
	    !get(read, debug, p->ts_current_frame, &ts_cur) ||
	    !get(read, debug, p->f_size, &f_size) || !get(read, debug, p->f_previous, &prev) ||
	    !get(read, debug, p->f_executable, &exec) || !get(read, debug, p->f_instr_ptr, &ip) ||
	    !get(read, debug, p->f_owner, &owner) || !get(read, debug, p->co_size, &co_size) ||
	    !get(read, debug, p->co_filename, &file) || !get(read, debug, p->co_qualname, &qual) ||
	    !get(read, debug, p->co_linetable, &table) ||
	    !get(read, debug, p->co_firstlineno, &first) ||
	    !get(read, debug, p->co_code_adaptive, &adaptive) ||
	    !get(read, debug, p->ascii_size, &ascii))
		return 0;
	if (ts_size > 4096 || ts_cur + 8 > ts_size || f_size < 32 || f_size > 512 ||
	    prev + 8 > f_size || exec + 8 > f_size || ip + 8 > f_size || owner + 1 > f_size ||
	    co_size < 64 || co_size > 1024 || file + 8 > co_size || qual + 8 > co_size ||
	    table + 8 > co_size || first + 4 > co_size || adaptive > co_size || ascii < 32 ||
	    ascii > 64)
		return 0;
	*l = (struct gmt_py_layout){
	    .minor = p->minor,
	    .ts_frame = (int)ts_cur,
	    .cframe_frame = -1,
	    .f_previous = (int)prev,
	    .f_code = (int)exec,
	    .f_instr = (int)ip,
	    .f_owner = (int)owner,
	    .f_is_entry = -1,
	    .instr = GMT_PY_INSTR_PTR,
	    .code_tag_mask = p->code_tag_mask,
	    .owner_generator = 1,
	    .owner_cstack = p->owner_cstack,
	    .owner_not_code = p->owner_not_code,
	    .co_filename = (int)file,
	    .co_name = (int)qual,
	    .co_linetable = (int)table,
	    .co_firstlineno = (int)first,
	    .co_code = (int)adaptive,
	    .co_firsttraceable = (int)adaptive == p->co_code_expected ? p->co_firsttraceable : -1,
	    .lines = GMT_PY_LOCATIONS,
	    .str_ascii_data = (int)ascii,
	    .str_compact_data = (int)ascii + 16, /* utf8_length, utf8 */
	};
	int fmax = (int)(prev > exec ? prev : exec);
	fmax = fmax > (int)ip ? fmax : (int)ip;
	fmax = fmax > (int)owner ? fmax : (int)owner;
	l->f_span = fmax + 8;
	int cmax = 0;
	int cf[] = {(int)file, (int)qual, (int)table, (int)first, l->co_firsttraceable};
	for (size_t i = 0; i < sizeof cf / sizeof cf[0]; i++)
		cmax = cf[i] > cmax ? cf[i] : cmax;
	l->co_span = cmax + 8;
	return 1;
}

static const struct gmt_py_layout *debug_layout(int minor, uintptr_t debug, gmt_py_reader read,
						char *why, size_t len)
{
	const struct debug_positions *p = NULL;
	for (size_t i = 0; i < sizeof positions / sizeof positions[0]; i++)
		if (positions[i].minor == minor)
			p = &positions[i];
	char cookie[8];
	uint64_t version, free_threaded;
	if (!debug || !read(cookie, debug, sizeof cookie) || memcmp(cookie, "xdebugpy", 8) ||
	    !get(read, debug, 8, &version) ||
	    !get(read, debug, DEBUG_FREE_THREADED, &free_threaded)) {
		snprintf(why, len, "Python 3.%d: its _PyRuntime debug offsets were not found",
			 minor);
		return NULL;
	}
	if (free_threaded) {
		snprintf(why, len,
			 "Python 3.%d is a free-threaded build, whose frames gpumemtrace does "
			 "not read",
			 minor);
		return NULL;
	}
	if (!p || (int)((version >> 16) & 0xff) != minor || (version >> 24) != 3) {
		snprintf(why, len, "Python 3.%d: this gpumemtrace knows no frame layout for it",
			 minor);
		return NULL;
	}
	if (!fill_from_debug(p, debug, read, &from_debug)) {
		snprintf(why, len, "Python 3.%d: its debug offsets look wrong", minor);
		return NULL;
	}
	return &from_debug;
}

const struct gmt_py_layout *gmt_py_layout_for(int minor, uintptr_t debug, gmt_py_reader read,
					      char *why, size_t len)
{
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		if (fixed[i].minor == minor)
			return &fixed[i];
	if (minor >= 13)
		return debug_layout(minor, debug, read, why, len);
	snprintf(why, len, "Python 3.%d: this gpumemtrace reads frames of 3.9 to 3.14 only", minor);
	return NULL;
}

/* 3.9: (byte offset delta, signed line delta) pairs (Objects/lnotab_notes.txt). */
static int lnotab_line(const unsigned char *t, size_t n, int line, long addr)
{
	long at = 0;
	for (size_t i = 0; i + 1 < n; i += 2) {
		at += t[i];
		if (at > addr)
			break;
		line += (signed char)t[i + 1];
	}
	return line;
}

/* 3.10: ranges of (byte length, signed line delta); -128 means no line. */
static int linetable_line(const unsigned char *t, size_t n, int line, long addr)
{
	long start, end = 0;
	for (size_t i = 0; i + 1 < n; i += 2) {
		start = end;
		end += t[i];
		int delta = (signed char)t[i + 1];
		if (delta != -128)
			line += delta;
		if (addr >= start && addr < end)
			return delta == -128 ? 0 : line;
	}
	return 0;
}

static long signed_varint(const unsigned char *t, size_t n, size_t *i)
{
	unsigned long v = 0;
	unsigned shift = 0;
	while (*i < n && shift < 60) {
		unsigned char b = t[(*i)++];
		v |= (unsigned long)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return (v & 1) ? -(long)(v >> 1) : (long)(v >> 1);
}

/* 3.11+: entries of a header byte 1cccclll (l + 1 code units, code c) and
 * payload bytes with the top bit clear (Objects/locations.md). */
static int locations_line(const unsigned char *t, size_t n, int line, long addr)
{
	long unit = addr / 2, end = 0;
	size_t i = 0;
	while (i < n) {
		unsigned char b = t[i++];
		if (!(b & 0x80))
			return 0; /* not at an entry: a table we do not understand */
		long start = end;
		end += (b & 7) + 1;
		int code = (b >> 3) & 15, has_line = 1;
		if (code == 15)
			has_line = 0;
		else if (code == 13 || code == 14)
			line += (int)signed_varint(t, n, &i);
		else if (code >= 10)
			line += code - 10;
		if (unit >= start && unit < end)
			return has_line ? line : 0;
		while (i < n && !(t[i] & 0x80))
			i++;
	}
	return 0;
}

int gmt_py_line(enum gmt_py_lines format, const unsigned char *table, size_t n, int firstlineno,
		long addr)
{
	if (addr < 0)
		return firstlineno;
	switch (format) {
	case GMT_PY_LNOTAB:
		return lnotab_line(table, n, firstlineno, addr);
	case GMT_PY_LINETABLE:
		return linetable_line(table, n, firstlineno, addr);
	case GMT_PY_LOCATIONS:
		return locations_line(table, n, firstlineno, addr);
	}
	return 0;
}
