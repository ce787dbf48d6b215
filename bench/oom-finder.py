"""The cost the framework-OOM capture of `run --framework-counters` adds to
every import: its meta path finder (_TorchCudaWatch in
python/gpumemtrace/_counters/sitecustomize.py), called for a module not yet
imported, against an empty Python function with the same arguments, in one
process (a ratio, so the machine's load cancels). docs/performance.md.

    python3 bench/oom-finder.py [CALLS]"""
import importlib.util
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "helper", os.path.join(here, "..", "python", "gpumemtrace", "_counters", "sitecustomize.py"))
helper = importlib.util.module_from_spec(spec)
spec.loader.exec_module(helper)  # untraced: it installs nothing
finder = helper._TorchCudaWatch(None)  # pylint: disable=protected-access
finder.callbacks.append(lambda torch, cuda: None)  # armed, as with the helper on
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000


def empty(name, path=None, target=None):  # pylint: disable=unused-argument
    return None


t0 = time.perf_counter()
for _ in range(n):
    finder.find_spec("json", None)
t1 = time.perf_counter()
for _ in range(n):
    empty("json", None)
t2 = time.perf_counter()
print("find_spec %.0f ns/call, an empty function %.0f ns/call: %.2fx (load %s)" % (
    (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9, (t1 - t0) / (t2 - t1),
    open("/proc/loadavg").read().split()[0]))
