"""pytest --gpumemtrace: each test's GPU memory, per-test limits and a
baseline gate (docs/pytest.md).

    pytest --gpumemtrace                          # a table of the tests with the highest GPU peak
    pytest --gpu-memory-limit 2GiB                # fail any test that peaks above 2 GiB
    @pytest.mark.limit_gpu_memory("512 MiB")      # one test's own limit
    pytest --gpumemtrace-baseline peaks.json      # fail a test that grew beyond the tolerance

A test's figures are those of the device memory its own process allocated
through CUDA between the start and the end of its call (any thread), as
the trace records them: `peak` is the most those allocations held at once,
`left` what they still held at the end. Memory allocated before the test
(a model fixture, a framework's cache) is not counted, and memory a
framework hands out from its cache makes no CUDA call: with
--gpumemtrace-framework-counters, `reserved` is what the framework (PyTorch,
JAX) held from the driver at its most during the test, its cache included,
and `--gpu-memory-limit-on reserved` puts the limits on it. See
docs/pytest.md.

The tracer must be loaded before CUDA starts, so when pytest was not
started under it (`gpumemtrace run -- pytest ...`), the plugin restarts
pytest under it once, before collecting. Registered through the package's
entry point (pytest11); without its options it does nothing.
"""
import ctypes
import json
import os
import re
import sys

import pytest

PREFIX = "pytest "  # the ranges the plugin pushes: "pytest " + node id
_REEXEC = "GPUMEMTRACE_PYTEST_REEXEC"
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6,
          "mib": 1 << 20, "g": 1 << 30, "gb": 10**9, "gib": 1 << 30, "t": 1 << 40,
          "tb": 10**12, "tib": 1 << 40}


def parse_size(text):
    """'2GiB', '512 MiB', '1.5GB', 4096 -> bytes (as the CLI's sizes)."""
    if isinstance(text, int) and text >= 0:
        return text
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("bad size %r (e.g. 2GiB, 512MiB, 1.5GB, 4096)" % (text,))
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def fmt_size(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return "%.1f %s" % (n / div, unit)
    return "%d B" % n


def pytest_addoption(parser):
    g = parser.getgroup("gpumemtrace", "GPU memory (gpumemtrace)")
    g.addoption("--gpumemtrace", action="store_true",
                help="trace the run's GPU memory (each test is a range in the trace) and end "
                "with a table of the tests with the highest GPU peak")
    g.addoption("--gpu-memory-limit", metavar="SIZE",
                help="fail a test whose GPU peak exceeds SIZE (2GiB, 512MiB); "
                "@pytest.mark.limit_gpu_memory overrides it (implies --gpumemtrace)")
    g.addoption("--gpumemtrace-baseline", metavar="FILE",
                help="fail a test whose peak exceeds its peak in FILE beyond the tolerance "
                "(implies --gpumemtrace); --gpumemtrace-update-baseline writes FILE")
    g.addoption("--gpumemtrace-update-baseline", action="store_true",
                help="write every test's peak to the --gpumemtrace-baseline FILE, check nothing")
    g.addoption("--gpumemtrace-tolerance", metavar="PCT[,SIZE]", default="10%,1MiB",
                help="a baseline regression is a peak above the baseline by more than PCT "
                "and by more than SIZE (default 10%%,1MiB)")
    g.addoption("--gpu-memory-limit-on", choices=("cuda", "reserved"), default="cuda",
                help="the figure the limits and the baseline check: cuda (default: the test's "
                "own CUDA allocations) or reserved (what the framework held from the driver "
                "during the test, its cache included; implies "
                "--gpumemtrace-framework-counters)")
    g.addoption("--gpumemtrace-framework-counters", action="store_true",
                help="also read the frameworks' own counters (PyTorch's, JAX's reserved bytes) "
                "at each test's start and end, as `gpumemtrace run --framework-counters` "
                "(implies --gpumemtrace)")
    g.addoption("--gpumemtrace-top", metavar="N", type=int, default=10,
                help="rows in the final table (default 10)")
    g.addoption("--gpumemtrace-output", metavar="PATH",
                help="the trace's path template (GPUMEMTRACE_OUTPUT; default gpumemtrace.%%p.gmt)")


def _wanted(config):
    get = config.getoption
    return bool(get("gpumemtrace") or get("gpu_memory_limit") or get("gpumemtrace_baseline") or
                get("gpumemtrace_framework_counters") or get("gpu_memory_limit_on") == "reserved")


def _counters_wanted(get):
    return bool(get("gpumemtrace_framework_counters", False) or
                get("gpu_memory_limit_on", None) == "reserved")


def _counters_helper():
    """The framework-counters helper's reading(), when it runs in this
    process (_counters/sitecustomize.py offers it), else None."""
    mod = sys.modules.get("_gpumemtrace_counters")
    return getattr(mod, "reading", None)


def _tracer_loaded():
    try:
        ctypes.CDLL(None).gpumemtrace_flush_v1  # pylint: disable=expression-not-assigned
        return True
    except AttributeError:
        return False


def _argv():
    orig = getattr(sys, "orig_argv", None)  # 3.10+: with the interpreter's own options
    if orig:
        return [sys.executable] + orig[1:]
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name in ("pytest.__main__", "pytest"):
        return [sys.executable, "-m", "pytest"] + sys.argv[1:]
    return [sys.executable] + sys.argv


def _restart_traced(ns):
    """Starts pytest again under the tracer (returns only if it cannot)."""
    from . import _paths  # pylint: disable=import-outside-toplevel

    lib = _paths.library()
    if not lib or not os.path.exists(lib):
        return "libgpumemtrace.so not found"
    env = dict(os.environ)
    env[_REEXEC] = "1"
    env["LD_PRELOAD"] = lib + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env.setdefault("NVTX_INJECTION64_PATH", lib)  # torch.cuda.nvtx ranges, as `run` does
    if _counters_wanted(lambda k, d=None: getattr(ns, k, d)):
        helper = _paths.counters_helper()
        if not helper:
            return "the framework-counters helper is not in the package"
        env["PYTHONPATH"] = helper + (os.pathsep + env["PYTHONPATH"]
                                      if env.get("PYTHONPATH") else "")
    if getattr(ns, "gpumemtrace_output", None):
        env["GPUMEMTRACE_OUTPUT"] = ns.gpumemtrace_output
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, _argv(), env)
    except OSError as err:
        return str(err)
    return "exec returned"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Before output capture starts and before any conftest.py runs: the
    restart under the tracer, when the options want one."""
    ns = early_config.known_args_namespace
    want = getattr(ns, "gpumemtrace", False) or getattr(ns, "gpu_memory_limit", None) or \
        getattr(ns, "gpumemtrace_baseline", None) or \
        _counters_wanted(lambda k, d=None: getattr(ns, k, d))
    if want and not _tracer_loaded() and not os.environ.get(_REEXEC):
        why = _restart_traced(ns)
        sys.stderr.write("gpumemtrace: cannot restart pytest under the tracer: %s\n" % why)
    yield


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "limit_gpu_memory(size, on='cuda'): fail the test if its GPU memory peak "
        "exceeds size (gpumemtrace; '2GiB', '512 MiB'; on='reserved': the framework's reserved "
        "bytes)")
    if not _wanted(config):
        return
    plugin = GpuMemPlugin(config)
    if not plugin.active:
        gates = config.getoption("gpu_memory_limit") or config.getoption("gpumemtrace_baseline")
        if gates:  # a gate must never pass on nothing
            raise pytest.UsageError("gpumemtrace: the tracer is not loaded (%s): GPU memory "
                                    "limits cannot be checked" % plugin.why)
        sys.stderr.write("gpumemtrace: not tracing: %s\n" % plugin.why)
    config.pluginmanager.register(plugin, "gpumemtrace-plugin")


class GpuMemPlugin:
    """The per-test figures, limits, baseline and final table."""

    def __init__(self, config):
        self.config = config
        self.results = {}  # node id -> figures (from this process or xdist workers)
        self.follow = None
        self.path = None
        self.why = ""
        self.lost_note = None
        self.limit = None
        opt = config.getoption
        if opt("gpu_memory_limit"):
            self.limit = parse_size(opt("gpu_memory_limit"))
        self.tolerance = self._tolerance(opt("gpumemtrace_tolerance"))
        self.baseline_path = opt("gpumemtrace_baseline")
        self.update = opt("gpumemtrace_update_baseline")
        self.baseline = {}
        if self.baseline_path and not self.update and os.path.exists(self.baseline_path):
            with open(self.baseline_path, encoding="utf-8") as f:
                self.baseline = json.load(f).get("tests", {})
        elif self.baseline_path and not self.update:
            raise pytest.UsageError("gpumemtrace: --gpumemtrace-baseline %s: no such file (make "
                                    "it with --gpumemtrace-update-baseline)" % self.baseline_path)
        self.on = opt("gpu_memory_limit_on")
        self.lib = None
        self.active = self._setup()
        self.reading = _counters_helper() if self.active else None
        if self.active and _counters_wanted(opt) and self.reading is None:
            self.counters_why = ("the framework-counters helper is not loaded (pytest started "
                                 "under the tracer without it: use `gpumemtrace run "
                                 "--framework-counters -- pytest ...`)")
            sys.stderr.write("gpumemtrace: no framework counters: %s\n" % self.counters_why)
        else:
            self.counters_why = "no framework counters (--gpumemtrace-framework-counters)"

    @staticmethod
    def _tolerance(text):
        pct, _, size = str(text).partition(",")
        try:
            return (float(pct.rstrip("%")) / 100.0, parse_size(size) if size else 0)
        except ValueError as err:
            raise pytest.UsageError("--gpumemtrace-tolerance: %s" % err) from None

    def _setup(self):
        try:
            lib = ctypes.CDLL(None)
            self.flush = lib.gpumemtrace_flush_v1
            self.trace_path = lib.gpumemtrace_trace_path_v1
        except AttributeError:
            self.why = ("pytest is not running under libgpumemtrace.so (LD_PRELOAD), and could "
                        "not be restarted under it")
            return False
        self.flush.argtypes = [ctypes.c_uint]
        self.flush.restype = ctypes.c_int
        self.trace_path.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self.trace_path.restype = ctypes.c_long
        from . import range_pop, range_push  # pylint: disable=import-outside-toplevel

        self.push, self.pop = range_push, range_pop
        return True

    # ---- each test -------------------------------------------------------

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        if not self.active:
            yield
            return
        self.push(PREFIX + item.nodeid)
        if self.reading:
            self.reading()  # the framework's reserved bytes at the test's start
        try:
            yield
        finally:
            if self.reading:
                self.reading()
            self.pop()
            item.stash[_KEY] = self._measure(item.nodeid)

    def _measure(self, nodeid):
        from . import reader  # pylint: disable=import-outside-toplevel

        # everything recorded until the pop is in the file once this returns
        if self.flush(5000) < 0:
            return {"error": "the tracer did not write the test's events within 5 s"}
        if self.follow is None:
            buf = ctypes.create_string_buffer(4096)
            if self.trace_path(buf, len(buf)) <= 0:
                return {"error": "the tracer has no trace file"}
            self.path = buf.value.decode(errors="replace")
            try:
                self.follow = reader.Follow(self.path, PREFIX)
            except reader.TraceError as err:
                return {"error": str(err)}
        w = self.follow.window(nodeid)
        if w is None:
            return {"error": "the test's range is not in the trace"}
        status = self.follow.status()
        if status["lost_events"] and not self.lost_note:
            self.lost_note = status["lost_events"]
        w["trace"] = self.path
        fw = w.get("framework") or []
        if fw:  # summed over frameworks and devices
            w["reserved_bytes"] = sum(x["reserved_peak"] for x in fw)
            w["reserved_at_start"] = sum(x["reserved_at_start"] for x in fw)
            w["reserved_exact"] = all(x["exact"] for x in fw)
        return w

    def _limit_of(self, item):
        """(bytes, how it was set, the figure it is on) or (None, None, on)."""
        mark = item.get_closest_marker("limit_gpu_memory")
        if mark is not None:
            if not mark.args:
                raise pytest.UsageError("%s: limit_gpu_memory needs a size" % item.nodeid)
            on = mark.kwargs.get("on", self.on)
            if on not in ("cuda", "reserved"):
                raise pytest.UsageError("%s: limit_gpu_memory(on=%r): cuda or reserved"
                                        % (item.nodeid, on))
            by = "limit_gpu_memory(%r%s)" % (mark.args[0],
                                             ", on=%r" % on if "on" in mark.kwargs else "")
            return parse_size(mark.args[0]), by, on
        if self.limit is not None:
            return self.limit, "--gpu-memory-limit %s" % self.config.getoption(
                "gpu_memory_limit"), self.on
        return None, None, self.on

    @staticmethod
    def _figure(r, on):
        """The test's figure the checks are on, or None when not measured."""
        return r.get("peak_bytes") if on == "cuda" else r.get("reserved_bytes")

    def _verdict(self, item, r):
        """The failure text, or None."""
        limit, by, on = self._limit_of(item)
        base = self.baseline.get(item.nodeid) if not self.update else None
        if "error" in r:
            if limit is not None or self.baseline:
                return "gpumemtrace: the test's GPU memory could not be measured: %s" % r["error"]
            return None
        if (limit is not None or base is not None) and self._figure(r, on) is None:
            return ("gpumemtrace: the test's reserved bytes could not be measured: %s"
                    % self.counters_why)
        value = self._figure(r, on)
        if limit is not None and value > limit:
            return self._explain(r, on, "over its limit of %s (%s)" % (fmt_size(limit), by))
        key = "peak_bytes" if self.on == "cuda" else "reserved_bytes"
        if base is not None and key in base:
            b = base[key]
            value = self._figure(r, self.on)
            pct, floor = self.tolerance
            if value > b * (1 + pct) and value - b > floor:
                return self._explain(r, self.on, "above its baseline of %s (%s) by more than "
                                     "%g%%" % (fmt_size(b), self.baseline_path, pct * 100))
        return None

    @staticmethod
    def _explain(r, on, why):
        if on == "reserved":
            lines = ["GPU memory: the framework's reserved bytes peaked at %s%s during the test, "
                     "%s" % ("" if r["reserved_exact"] else "at least ",
                             fmt_size(r["reserved_bytes"]), why),
                     "(%s of them were reserved at its start: earlier tests' cache and fixtures; "
                     "the test's own CUDA allocations peaked at %s)"
                     % (fmt_size(r["reserved_at_start"]), fmt_size(r["peak_bytes"]))]
        else:
            lines = ["GPU memory: the test's allocations peaked at %s, %s"
                     % (fmt_size(r["peak_bytes"]), why)]
        lines.append("its CUDA allocations live at their peak, by site:" if r["sites"] else
                     "it made no CUDA allocation that was live at its peak")
        here = os.getcwd() + os.sep
        for s in r["sites"][:5]:
            lines.append("  %10s  %3d alloc%s  %s" % (fmt_size(s["bytes"]), s["allocs"],
                                                      "" if s["allocs"] == 1 else "s",
                                                      s["site"].replace(here, "")))
        lines.append("(CUDA device allocations made by this process between the test's start "
                     "and end; trace %s)" % r.get("trace"))
        return "\n".join(lines)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if call.when != "call" or _KEY not in item.stash:
            return
        r = item.stash[_KEY]
        report.user_properties.append(("gpumemtrace", r))
        text = self._verdict(item, r)
        if text and report.outcome != "failed":
            report.outcome = "failed"
            report.longrepr = text

    # ---- the whole run (here, or on the xdist controller) ----------------

    def pytest_runtest_logreport(self, report):
        for key, value in report.user_properties:
            if key == "gpumemtrace" and report.when == "call":
                self.results[report.nodeid] = value

    def pytest_sessionfinish(self, session):
        if self.update and self.baseline_path and not hasattr(self.config, "workerinput"):
            tests = {k: {n: v[n] for n in ("peak_bytes", "reserved_bytes") if n in v}
                     for k, v in sorted(self.results.items()) if "error" not in v}
            with open(self.baseline_path, "w", encoding="utf-8") as f:
                json.dump({"version": 1, "tests": tests}, f, indent=1, sort_keys=True)
                f.write("\n")

    def pytest_terminal_summary(self, terminalreporter):
        if hasattr(self.config, "workerinput"):
            return
        tr = terminalreporter
        tr.section("gpumemtrace: GPU memory by test")
        rows = [(k, v) for k, v in self.results.items() if "error" not in v]
        errors = [(k, v) for k, v in self.results.items() if "error" in v]
        if not self.active and not rows:
            tr.write_line("not traced: %s" % self.why)
            return
        fw = any("reserved_bytes" in r for _, r in rows)
        key = "peak_bytes" if self.on == "cuda" else "reserved_bytes"
        rows.sort(key=lambda kv: (-kv[1].get(key, 0), -kv[1]["peak_bytes"], kv[0]))
        n = self.config.getoption("gpumemtrace_top")
        tr.write_line("%10s %10s %7s%s  %s" % ("peak", "left", "allocs",
                                                " %11s" % "reserved" if fw else "", "test"))
        for nodeid, r in rows[:n]:
            extra = ""
            base = self.baseline.get(nodeid)
            if base is not None and key in base:
                extra = "  (baseline %s)" % fmt_size(base[key])
            res = ""
            if fw:
                res = " %11s" % ("-" if "reserved_bytes" not in r else (
                    "" if r["reserved_exact"] else ">=") + fmt_size(r["reserved_bytes"]))
            tr.write_line("%10s %10s %7d%s  %s%s" % (fmt_size(r["peak_bytes"]),
                                                    fmt_size(r["live_bytes"]), r["allocs"], res,
                                                    nodeid, extra))
        if len(rows) > n:
            tr.write_line("(%d more tests; --gpumemtrace-top N shows more)" % (len(rows) - n))
        for nodeid, r in errors:
            tr.write_line("not measured: %s: %s" % (nodeid, r["error"]))
        if self.lost_note:
            tr.write_line("warning: the trace lost %d events: figures may be low" % self.lost_note)
        traces = sorted({r.get("trace") for _, r in rows if r.get("trace")})
        tr.write_line("peak: the most device memory a test's own CUDA allocations held at once; "
                      "left: what they still held at its end")
        if fw:
            tr.write_line("reserved: the most the framework held from the driver during the "
                          "test, its cache from earlier tests included (>=: at least; memory "
                          "was freed during the test)")
        elif _counters_wanted(self.config.getoption):
            tr.write_line("reserved: not measured: %s" % self.counters_why)
        if self.config.getoption("gpu_memory_limit") or self.baseline_path:
            tr.write_line("limits and baseline on: %s" % (
                "the test's own CUDA allocations (peak)" if self.on == "cuda" else
                "the framework's reserved bytes (reserved)"))
        for path in traces:
            tr.write_line("trace: %s" % path)
        if self.update and self.baseline_path:
            tr.write_line("baseline written: %s (%d tests)" % (self.baseline_path, len(rows)))


_KEY = pytest.StashKey()
