"""PyTorch's CUDA caching allocator (the native backend), cut to its
documented rules, for the stand-in torch: real addresses from the simulated
CUDA, and the history PyTorch records (record_trace) and the snapshot it
returns (torch.cuda.memory._snapshot()).

Rules, from PyTorch's c10/cuda/CUDACachingAllocator.cpp, never from what
gpumemtrace's reports expect:
- a request rounds up to a multiple of 512 B (at least 512); <= 1 MiB is the
  small pool, else the large pool; pools are per device, blocks keyed by
  (stream, size, address): a cached block is reused only on its stream;
- the best fit: the smallest free block of the pool and stream that holds
  the request;
- none: a new segment, cudaMalloc of 2 MiB (small), 20 MiB (< 10 MiB) or the
  size rounded up to 2 MiB; if that fails, every unsplit cached segment goes
  back (cudaFree) and it retries once (num_alloc_retries); if that fails too,
  an OOM (num_ooms) with the device's free bytes;
- the chosen block splits when what remains is >= 512 B (small pool) or
  > 1 MiB (large pool); a freed block merges with free neighbours;
- empty_cache() gives back every unsplit cached segment;
- a memory fraction refuses a new segment over it with no driver call.
Left out (not needed by the tests): roundup_power2_divisions,
max_split_size_mb, garbage collection, expandable segments, other streams'
events (recordStream), CUDA graphs' pools.

History (framework-view.md section 1): entries {"action", "addr" (for "oom":
"device_free"), "size", "stream", "time_us", "frames"}; alloc entries carry
the request's size, frees the block's requested size, segment entries the
segment's; frames are Python frames {"filename", "line", "name"}, innermost
first; at most max_entries, the oldest dropped."""
import collections
import os
import sys
import time

import _simcuda

KB, MB = 1 << 10, 1 << 20
MIN_BLOCK = 512
SMALL_SIZE = 1 * MB
SMALL_BUFFER = 2 * MB
MIN_LARGE_ALLOC = 10 * MB
LARGE_BUFFER = 20 * MB
ROUND_LARGE = 2 * MB

_HERE = os.path.dirname(os.path.abspath(__file__))


def round_size(n):
    return MIN_BLOCK if n < MIN_BLOCK else MIN_BLOCK * ((n + MIN_BLOCK - 1) // MIN_BLOCK)


def allocation_size(size):
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)


class Block:
    __slots__ = ("segment", "addr", "size", "requested", "allocated", "prev", "next", "frames",
                 "stream")

    def __init__(self, segment, addr, size, stream):
        self.segment, self.addr, self.size, self.stream = segment, addr, size, stream
        self.requested = 0
        self.allocated = False
        self.prev = self.next = None
        self.frames = None


class Segment:
    __slots__ = ("addr", "size", "small", "stream", "frames", "first")

    def __init__(self, addr, size, small, stream, frames):
        self.addr, self.size, self.small, self.stream, self.frames = \
            addr, size, small, stream, frames
        self.first = None

    def blocks(self):
        b = self.first
        while b:
            yield b
            b = b.next


def _frames():
    """The calling Python frames, innermost first, without the stand-in's
    own (PyTorch's allocator is C++: its first frame is the caller's)."""
    out = []
    f = sys._getframe(1)  # pylint: disable=protected-access
    while f is not None:
        fn = f.f_code.co_filename
        if not os.path.abspath(fn).startswith(_HERE + os.sep):
            out.append({"filename": fn, "line": f.f_lineno, "name": f.f_code.co_name})
        f = f.f_back
    return out


class CachingAllocator:
    """One device's allocator. The attributes the stand-in's memory_stats
    and OOM path read: allocated, peak_allocated, peak_reserved, retries,
    ooms, num_allocs, reserved(), inactive_split(), segment."""

    segment = LARGE_BUFFER  # the smallest large segment

    def __init__(self):
        self.segments = []
        self.free = []  # free blocks, any pool
        self.allowed = None  # the memory fraction's bytes
        self.allocated = self.peak_allocated = self.peak_reserved = 0
        self.requested = 0
        self.retries = self.ooms = self.num_allocs = 0
        self.history = None  # a deque while recording
        self.context = None  # None, "state", "alloc", "all"
        self.by_addr = {}

    # ---- figures ----

    def reserved(self):
        return sum(s.size for s in self.segments)

    def inactive_split(self):
        return sum(b.size for s in self.segments for b in s.blocks()
                   if not b.allocated and (b.prev or b.next))

    def free_room(self):
        return max([b.size for b in self.free] or [0])

    # ---- history ----

    def record(self, action, addr, size, stream, frames=None):
        if self.history is None:
            return
        e = {"action": action, "size": size, "stream": stream,
             "time_us": int(time.time() * 1e6)}
        e["device_free" if action == "oom" else "addr"] = addr
        if frames is not None:
            e["frames"] = frames
        self.history.append(e)

    def context_frames(self, free=False):
        if self.context in ("alloc", "all") and (not free or self.context == "all"):
            return _frames()
        return None

    def set_history(self, enabled, context, max_entries, clear):
        if enabled is None:
            self.history = None
            self.context = None
            return
        old = list(self.history) if self.history is not None and not clear else []
        self.history = collections.deque(old[-max_entries:] if enabled == "all" else [],
                                         maxlen=max_entries if enabled == "all" else 1)
        self.context = context

    # ---- the rules ----

    def best_fit(self, size, small, stream):
        best = None
        for b in self.free:
            if b.segment.small == small and b.stream == stream and b.size >= size and \
                    (best is None or (b.size, b.addr) < (best.size, best.addr)):
                best = b
        return best

    def new_segment(self, size, small, stream, frames):
        want = allocation_size(size)
        if self.allowed is not None and self.reserved() + want > self.allowed:
            return None  # the fraction: refused with no driver call
        ptr = _simcuda.malloc(want)
        if ptr is None:
            return None
        seg = Segment(ptr, want, small, stream, frames)
        seg.first = Block(seg, ptr, want, stream)
        self.segments.append(seg)
        self.free.append(seg.first)
        self.record("segment_alloc", ptr, want, stream, frames)
        self.peak_reserved = max(self.peak_reserved, self.reserved())
        return seg.first

    def release_cached(self):
        """Every unsplit cached segment back to the driver."""
        for seg in list(self.segments):
            b = seg.first
            if not b.allocated and b.next is None:
                self.free.remove(b)
                self.segments.remove(seg)
                self.record("segment_free", seg.addr, seg.size, seg.stream, None)
                _simcuda.free(seg.addr)

    def malloc(self, orig, stream=0):
        """The block's address, or None after the OOM path: (alloc_size,
        device free) in self.last_oom."""
        size = round_size(orig)
        small = size <= SMALL_SIZE
        frames = self.context_frames()
        block = self.best_fit(size, small, stream)
        if block is None:
            block = self.new_segment(size, small, stream, frames)
        if block is None and self.allowed is None:
            self.retries += 1
            self.release_cached()
            block = self.new_segment(size, small, stream, frames)
        if block is None:
            self.ooms += 1
            free, _ = _simcuda.mem_info()
            self.record("oom", free, allocation_size(size), stream, frames)
            self.last_oom = (allocation_size(size), free)
            return None
        self.free.remove(block)
        rest = block.size - size
        if (small and rest >= MIN_BLOCK) or (not small and rest > SMALL_SIZE):
            r = Block(block.segment, block.addr + size, rest, stream)
            r.prev, r.next = block, block.next
            if block.next:
                block.next.prev = r
            block.next = r
            block.size = size
            self.free.append(r)
        block.allocated = True
        block.requested = orig
        block.frames = frames if frames is not None else (
            _frames() if self.context is not None else None)
        self.by_addr[block.addr] = block
        self.allocated += block.size
        self.requested += orig
        self.num_allocs += 1
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.record("alloc", block.addr, orig, stream, frames)
        return block.addr

    def free_block(self, addr):
        block = self.by_addr.pop(addr)
        frames = self.context_frames(free=True)
        self.record("free_requested", addr, block.requested, block.stream, frames)
        self.allocated -= block.size
        self.requested -= block.requested
        block.allocated = False
        self.record("free_completed", addr, block.requested, block.stream, frames)
        block.requested = 0
        block.frames = None
        for other in (block.prev, block.next):  # merge with free neighbours
            if other is not None and not other.allocated:
                self.free.remove(other)
                lo, hi = (other, block) if other is block.prev else (block, other)
                lo.size += hi.size
                lo.next = hi.next
                if hi.next:
                    hi.next.prev = lo
                if hi is block:
                    block = lo
        if block.prev is None:
            block.segment.first = block
        self.free.append(block)

    # ---- the snapshot, as torch.cuda.memory._snapshot() returns it ----

    def snapshot(self):
        segs = []
        for seg in sorted(self.segments, key=lambda s: s.addr):
            blocks = []
            for b in seg.blocks():
                blocks.append({"address": b.addr, "size": b.size,
                               "requested_size": b.requested if b.allocated else 0,
                               "state": "active_allocated" if b.allocated else "inactive",
                               "frames": list(b.frames or [])})
            alloc = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
            segs.append({"device": 0, "address": seg.addr, "total_size": seg.size,
                         "allocated_size": alloc, "active_size": alloc,
                         "requested_size": sum(b["requested_size"] for b in blocks),
                         "stream": seg.stream,
                         "segment_type": "small" if seg.small else "large",
                         "segment_pool_id": (0, 0), "is_expandable": False,
                         "frames": list(seg.frames or []), "blocks": blocks})
        conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF",
                              os.environ.get("PYTORCH_ALLOC_CONF", ""))
        return {
            "segments": segs,
            "device_traces": [list(self.history) if self.history is not None else []],
            "allocator_settings": {
                "PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": -1,
                "garbage_collection_threshold": 0.0, "expandable_segments": False,
                "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
                "pinned_use_cuda_host_register": False,
                "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}},
            "external_annotations": [],
        }
