"""The pytest plugin, driven with pytest's own pytester on tests that
allocate through the simulated CUDA (tests/sim's libcudart.so.13, by
ctypes): the final table, per-test limits naming the Python line, the
baseline gate, what a peak counts, and the restart under the tracer."""
import json
import os
import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]

CUDA = '''
import ctypes
import pytest

_rt = ctypes.CDLL("libcudart.so.13")
_kept = []

def alloc(n):
    p = ctypes.c_void_p()
    assert _rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0
    return p

def free(p):
    assert _rt.cudaFree(p) == 0

MiB = 1 << 20
'''


@pytest.fixture
def run(pytester, gmt, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.path.join(gmt.root, "python"))
    monkeypatch.setenv("LD_LIBRARY_PATH", gmt.sim)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv("GPUMEMTRACE_PYTEST_REEXEC", raising=False)
    monkeypatch.setenv("GPUMEMTRACE_OUTPUT", str(pytester.path / "gpumemtrace.%p.gmt"))
    # only the plugins named here (an installed gpumemtrace would load twice)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    def go(*args):
        return pytester.runpytest_subprocess("-p", "gpumemtrace.pytest_plugin", "-p",
                                             "no:cacheprovider", *args)
    return go


def _trace(pytester):
    found = sorted(pytester.path.glob("gpumemtrace.*.gmt"))
    assert found, "no trace written"
    return str(found[-1])


def test_table_and_ranges(pytester, run):
    pytester.makepyfile(test_mem=CUDA + '''
def test_small():
    free(alloc(1 * MiB))

def test_big():
    a = alloc(64 * MiB)
    _kept.append(alloc(16 * MiB))
    free(a)

def test_none():
    pass
''')
    r = run("--gpumemtrace")
    r.assert_outcomes(passed=3)
    out = r.stdout.str()
    assert "gpumemtrace: GPU memory by test" in out
    table = [line for line in r.stdout.lines if line.rstrip().endswith(("test_big", "test_small",
                                                                        "test_none"))]
    assert table[0].split() == ["80.0", "MiB", "16.0", "MiB", "2", "test_mem.py::test_big"], table
    assert table[1].split()[:5] == ["1.0", "MiB", "0", "B", "1"], table
    assert table[2].split()[:5] == ["0", "B", "0", "B", "0"], table
    import gpumemtrace
    ranges = gpumemtrace.load(_trace(pytester)).ranges.to_pylist()
    pushed = [x["text"] for x in ranges if x["op"] == "push"]
    assert pushed == ["pytest test_mem.py::test_small", "pytest test_mem.py::test_big",
                      "pytest test_mem.py::test_none"]


def test_limit_names_the_line(pytester, run):
    pytester.makepyfile(test_lim=CUDA + '''
@pytest.mark.limit_gpu_memory("32 MiB")
def test_over():
    a = alloc(48 * MiB)
    free(a)

@pytest.mark.limit_gpu_memory("64 MiB")
def test_under():
    free(alloc(48 * MiB))

def test_global():
    free(alloc(200 * MiB))
''')
    r = run("--gpu-memory-limit", "128MiB")
    r.assert_outcomes(passed=1, failed=2)
    out = r.stdout.str()
    assert "peaked at 48.0 MiB, over its limit of 32.0 MiB (limit_gpu_memory('32 MiB'))" in out
    assert "over its limit of 128.0 MiB (--gpu-memory-limit 128MiB)" in out
    # the site, its Python line, and the test that called it (CUDA is 17 lines)
    assert "alloc (test_lim.py:9) <- test_over (test_lim.py:19)" in out, out


def test_peak_counts_the_tests_own_allocations(pytester, run):
    pytester.makepyfile(test_own=CUDA + '''
def test_a():
    _kept.append(alloc(100 * MiB))

@pytest.mark.limit_gpu_memory("10 MiB")
def test_b():
    free(_kept.pop())        # memory of test_a: not counted either way
    free(alloc(8 * MiB))
''')
    r = run("--gpumemtrace")
    r.assert_outcomes(passed=2)
    line = [x for x in r.stdout.lines if x.endswith("test_own.py::test_b")][0]
    assert line.split()[:2] == ["8.0", "MiB"], line


def test_each_test_is_measured_after_one_flush(pytester, run, monkeypatch):
    """With the periodic flush a minute away, only the plugin's wait
    (gpumemtrace_flush_v1) writes each test's events: every test's own
    allocation is in the file when it is measured (a wait that returned
    before the cycle that read the test's last record would leave its
    range out, or its peak short)."""
    monkeypatch.setenv("GPUMEMTRACE_FLUSH_MS", "60000")
    pytester.makepyfile(test_many=CUDA + '''
@pytest.mark.parametrize("k", range(1, 61))
def test_k(k):
    free(alloc(k * MiB))
''')
    r = run("--gpumemtrace", "--gpumemtrace-top", "100")
    r.assert_outcomes(passed=60)
    assert "not measured" not in r.stdout.str()
    rows = {x.split()[-1]: x.split()[:2] for x in r.stdout.lines if "test_many.py::test_k[" in x}
    assert len(rows) == 60
    for k in range(1, 61):
        assert rows["test_many.py::test_k[%d]" % k] == ["%.1f" % k, "MiB"], rows


TORCH = '''
import pytest
import torch  # tests/python/standins: a caching allocator on the simulated CUDA

MiB = 1 << 20
'''


def test_reserved_counts_the_frameworks_cache(pytester, gmt, run, monkeypatch):
    """--gpumemtrace-framework-counters: a test that reuses the cache an
    earlier test left makes no CUDA call (peak 0) but the framework held
    its reserved bytes meanwhile; a limit on reserved fails it, naming
    what was reserved at its start."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([
        os.path.join(gmt.root, "python"), os.path.join(gmt.root, "tests", "python", "standins")]))
    pytester.makepyfile(test_fw=TORCH + '''
def test_fills():
    torch.cuda.del_(torch.cuda.empty(64 * MiB))   # back into the cache

@pytest.mark.limit_gpu_memory("32 MiB", on="reserved")
def test_reuses():
    torch.cuda.del_(torch.cuda.empty(48 * MiB))   # from the cache: no CUDA call

@pytest.mark.limit_gpu_memory("32 MiB")
def test_reuses_cuda_limit():
    torch.cuda.del_(torch.cuda.empty(48 * MiB))
''')
    r = run("--gpumemtrace-framework-counters")
    r.assert_outcomes(passed=2, failed=1)
    out = r.stdout.str()
    rows = {x.split()[-1]: x.split() for x in r.stdout.lines if "test_fw.py::" in x
            and x.split()[0][0].isdigit()}
    # the block went back into the cache: the segment is still live
    assert rows["test_fw.py::test_fills"][:6] == ["64.0", "MiB", "64.0", "MiB", "1", "64.0"], rows
    assert rows["test_fw.py::test_reuses_cuda_limit"][:6] == ["0", "B", "0", "B", "0", "64.0"]
    assert "reserved bytes peaked at 64.0 MiB during the test, over its limit of 32.0 MiB " \
        "(limit_gpu_memory('32 MiB', on='reserved'))" in out, out
    assert "(64.0 MiB of them were reserved at its start" in out, out
    assert "reserved: the most the framework held from the driver during the test" in out


def test_reserved_limit_needs_counters(pytester, gmt, run):
    """A limit on reserved with no counters helper (under `gpumemtrace
    run` without --framework-counters) fails the test, never passes it."""
    pytester.makepyfile(test_nc=CUDA + '''
@pytest.mark.limit_gpu_memory("32 MiB", on="reserved")
def test_x():
    free(alloc(1 * MiB))
''')
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    r = subprocess.run([gmt.cli, "run", "-q", "--", sys.executable, "-m", "pytest", "-p",
                        "gpumemtrace.pytest_plugin", "-p", "no:cacheprovider", "--gpumemtrace"],
                       cwd=str(pytester.path), env=env, capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "reserved bytes could not be measured" in r.stdout, r.stdout


def test_baseline_gate(pytester, run):
    body = CUDA + '''
def test_grows():
    free(alloc(int(SIZE * MiB)))
'''
    pytester.makepyfile(test_base=body.replace("SIZE", "10"))
    r = run("--gpumemtrace-baseline", "b.json", "--gpumemtrace-update-baseline")
    r.assert_outcomes(passed=1)
    base = json.loads((pytester.path / "b.json").read_text())
    assert base["tests"]["test_base.py::test_grows"]["peak_bytes"] == 10 << 20
    pytester.makepyfile(test_base=body.replace("SIZE", "10.5"))  # within 10%
    run("--gpumemtrace-baseline", "b.json").assert_outcomes(passed=1)
    pytester.makepyfile(test_base=body.replace("SIZE", "20"))
    r = run("--gpumemtrace-baseline", "b.json")
    r.assert_outcomes(failed=1)
    assert "above its baseline of 10.0 MiB (b.json)" in r.stdout.str()


def test_missing_baseline_is_a_usage_error(pytester, run):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    r = run("--gpumemtrace-baseline", "nope.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR


def test_under_gpumemtrace_run(pytester, gmt, run):
    """Started by `gpumemtrace run`: no restart, the same figures."""
    pytester.makepyfile(test_r=CUDA + "def test_a():\n    free(alloc(3 * MiB))\n")
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    p = subprocess.run([gmt.cli, "run", "-q", "--", sys.executable, "-m", "pytest", "-p",
                        "gpumemtrace.pytest_plugin", "-p", "no:cacheprovider", "--gpumemtrace"],
                       cwd=str(pytester.path), env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "3.0 MiB" in p.stdout and "cannot restart" not in p.stderr


def test_without_options_nothing_happens(pytester, run):
    pytester.makepyfile(test_q=CUDA + "def test_a():\n    free(alloc(1 * MiB))\n")
    r = run()
    r.assert_outcomes(passed=1)
    assert "gpumemtrace" not in r.stdout.str()
    assert not list(pytester.path.glob("gpumemtrace.*.gmt"))


def test_xdist_workers(pytester, run):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_x=CUDA + '''
@pytest.mark.limit_gpu_memory("4 MiB")
def test_a():
    free(alloc(6 * MiB))

def test_b():
    free(alloc(2 * MiB))
''')
    r = run("-p", "xdist.plugin", "-n", "2", "--gpumemtrace")
    r.assert_outcomes(passed=1, failed=1)
    assert "over its limit of 4.0 MiB" in r.stdout.str()
    assert any(x.endswith("test_x.py::test_b") and x.split()[:2] == ["2.0", "MiB"]
               for x in r.stdout.lines)
