/* preload/python.c against a fake CPython 3.12 built in this program's
 * memory (the test exports the symbols python.c looks up): frames are read
 * and spliced at the evaluation frame; a cached frame is checked on each
 * hit, so a code object whose file changed at the same address is named
 * anew; bad pointers (an unmapped page, a wrong type) never crash, cut the
 * stack or leave it native, and leave one NOTE; a thread without a
 * thread state gets "[thread runs no Python]". */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "gpumemtrace/format.h"
#include "preload/python.h"

/* ---- what python.c looks up (exported: linked with -rdynamic) ---- */
char PyCode_Type[64], PyUnicode_Type[64], PyBytes_Type[64];
const unsigned long Py_Version = 0x030c01f0; /* 3.12.1 */
static void *tstate_now;
int Py_IsInitialized(void);
int Py_IsFinalizing(void);
void *PyGILState_GetThisThreadState(void);
void _PyEval_EvalFrameDefault(void);
int Py_IsInitialized(void)
{
	return 1;
}
int Py_IsFinalizing(void)
{
	return 0;
}
void *PyGILState_GetThisThreadState(void)
{
	return tstate_now;
}
__attribute__((noinline)) void _PyEval_EvalFrameDefault(void)
{
	__asm__ volatile("" ::: "memory");
}

/* ---- the tracer's side ---- */
static struct {
	uint64_t id, line;
	char function[64], file[64];
} defined[64];
static int ndefined, notes;

void *gmt_libc_dlsym(void *handle, const char *name);
void gmt_record_pyframe(uint64_t id, const char *function, const char *file, uint64_t line);
void gmt_note(int level, const char *text);
void *gmt_libc_dlsym(void *handle, const char *name)
{
	return dlsym(handle, name);
}
void gmt_record_pyframe(uint64_t id, const char *function, const char *file, uint64_t line)
{
	if (ndefined < 64) {
		defined[ndefined].id = id;
		defined[ndefined].line = line;
		snprintf(defined[ndefined].function, 64, "%s", function);
		snprintf(defined[ndefined].file, 64, "%s", file);
		ndefined++;
	}
}
void gmt_note(int level, const char *text)
{
	printf("note: %s\n", text);
	notes++;
}

/* ---- a fake 3.12 heap (offsets from python-layouts.c) ---- */
static _Alignas(8) unsigned char ts[128], cframe[16], frames[3][80], codes[2][256], strs[4][64],
    table[48];

static void put_ptr(unsigned char *at, const void *p)
{
	memcpy(at, &p, sizeof p);
}

static void make_str(unsigned char *s, const char *text)
{
	uint64_t len = strlen(text);
	uint32_t state = (1u << 2) | (1u << 5) | (1u << 6); /* kind 1, compact, ascii */
	put_ptr(s + 8, PyUnicode_Type);
	memcpy(s + 16, &len, 8);
	memcpy(s + 32, &state, 4);
	memcpy(s + 40, text, len + 1);
}

static void make_code(unsigned char *c, unsigned char *name, unsigned char *file, int first)
{
	put_ptr(c + 8, PyCode_Type);
	memcpy(c + 68, &first, 4);
	put_ptr(c + 112, file);
	put_ptr(c + 128, name);
	put_ptr(c + 136, table);
	int firsttraceable = 0;
	memcpy(c + 176, &firsttraceable, 4);
}

static void make_frame(unsigned char *f, unsigned char *code, unsigned char *prev, int owner)
{
	put_ptr(f + 0, code);
	put_ptr(f + 8, prev);
	put_ptr(f + 56, code + 192 + 4); /* byte 4: code unit 2 */
	f[70] = (unsigned char)owner;
}

static void build(void)
{
	/* the line table: one entry (code 13), 8 units, line delta +2 */
	uint64_t n = 2;
	put_ptr(table + 8, PyBytes_Type);
	memcpy(table + 16, &n, 8);
	table[32] = 0x80 | (13 << 3) | 7;
	table[33] = 4; /* signed varint +2 */
	make_str(strs[0], "inner");
	make_str(strs[1], "outer");
	make_str(strs[2], "f.py");
	make_str(strs[3], "g.py");
	make_code(codes[0], strs[0], strs[2], 10);
	make_code(codes[1], strs[1], strs[2], 20);
	make_frame(frames[0], codes[0], frames[1], 0);
	make_frame(frames[1], codes[1], frames[2], 0);
	make_frame(frames[2], codes[1], NULL, 3); /* the C stack's shim */
	put_ptr(ts + 56, cframe);
	put_ptr(cframe, frames[0]);
	tstate_now = ts;
}

static const char *name_of(uint64_t ip)
{
	for (int i = 0; i < ndefined; i++)
		if (GMT_PYFRAME_IP(defined[i].id) == ip)
			return defined[i].function;
	return "?";
}

static unsigned splice(uint64_t *ips)
{
	ips[0] = 0x1000; /* the C function Python called: outside the interpreter */
	ips[1] = (uint64_t)(uintptr_t)_PyEval_EvalFrameDefault + 1;
	ips[2] = (uint64_t)(uintptr_t)Py_IsInitialized + 1; /* start-up code */
	return gmt_python_splice(ips, 3, 64);
}

int main(void)
{
	uint64_t ips[64];
	build();
	unsigned n = splice(ips);
	CHECK(n == 3 && ips[0] == 0x1000 && !strcmp(name_of(ips[1]), "inner") &&
		  !strcmp(name_of(ips[2]), "outer"),
	      "spliced: %u frames, %s %s", n, name_of(ips[1]), name_of(ips[2]));
	CHECK(ndefined == 2 && defined[0].line == 12 && !strcmp(defined[0].file, "f.py"),
	      "defined %d, line %lu", ndefined, (unsigned long)defined[0].line);

	n = splice(ips);
	CHECK(n == 3 && ndefined == 2, "cached: nothing defined again (%d)", ndefined);

	/* Another code object at the same address: its file differs. */
	put_ptr(codes[0] + 112, strs[3]);
	n = splice(ips);
	CHECK(ndefined == 3 && !strcmp(defined[2].file, "g.py"), "changed code object seen");

	/* The outer frame's previous points into an unmapped page. */
	unsigned char *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(hole != MAP_FAILED, "mmap");
	put_ptr(frames[1] + 8, hole);
	n = splice(ips);
	CHECK(n == 3 && notes == 1, "cut at an unreadable frame: %u frames, %d notes", n, notes);

	/* The innermost frame's code object is unmapped, then not code. */
	put_ptr(frames[0], hole);
	n = splice(ips);
	CHECK(n == 3 && ips[1] == (uint64_t)(uintptr_t)_PyEval_EvalFrameDefault + 1,
	      "unreadable code: the native stack stays");
	put_ptr(frames[0], strs[0]);
	n = splice(ips);
	CHECK(n == 3 && ips[1] == (uint64_t)(uintptr_t)_PyEval_EvalFrameDefault + 1,
	      "not a code object: the native stack stays");
	put_ptr(cframe, (void *)(uintptr_t)0x10);
	n = splice(ips);
	CHECK(n == 3, "a wild frame pointer: the native stack stays");
	CHECK(notes == 1, "one NOTE in all (%d)", notes);

	tstate_now = NULL;
	n = splice(ips);
	CHECK(n == 4 && !strcmp(name_of(ips[3]), "[thread runs no Python]"),
	      "a thread without Python: %u frames, outermost %s", n, name_of(ips[3]));
	munmap(hole, 4096);
	return failures ? 1 : 0;
}
