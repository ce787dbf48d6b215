"""torch.cuda stand-in (shapes: torch/__init__.py)."""
import os

import _simcuda

from . import _C, _caching

_cache = None


class OutOfMemoryError(RuntimeError):
    pass


_queued = []


def _lazy_call(fn, **kwargs):  # pylint: disable=unused-argument
    """Runs fn now if CUDA is initialized, else when it is (torch/cuda/
    __init__.py)."""
    if is_initialized():
        fn()
    else:
        _queued.append(fn)


_initialized = False


def init():
    """_lazy_init: the allocator, then the queued calls."""
    global _initialized
    if not _initialized:
        _initialized = True
        _allocator()
        calls = list(_queued)
        del _queued[:]
        for fn in calls:
            fn()


def _allocator():
    """The C++ side's allocator, made as CUDA's state is (C++ lazyInitDevice)."""
    global _cache
    if _cache is None:
        _cache = _caching.CachingAllocator()
    return _cache


def empty_cache():
    if _cache is not None:
        _cache.release_cached()


def is_initialized():
    """Python's lazy init ran (the C++ allocator may exist before it:
    _record_memory_history makes it without running the queued calls)."""
    return _initialized


def device_count():
    return 1


def memory_stats(device=None):
    if os.environ.get("STANDIN_BREAK"):  # the helper's own error path
        raise ValueError("stand-in broken on purpose")
    if not _initialized:
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


def empty(nbytes, stream=0):
    """A tensor of nbytes on the device: its address (raises OutOfMemoryError)."""
    init()
    addr = _cache.malloc(nbytes, stream)
    if addr is None:
        alloc, free = _cache.last_oom
        _, total = _simcuda.mem_info()
        for fn in _C._oom_observers:  # pylint: disable=protected-access
            fn(0, alloc, total, free)
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % alloc)
    return addr


def del_(addr):
    _cache.free_block(addr)


from . import _memory as memory  # noqa: E402  (torch.cuda.memory; it imports us)
