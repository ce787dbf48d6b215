#!/usr/bin/env python3
"""Stand-in PyTorch memory snapshots, pickled by Python's own pickle.

The dict has the shape torch.cuda.memory._snapshot() returns (keys from
torch/csrc/cuda/Module.cpp, memorySnapshot; /work/shared/notes/
framework-view.md section 1): segments with their blocks, device_traces,
allocator_settings, external_annotations. As in PyTorch, frame dicts are
shared (py_symbolize makes one dict per distinct frame), a traceback's
list is shared by the entries that carry it, and the key strings are
shared, so the pickle's memo refers back to them.

The history is a small scripted run on each device, consistent with the
caching allocator's rules (segment sizes, splits at the block's start):

  snapgen.py OUT.pickle [--protocol N] [--devices N] [--expandable]
                        [--oom] [--no-time] [--wrap K] [--annotations]
                        [--steps N] [--distinct-frames] [--cpp-frames]

--wrap K drops the first K entries of each device's history, as PyTorch's
ring of max_entries does; --steps repeats the training step (for a large
history: 100,000 steps is ~1M entries); --cpp-frames gives each stack the
C++ frames of stacks="all" as real 2.x snapshots have them (the allocator's
own frames first, files "??" or "", the interpreter's C between Python
frames, the C library last).
"""
import argparse
import pickle
import sys

MiB = 1 << 20
BASE = 0x7F0000000000


def frame(cache, filename, line, name):
    key = (filename, line, name)
    if key not in cache:
        cache[key] = {"filename": filename, "line": line, "name": name}
    return cache[key]


class Device:
    """One device's allocator, scripted: segments, blocks, the history."""

    def __init__(self, index, args, frames):
        self.i = index
        self.args = args
        self.frames = frames
        self.trace = []
        self.segments = {}  # address -> [size, blocks {addr: [size, req, state, tb]}, tb, small]
        self.t = 1_700_000_000_000_000 + index * 1000
        self.next_addr = BASE + index * (1 << 36)
        self.next_large = self.next_addr + (1 << 34)  # expandable: the large reservation
        self.tb_cache = {}

    def tb(self, *frames):
        key = tuple(id(f) for f in frames)
        if key not in self.tb_cache:
            if self.args.cpp_frames:
                f = self.frames
                out = [frame(f, file, line, name) for file, line, name in CPP_TOP]
                for py in frames:
                    out += [py, frame(f, "??", 0, "_PyEval_EvalFrameDefault")]
                out += [frame(f, "??", 0, "__libc_start_main"), frame(f, "??", 0, "_start")]
                self.tb_cache[key] = out
            else:
                self.tb_cache[key] = list(frames)
        return self.tb_cache[key]

    def entry(self, action, addr, size, tb, key="addr"):
        e = {"action": action, key: addr, "size": size, "stream": 0}
        if not self.args.no_time:
            e["time_us"] = self.t
        if tb is not None:
            e["frames"] = tb
        self.t += 7
        self.trace.append(e)

    def new_segment(self, size, tb, small=False):
        if self.args.expandable and not small:
            # the large pool's one reservation: its pages mapped in turn
            addr = self.next_large
            self.next_large += size
        else:
            addr = self.next_addr
            self.next_addr += size + 32 * MiB
        if self.args.expandable:
            self.entry("segment_map", addr, size, tb)
        else:
            self.entry("segment_alloc", addr, size, tb)
        self.segments[addr] = [size, {}, tb, small]
        return addr

    def alloc(self, seg, offset, size, req, tb):
        addr = seg + offset
        self.segments[seg][1][addr] = [size, req, "active_allocated", tb]
        self.entry("alloc", addr, req, tb)
        return addr

    def free(self, seg, addr):
        b = self.segments[seg][1].pop(addr)
        self.entry("free_requested", addr, b[1], b[3])
        self.entry("free_completed", addr, b[1], b[3])

    def run(self):
        f = self.frames
        setup = self.tb(frame(f, "/home/user/train.py", 31, "setup"),
                        frame(f, "/home/user/train.py", 90, "main"))
        fwd = self.tb(frame(f, "/usr/lib/python3/site-packages/torch/nn/modules/linear.py",
                            125, "forward"),
                      frame(f, "/home/user/model.py", 42, "forward"),
                      frame(f, "/home/user/train.py", 55, "step"),
                      frame(f, "/home/user/train.py", 92, "main"))
        bwd = self.tb(frame(f, "/home/user/train.py", 57, "step"),
                      frame(f, "/home/user/train.py", 92, "main"))
        # each new segment right before the alloc it was made for, as
        # PyTorch records them
        small_seg = self.new_segment(2 * MiB, setup, small=True)
        self.alloc(small_seg, 0, 512, 100, setup)
        weights = self.new_segment(40 * MiB, setup)
        self.alloc(weights, 0, 40 * MiB, 40 * MiB - 300, setup)
        act_seg = None
        for step in range(self.args.steps):
            if self.args.distinct_frames:  # a new line each step: the frames pile up
                fwd = self.tb(frame(f, "/home/user/model.py", 1000 + step, "forward"),
                              frame(f, "/home/user/train.py", 55, "step"))
            if act_seg is None:
                act_seg = self.new_segment(20 * MiB, fwd)
            # 6 MiB - 1000 rounds up to 6 MiB - 512; the next block starts there
            a = self.alloc(act_seg, 0, 6 * MiB - 512, 6 * MiB - 1000, fwd)
            b = self.alloc(act_seg, 6 * MiB - 512, 4 * MiB, 4 * MiB, bwd)
            self.free(act_seg, a)
            self.free(act_seg, b)
            if self.args.annotations and step < 3:
                pass
        if self.args.oom:
            self.entry("oom", 3 * MiB, 128 * MiB, bwd, key="device_free")
        kept = self.alloc(act_seg, 0, 2 * MiB, 2 * MiB - 4, bwd)
        del kept
        if self.args.wrap:
            self.trace = self.trace[self.args.wrap:]

    def segment_dicts(self):
        out = []
        for addr in sorted(self.segments):
            size, blocks, tb, small = self.segments[addr]
            bl, at = [], addr
            for baddr in sorted(blocks):
                if baddr > at:
                    bl.append({"address": at, "size": baddr - at, "requested_size": 0,
                               "state": "inactive", "frames": EMPTY})
                bsize, req, state, btb = blocks[baddr]
                bl.append({"address": baddr, "size": bsize, "requested_size": req,
                           "state": state, "frames": btb})
                at = baddr + bsize
            if at < addr + size:
                bl.append({"address": at, "size": addr + size - at, "requested_size": 0,
                           "state": "inactive", "frames": EMPTY})
            active = sum(b["size"] for b in bl if b["state"] != "inactive")
            out.append({"device": self.i, "address": addr, "total_size": size,
                        "allocated_size": active, "active_size": active,
                        "requested_size": sum(b["requested_size"] for b in bl),
                        "stream": 0, "segment_type": "small" if small else "large",
                        "segment_pool_id": (0, 0), "is_expandable": self.args.expandable,
                        "frames": tb, "blocks": bl})
        return out


EMPTY = []
# The innermost frames of a real snapshot's stacks="all" traceback (names as
# 2.x records them; the files are what its symbolizer finds: often none).
CPP_TOP = [
    ("??", 0, "torch::unwind::unwind()"),
    ("??", 0, "torch::CapturedTraceback::gather(bool, bool, bool)"),
    ("memory_snapshot.cpp", 0, "torch::cuda::(anonymous namespace)::gather_with_cpp()"),
    ("CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::Native::"
     "DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
    ("", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::"
     "malloc(void**, signed char, unsigned long, CUstream_st*)"),
    ("??", 0, "at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, "
     "std::optional<c10::Device>, std::optional<c10::MemoryFormat>)"),
    ("python_torch_functions_0.cpp", 0,
     "torch::autograd::THPVariable_empty(_object*, _object*, _object*)"),
    ("/usr/src/python-3.11/Objects/methodobject.c", 543, "cfunction_call"),
]


def build(args):
    frames = {}
    devs = [Device(i, args, frames) for i in range(args.devices)]
    for d in devs:
        d.run()
    segments = [s for d in devs for s in d.segment_dicts()]
    conf = "expandable_segments:True" if args.expandable else ""
    snap = {
        "segments": segments,
        "device_traces": [d.trace for d in devs],
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": conf,
            "max_split_size": -1,
            "garbage_collection_threshold": 0.0,
            "expandable_segments": args.expandable,
            "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {str(1 << k): 0 for k in range(16)},
        },
        "external_annotations": [],
    }
    if args.annotations:
        t0 = devs[0].trace[0].get("time_us", 0) if devs[0].trace else 0
        for i, (stage, name) in enumerate([("START", "forward"), ("END", "forward"),
                                           ("START", "backward"), ("END", "backward")]):
            snap["external_annotations"].append({"stage": stage, "name": name, "device": 0,
                                                 "time_us": t0 + 10 * (i + 1)})
    return snap


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--protocol", type=int, default=pickle.DEFAULT_PROTOCOL)
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--expandable", action="store_true")
    p.add_argument("--oom", action="store_true")
    p.add_argument("--no-time", action="store_true")
    p.add_argument("--wrap", type=int, default=0)
    p.add_argument("--annotations", action="store_true")
    p.add_argument("--cpp-frames", action="store_true")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--distinct-frames", action="store_true")
    args = p.parse_args()
    snap = build(args)
    with open(args.out, "wb") as f:
        pickle.dump(snap, f, protocol=args.protocol)
    return 0


if __name__ == "__main__":
    sys.exit(main())
