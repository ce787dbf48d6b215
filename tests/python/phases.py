"""Marks phases with python/gpumemtrace (the package's marker API) around allocations on the simulated driver."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import gpumemtrace  # noqa: E402

lib = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
ptr = ctypes.c_uint64()
assert lib.cuInit(0) == 0
assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert lib.cuCtxSetCurrent(ctx) == 0
with gpumemtrace.range("epoch 1"):
    assert lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 20)) == 0
    gpumemtrace.mark("checkpoint \u2713")
gpumemtrace.range_push(b"bytes text")
gpumemtrace.range_pop()
gpumemtrace.counters("cupy", "cuda:0", {"used_bytes": 1 << 20, "flag": True}, ordinal=0)
print("active", gpumemtrace.active())
