"""torch.cuda stand-in (shapes: torch/__init__.py)."""
import os

import _simcuda

from . import _C

_cache = None


class OutOfMemoryError(RuntimeError):
    pass


def init():
    global _cache
    if _cache is None:
        _cache = _simcuda.Cache(20 << 20)


def is_initialized():
    return _cache is not None


def device_count():
    return 1


def memory_stats(device=None):
    if os.environ.get("STANDIN_BREAK"):  # the helper's own error path
        raise ValueError("stand-in broken on purpose")
    if _cache is None:
        return {}
    c = _cache
    out = {}
    for stat, cur, peak in (("allocated_bytes", c.allocated, c.peak_allocated),
                            ("reserved_bytes", c.reserved(), c.peak_reserved),
                            ("active_bytes", c.allocated, c.peak_allocated),
                            ("inactive_split_bytes", c.inactive_split(), c.inactive_split())):
        for pool in ("all", "large_pool", "small_pool"):
            mine = pool != "small_pool"
            out["%s.%s.current" % (stat, pool)] = cur if mine else 0
            out["%s.%s.peak" % (stat, pool)] = peak if mine else 0
    out["num_alloc_retries"] = c.retries
    out["num_ooms"] = c.ooms
    out["num_device_alloc"] = c.num_allocs
    return out


def empty(nbytes):
    init()

    def oom(n):
        for fn in _C._oom_observers:  # pylint: disable=protected-access
            fn(0, n, _cache.allocated, 0)
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % n)

    return _cache.alloc(nbytes, oom)


def del_(block):
    _cache.release(block)
