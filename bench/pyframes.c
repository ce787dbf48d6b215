/* The cost of reading Python frames on the hook path, per frame, for
 * bench/pyframes.py: a Python extension built from preload/python.c and
 * preload/python-layouts.c themselves, with the tracer's calls stubbed
 * (a PYFRAME record is not written; the ring's cost is the hook bench's).
 *
 * splice(n, mode) calls gmt_python_splice n times with the GIL released,
 * from the caller's Python stack, and returns the CPU ns per call. Modes:
 *   0 cached    the caches hold every frame (the steady state)
 *   1 uncached  the caches are emptied before each call: names and lines
 *               are read and decoded again (pages stay known)
 *   2 cold      the known pages are forgotten too: every first read of a
 *               page is a process_vm_readv
 * In modes 1 and 2 each call is timed alone, without the emptying. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

#include "preload/python.h"

void *gmt_libc_dlsym(void *handle, const char *name);
void gmt_record_pyframe(uint64_t id, const char *function, const char *file, uint64_t line);
void gmt_note(int level, const char *text);

void *gmt_libc_dlsym(void *handle, const char *name)
{
	return dlsym(handle, name);
}

void gmt_record_pyframe(uint64_t id, const char *function, const char *file, uint64_t line)
{
}

void gmt_note(int level, const char *text)
{
	fprintf(stderr, "note: %s\n", text);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* waiting for a CPU is not ours */
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static PyObject *splice(PyObject *self, PyObject *args)
{
	long n;
	int mode;
	if (!PyArg_ParseTuple(args, "li", &n, &mode))
		return NULL;
	uint64_t ips[256];
	unsigned got = 0;
	double total = 0;
	Py_BEGIN_ALLOW_THREADS double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (mode) { /* not timed: each call is timed alone */
			gmt_python_cache_reset(mode == 2);
			t0 = now_ns();
		}
		for (unsigned k = 0; k < 4; k++)
			ips[k] = 0x1000 + k; /* native frames outside the interpreter */
		got = gmt_python_splice(ips, 4, 256);
		if (mode)
			total += now_ns() - t0;
	}
	if (!mode)
		total = now_ns() - t0;
	Py_END_ALLOW_THREADS return Py_BuildValue("(dI)", total / (double)n, got);
}

static PyMethodDef methods[] = {
    {"splice", splice, METH_VARARGS, "ns per gmt_python_splice call"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "gmtpybench", .m_size = -1,
				    .m_methods = methods};

PyMODINIT_FUNC PyInit_gmtpybench(void)
{
	return PyModule_Create(&module);
}
