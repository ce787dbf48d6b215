"""torch.cuda stand-in (shapes: torch/__init__.py)."""
import os

import _simcuda

from . import _C, _caching
from ._C import OutOfMemoryError  # noqa: F401

_cache = None


def set_per_process_memory_fraction(fraction, device=None):
    """The allocator refuses a new segment over fraction x the total, with
    no driver call (framework-view.md §2.5)."""
    init()
    _, total = _simcuda.mem_info()
    _cache.allowed = int(fraction * total)


def _format_size(n):
    """c10's format_size: bytes up to 1 KiB, else two decimals of KiB, MiB,
    GiB (framework-view.md §2.2)."""
    if n <= 1024:
        return "%d bytes" % n
    if n <= 1 << 20:
        return "%.2f KiB" % (n / 1024.0)
    if n <= 1 << 30:
        return "%.2f MiB" % (n / 1048576.0)
    return "%.2f GiB" % (n / 1073741824.0)


def _message(n, free, total, allowed):
    """DeviceCachingAllocator::malloc's message (framework-view.md §2.2)."""
    c = _cache
    return ("CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacity of %s of "
            "which %s is free. Including non-PyTorch memory, this process has %s memory in "
            "use. %sOf the allocated memory %s is allocated by PyTorch, and %s is reserved by "
            "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/"
            "cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
            % (_format_size(n), _format_size(total), _format_size(free),
               _format_size(c.reserved()), "%s allowed; " % _format_size(allowed)
               if allowed is not None else "", _format_size(c.allocated),
               _format_size(c.reserved() - c.allocated)))


_queued = []


def _lazy_call(callable, **kwargs):  # pylint: disable=unused-argument,redefined-builtin
    """Runs callable now if CUDA is initialized, else when it is (torch/cuda/
    __init__.py; the real parameter's name)."""
    if is_initialized():
        callable()
    else:
        _queued.append(callable)


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


# Readings taken (not torch's): a test program waits on it for the helper's
# readings instead of sleeping through a sampling period.
stats_calls = 0


def memory_stats(device=None):
    global stats_calls
    stats_calls += 1
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
    if addr is None:  # the observers (device, alloc, the fraction's bytes or the total, free)
        alloc, free = _cache.last_oom
        _, total = _simcuda.mem_info()
        allowed = _cache.allowed
        for fn in _C._oom_observers:  # pylint: disable=protected-access
            fn(0, alloc, allowed if allowed is not None else total, free)
        raise OutOfMemoryError(_message(alloc, free, total, allowed))
    return addr


def del_(addr):
    _cache.free_block(addr)


from . import _memory as memory  # noqa: E402  (torch.cuda.memory; it imports us)
