"""cudaMalloc/cudaFree on the simulated runtime (tests/sim), for the
framework stand-ins of t-api-framework-counters: they make real traced
calls, so the trace has events beside the counters."""
import ctypes

_rt = ctypes.CDLL("libcudart.so.13")
_rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
_rt.cudaFree.argtypes = [ctypes.c_void_p]
_rt.cudaMemGetInfo.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]


def mem_info():
    """(free, total) of the simulated device, as cudaMemGetInfo says."""
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    _rt.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total))
    return free.value, total.value


def malloc(nbytes):
    """The pointer, or None when the device is out of memory."""
    p = ctypes.c_void_p()
    return p.value if _rt.cudaMalloc(ctypes.byref(p), nbytes) == 0 else None


def free(ptr):
    _rt.cudaFree(ptr)


class Cache:
    """A caching allocator cut to what the counters need: segments from
    cudaMalloc (at least `segment` bytes), tensors placed first-fit by bytes
    (no addresses), freed tensors' bytes kept in their segment."""

    def __init__(self, segment):
        self.segment = segment
        self.segs = []  # [ptr, size, used]
        self.allocated = self.peak_allocated = self.peak_reserved = 0
        self.retries = self.ooms = self.num_allocs = 0

    def reserved(self):
        return sum(s[1] for s in self.segs)

    def free_room(self):
        """The most one segment still has free."""
        return max([s[1] - s[2] for s in self.segs] or [0])

    def inactive_split(self):
        return sum(s[1] - s[2] for s in self.segs if s[2])

    def _place(self, n):
        for s in self.segs:
            if s[1] - s[2] >= n:
                s[2] += n
                return s
        return None

    def alloc(self, n, on_oom=None):
        seg = self._place(n)
        if seg is None:
            size = max(n, self.segment)
            ptr = malloc(size)
            if ptr is None:  # free the cache and retry, as PyTorch does
                self.retries += 1
                for s in [s for s in self.segs if not s[2]]:
                    free(s[0])
                    self.segs.remove(s)
                ptr = malloc(size)
            if ptr is None:
                self.ooms += 1
                if on_oom:
                    on_oom(n)
                return None
            self.segs.append([ptr, size, 0])
            seg = self._place(n)
        self.allocated += n
        self.num_allocs += 1
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved())
        return (seg, n)

    def release(self, block):
        seg, n = block
        seg[2] -= n
        self.allocated -= n
