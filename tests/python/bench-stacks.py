"""Benchmark (not a test): ns per cuMemAlloc_v2 + cuMemFree_v2 pair through
ctypes.PyDLL from 11 Python frames, on the simulated driver. Compare

    LD_LIBRARY_PATH=build/sim python3 tests/python/bench-stacks.py 20000
    GPUMEMTRACE_PYTHON=0 LD_PRELOAD=build/libgpumemtrace.so LD_LIBRARY_PATH=build/sim python3 ...
    LD_PRELOAD=build/libgpumemtrace.so LD_LIBRARY_PATH=build/sim python3 ...

interleaved, several times each (docs/performance.md quotes the medians;
`make bench-pyframes` measures the frame reader alone)."""
import ctypes
import sys
import time

lib = ctypes.PyDLL("libcuda.so.1")
ctx, ptr = ctypes.c_void_p(), ctypes.c_uint64()
assert lib.cuInit(0) == 0
assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert lib.cuCtxSetCurrent(ctx) == 0
alloc, free = lib.cuMemAlloc_v2, lib.cuMemFree_v2
ref, size = ctypes.byref(ptr), ctypes.c_size_t(4096)
pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 20000


def leaf():
    start = time.perf_counter()
    for _ in range(pairs):
        alloc(ref, size)
        free(ptr)
    return time.perf_counter() - start


def nest(depth):
    return nest(depth - 1) if depth else leaf()


print("%.0f ns per pair" % (nest(8) / pairs * 1e9))
