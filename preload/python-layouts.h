/* Where CPython keeps a thread's frames, per minor version (LP64, builds
 * with the GIL), and how its line tables read. Used by preload/python.c;
 * docs/design.md says where each figure comes from. */
#ifndef GMT_PYTHON_LAYOUTS_H
#define GMT_PYTHON_LAYOUTS_H

#include <stddef.h>
#include <stdint.h>

enum gmt_py_instr {
	GMT_PY_LASTI_BYTES, /* 3.9: int f_lasti, a byte offset (-1: not started) */
	GMT_PY_LASTI_UNITS, /* 3.10: int f_lasti, in 2-byte code units */
	GMT_PY_INSTR_PTR,   /* 3.11+: a pointer into the code's co_code_adaptive */
};

enum gmt_py_lines {
	GMT_PY_LNOTAB,	  /* 3.9: co_lnotab */
	GMT_PY_LINETABLE, /* 3.10: co_linetable, (byte delta, line delta) pairs */
	GMT_PY_LOCATIONS, /* 3.11+: the location table */
};

/* Offsets in bytes; -1 where the version has no such field. */
struct gmt_py_layout {
	int minor;
	/* thread state: the innermost frame is *(ts + ts_frame), or, where
	 * cframe_frame >= 0, *(*(ts + ts_frame) + cframe_frame) */
	int ts_frame, cframe_frame;
	/* a frame: PyFrameObject up to 3.10, _PyInterpreterFrame after */
	int f_previous, f_code, f_instr, f_owner, f_is_entry;
	int f_span; /* bytes of the frame we read */
	enum gmt_py_instr instr;
	uint64_t code_tag_mask; /* 3.14: f_executable is a tagged _PyStackRef */
	/* owner values: -1 where the version has none */
	int owner_generator;
	int owner_cstack;   /* the shim each C call into the interpreter pushes */
	int owner_not_code; /* owner >= this: not a Python function's frame */
	/* code objects */
	int co_filename, co_name, co_linetable, co_firstlineno, co_code, co_firsttraceable;
	int co_span;
	enum gmt_py_lines lines;
	/* str: the characters of a compact ASCII / other compact string */
	int str_ascii_data, str_compact_data;
};

/* The layout of 3.<minor> built with the GIL, or NULL with why (a
 * sentence for a NOTE) in why[0..len). 3.13+ read _PyRuntime's debug
 * offsets (debug points at them; NULL when the symbol is absent) through
 * read(ctx, dst, addr, n), which returns 0 when addr is not readable. */
typedef int (*gmt_py_reader)(void *dst, uintptr_t addr, size_t n);
const struct gmt_py_layout *gmt_py_layout_for(int minor, uintptr_t debug, gmt_py_reader read,
					      char *why, size_t len);

/* The line of the instruction at byte offset `addr` of the bytecode
 * (negative: not started, which reads as firstlineno) in a line table of n
 * bytes; 0 when the table gives none. */
int gmt_py_line(enum gmt_py_lines format, const unsigned char *table, size_t n, int firstlineno,
		long addr);

#endif
