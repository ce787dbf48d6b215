"""Allocates through the simulated driver from many shapes of Python code,
and writes, for each allocation, the stack sys._getframe() gives at the
same line (JSON lines in $GMT_EXPECT): t-python-frames compares the
trace's Python frames with it. Each allocation has a size of its own.

Cases: ctypes.CDLL (the GIL released) and ctypes.PyDLL (held), methods,
a generator, asyncio, four threads at once, deep recursion, non-ASCII names, __init__
after warm-up, and with the test's C extension ($GMT_PYEXT, the folder
that holds it, when it could be built): a call
between Py_BEGIN/END_ALLOW_THREADS, a C function calling back into
Python, and a thread that never ran Python."""
import asyncio
import ctypes
import itertools
import json
import os
import sys
import threading

lib_c = ctypes.CDLL("libcuda.so.1")
lib_py = ctypes.PyDLL("libcuda.so.1")
ext = None
if os.environ.get("GMT_PYEXT"):
    sys.path.insert(0, os.environ["GMT_PYEXT"])
    import gmtpyext as ext  # noqa: E402

expected = []
sizes = itertools.count((1 << 20) + 4096, 4096)  # next() is atomic: threads share it


def next_size():
    return next(sizes)


def frames(f):
    out = []
    while f is not None:
        co = f.f_code
        name = co.co_qualname if sys.version_info >= (3, 11) else co.co_name
        out.append([name, co.co_filename, f.f_lineno])
        f = f.f_back
    return out


def expect(size, case, f):
    expected.append({"size": size, "case": case, "frames": frames(f) if f else []})


def check(rc):
    if rc != 0:
        raise SystemExit("CUDA error %d" % rc)


def setup():
    check(lib_py.cuInit(0))
    ctx = ctypes.c_void_p()
    check(lib_py.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0))
    check(lib_py.cuCtxSetCurrent(ctx))
    return ctx


def alloc_c(size, case):
    p = ctypes.c_uint64()
    check(lib_c.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size))); expect(size, case, sys._getframe())  # noqa: E702
    return p.value


def alloc_py(size, case):
    p = ctypes.c_uint64()
    check(lib_py.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size))); expect(size, case, sys._getframe())  # noqa: E702
    return p.value


class Model:
    def forward(self, gil):
        return (alloc_py if gil else alloc_c)(next_size(), "pydll" if gil else "cdll")


def generator(n):
    for _ in range(n):
        yield alloc_c(next_size(), "generator")


async def coroutine_inner():
    await asyncio.sleep(0)
    return alloc_c(next_size(), "asyncio")


async def coroutine_outer():
    return await coroutine_inner()


def recurse(k):
    if k == 0:
        return alloc_c(next_size(), "recursion")
    return recurse(k - 1)


def größe_ünïcødé():
    return alloc_c(next_size(), "non-ascii")


class Модель:
    def вперёд(self):
        return größe_ünïcødé()


class Layer:
    def __init__(self, size):
        if size:
            alloc_c(size, "init")


def thread_body(ctx):
    check(lib_py.cuCtxSetCurrent(ctx))  # a context is current per thread
    for _ in range(3):
        alloc_py(next_size(), "thread")
        alloc_c(next_size(), "thread")


def via_extension():
    size = next_size()
    ext.alloc_nogil(lib_c._handle, size); expect(size, "ext-nogil", sys._getframe())  # noqa: E702
    ext.call(lambda: alloc_c(next_size(), "ext-callback"))
    size = next_size()
    ext.alloc_in_thread(lib_c._handle, size); expect(size, "no-python", None)  # noqa: E702


def main():
    ctx = setup()
    Model().forward(True)
    Model().forward(False)
    list(generator(2))
    asyncio.run(coroutine_outer())
    threads = [threading.Thread(target=thread_body, args=(ctx,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recurse(150)
    Модель().вперёд()
    for _ in range(500):
        Layer(0)
    Layer(next_size())
    if ext:
        via_extension()
    with open(os.environ.get("GMT_EXPECT", "expected.jsonl"), "w") as f:
        for e in expected:
            f.write(json.dumps(e) + "\n")
    print("allocations", len(expected))


main()
