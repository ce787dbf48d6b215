"""Allocates through the simulated driver from nested Python functions."""
import ctypes
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "pydll"
lib = (ctypes.PyDLL if mode == "pydll" else ctypes.CDLL)("libcuda.so.1")


def check(rc):
    if rc != 0:
        raise SystemExit("CUDA error %d" % rc)


def setup():
    check(lib.cuInit(0))
    ctx = ctypes.c_void_p()
    check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0))
    check(lib.cuCtxSetCurrent(ctx))


def allocate(nbytes):
    ptr = ctypes.c_uint64()
    check(lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)))  # ALLOC LINE
    return ptr.value


def build_layer():
    return allocate(1 << 20)


class Model:
    def forward(self):
        return build_layer()


setup()
p = Model().forward()
print("allocated", p != 0)
