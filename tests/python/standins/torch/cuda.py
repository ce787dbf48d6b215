"""torch.cuda stand-in (shapes: torch/__init__.py)."""
import os

import _simcuda

from . import _C
from ._C import OutOfMemoryError  # noqa: F401

_cache = None
_fraction = None


def set_per_process_memory_fraction(fraction, device=None):
    global _fraction
    init()
    _fraction = fraction


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


def _lazy_call(fn, **kwargs):
    """Runs fn now if CUDA is initialized, else at its initialization."""
    if is_initialized():
        fn()
    else:
        _queued.append(fn)


def init():
    global _cache
    if _cache is None:
        _cache = _simcuda.Cache(20 << 20)
        for fn in _queued:
            fn()
        del _queued[:]


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
        free, total = _simcuda.mem_info()
        allowed = int(_fraction * total) if _fraction is not None else None
        for fn in _C._oom_observers:  # pylint: disable=protected-access
            fn(0, n, allowed if allowed is not None else total, free)
        raise OutOfMemoryError(_message(n, free, total, allowed))

    if _fraction is not None:  # refused before any driver call (§2.5)
        free, total = _simcuda.mem_info()
        if _cache.free_room() < nbytes and \
                _cache.reserved() + max(nbytes, _cache.segment) > _fraction * total:
            _cache.ooms += 1
            oom(nbytes)
    return _cache.alloc(nbytes, oom)


def del_(block):
    _cache.release(block)
