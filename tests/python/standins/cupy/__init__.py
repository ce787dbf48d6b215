"""A stand-in for CuPy in t-api-framework-oom: the shapes of the APIs the
helper (python/gpumemtrace/_counters/sitecustomize.py) calls.

- cupy.get_default_memory_pool() -> MemoryPool: used_bytes(), total_bytes(),
  free_bytes(), free_all_blocks(), set_limit(size=), get_limit() (0: none).
- cupy.cuda.memory.OutOfMemoryError(size, total, limit=0), a MemoryError:
  "Out of memory allocating N bytes (allocated so far: M bytes[, limit set
  to: L bytes])." with comma thousands separators (framework-view.md §5).
- cupy.cuda.runtime.getDevice() -> the current device.
Here each array is a driver allocation of its 512-rounded size, kept in
the pool when freed; a request fits a free chunk or takes a new one
(frameworks.md §3). Test-only: cupy.zeros(nbytes) -> a chunk, cupy.del_(chunk).
"""
import os

from cupy import cuda  # noqa: F401
from cupy.cuda import memory

_pool = memory.MemoryPool(int(os.environ.get("CUPY_GPU_MEMORY_LIMIT", "0") or 0))


def get_default_memory_pool():
    return _pool


def zeros(nbytes):
    return _pool.malloc(nbytes)


def del_(chunk):
    _pool.release(chunk)
