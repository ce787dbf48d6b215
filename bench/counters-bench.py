"""The cost of the framework-counters helper (bench/counters.sh).

usage: counters-bench.py reading N      -- us per reading of the torch
           stand-in, written through gpumemtrace_counters_v1 (traced)
       counters-bench.py loop SECONDS   -- a CPU-bound pure-Python loop with
           the torch stand-in initialized; prints the iterations done, so
           the helper's thread (if any) shows as fewer of them
"""
import importlib.util
import os
import sys
import time

import torch  # the stand-in (tests/python/standins)

torch.cuda.init()
blocks = [torch.cuda.empty(8 << 20) for _ in range(3)]

if sys.argv[1] == "reading":
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "gmt_counters_bench", os.path.join(here, "..", "python", "counters", "sitecustomize.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # its own helper thread starts too; harmless here
    import ctypes
    import threading

    entry = ctypes.CDLL(None).gpumemtrace_counters_v1
    entry.restype = None
    entry.argtypes = [ctypes.c_uint, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64,
                      ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                      ctypes.POINTER(ctypes.c_uint64)]
    h = mod._Helper(entry)  # pylint: disable=protected-access
    h.lock = threading.RLock()
    n = int(sys.argv[2])
    stats = torch.cuda.memory_stats(0)
    t0 = time.perf_counter()
    for _ in range(n):
        h.guarded(h.PERIODIC)
    t1 = time.perf_counter()
    for _ in range(n):
        torch.cuda.memory_stats(0)
    t2 = time.perf_counter()
    for _ in range(n):
        h.write(h.PERIODIC, "torch", "cuda:0", 0, stats)
    t3 = time.perf_counter()
    print("reading %.1f us (memory_stats %.1f us, write %.1f us), %d counters"
          % ((t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6, (t3 - t2) / n * 1e6,
             len([k for k in stats if k.endswith((".all.current", ".all.peak"))
                  or k.startswith("num_")])))
else:
    end = time.process_time() + float(sys.argv[2])
    w0 = time.monotonic()
    i = 0
    while time.process_time() < end:
        for _ in range(1000):
            i += 1
    wall = time.monotonic() - w0
    # CPU of the process's other Python threads (the helper's; the tracer's
    # own threads are named gmt-*), in us per second of the loop's wall time
    me, other = os.getpid(), 0
    comm = open("/proc/self/comm").read().strip()
    for tid in os.listdir("/proc/self/task"):
        try:
            if int(tid) == me or open("/proc/self/task/%s/comm" % tid).read().strip() != comm:
                continue
            other += int(open("/proc/self/task/%s/schedstat" % tid).read().split()[0])
        except (OSError, ValueError):
            pass
    print(i, int(other / 1000 / wall))
