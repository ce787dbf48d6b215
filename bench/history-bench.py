"""The cost of writing PyTorch's allocator history into the trace
(bench/history.sh): the helper's _History.write on a snapshot shaped as
torch.cuda.memory._snapshot() returns one (framework-view.md section 1.2),
made here: N entries (allocs and frees of tensors from a few dozen Python
lines, each with a 12-frame stack), S segments of B blocks.

usage: history-bench.py N S B  -- prints us per entry, us per block
"""
import importlib.util
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "gmt_history_bench",
    os.path.join(here, "..", "python", "gpumemtrace", "_counters", "sitecustomize.py"))
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
import ctypes  # noqa: E402

n, nseg, nblk = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
lines = [[{"filename": "/work/model/layer%d.py" % (i % 7), "line": 10 + j * 3 + i,
           "name": "forward%d" % j} for j in range(12)] for i in range(40)]
t0us = int(time.time() * 1e6)
entries = []
for i in range(n // 2):
    addr = 0x7f0000000000 + (i % 5000) * 4096
    fr = lines[i % 40]
    entries.append({"action": "alloc", "addr": addr, "size": 4096 + i % 77 * 512, "stream": 0,
                    "time_us": t0us + 2 * i, "frames": fr})
    entries.append({"action": "free_completed", "addr": addr, "size": 4096, "stream": 0,
                    "time_us": t0us + 2 * i + 1, "frames": fr})
segs = []
for s in range(nseg):
    base = 0x7e0000000000 + s * (64 << 20)
    blocks = [{"address": base + b * 8192, "size": 8192, "requested_size": 8000,
               "state": "active_allocated" if b % 2 else "inactive",
               "frames": lines[b % 40] if b % 2 else []} for b in range(nblk)]
    segs.append({"device": 0, "address": base, "total_size": nblk * 8192, "stream": 0,
                 "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                 "frames": lines[s % 40], "blocks": blocks})
snap = {"segments": segs, "device_traces": [entries],
        "allocator_settings": {"expandable_segments": False, "max_split_size": -1}}
h = mod._History(ctypes.CDLL(None), n)  # pylint: disable=protected-access
t0, c0 = time.perf_counter(), time.thread_time()
h.write({"segments": [], "device_traces": [entries], "allocator_settings": {}}, 2)
t1, c1 = time.perf_counter(), time.thread_time()
h.write({"segments": segs, "device_traces": [[]], "allocator_settings": {}}, 2)
t2, c2 = time.perf_counter(), time.thread_time()
ne, nb = max(n, 1), max(nseg * nblk, 1)
print("entry: %.2f us CPU (%.2f us wall); block: %.2f us CPU (%.2f us wall)"
      % ((c1 - c0) / ne * 1e6, (t1 - t0) / ne * 1e6, (c2 - c1) / nb * 1e6, (t2 - t1) / nb * 1e6))
