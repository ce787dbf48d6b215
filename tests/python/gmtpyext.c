/* The test's C extension (t-python-frames): calls the simulated driver
 * with the GIL released, calls back into Python, and allocates from a
 * thread that never runs Python. Built by the test with the headers of
 * the interpreter under test. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

typedef int (*alloc_fn)(uint64_t *ptr, size_t size);
typedef int (*retain_fn)(void **ctx, int dev);
typedef int (*set_fn)(void *ctx);

static alloc_fn find_alloc(PyObject *handle)
{
	void *h = PyLong_AsVoidPtr(handle);
	return h ? (alloc_fn)dlsym(h, "cuMemAlloc_v2") : NULL;
}

static PyObject *alloc_nogil(PyObject *self, PyObject *args)
{
	PyObject *handle;
	Py_ssize_t size;
	if (!PyArg_ParseTuple(args, "On", &handle, &size))
		return NULL;
	alloc_fn alloc = find_alloc(handle);
	if (!alloc)
		return PyErr_Format(PyExc_RuntimeError, "no cuMemAlloc_v2");
	uint64_t ptr = 0;
	int rc;
	Py_BEGIN_ALLOW_THREADS rc = alloc(&ptr, (size_t)size);
	Py_END_ALLOW_THREADS if (rc) return PyErr_Format(PyExc_RuntimeError, "cuMemAlloc_v2: %d",
							 rc);
	return PyLong_FromUnsignedLongLong(ptr);
}

static PyObject *call(PyObject *self, PyObject *fn)
{
	return PyObject_CallObject(fn, NULL);
}

struct job {
	void *handle;
	size_t size;
	int rc;
};

static void *thread_main(void *arg)
{
	struct job *j = arg;
	retain_fn retain = (retain_fn)dlsym(j->handle, "cuDevicePrimaryCtxRetain");
	set_fn set = (set_fn)dlsym(j->handle, "cuCtxSetCurrent");
	alloc_fn alloc = (alloc_fn)dlsym(j->handle, "cuMemAlloc_v2");
	void *ctx = NULL;
	uint64_t ptr;
	j->rc = !retain || !set || !alloc || retain(&ctx, 0) || set(ctx) || alloc(&ptr, j->size);
	return NULL;
}

static PyObject *alloc_in_thread(PyObject *self, PyObject *args)
{
	PyObject *handle;
	Py_ssize_t size;
	if (!PyArg_ParseTuple(args, "On", &handle, &size))
		return NULL;
	struct job j = {PyLong_AsVoidPtr(handle), (size_t)size, 1};
	pthread_t t;
	int err;
	Py_BEGIN_ALLOW_THREADS err = pthread_create(&t, NULL, thread_main, &j);
	if (!err)
		pthread_join(t, NULL);
	Py_END_ALLOW_THREADS if (err || j.rc) return PyErr_Format(PyExc_RuntimeError,
								  "thread failed");
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"alloc_nogil", alloc_nogil, METH_VARARGS, "cuMemAlloc_v2 with the GIL released"},
    {"call", call, METH_O, "calls fn() from C"},
    {"alloc_in_thread", alloc_in_thread, METH_VARARGS, "cuMemAlloc_v2 from a new C thread"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "gmtpyext", .m_size = -1,
				    .m_methods = methods};

PyMODINIT_FUNC PyInit_gmtpyext(void)
{
	return PyModule_Create(&module);
}
