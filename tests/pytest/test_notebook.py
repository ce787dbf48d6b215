"""Jupyter (issue 34): `python -m gpumemtrace kernel install` and the
magics, in notebooks executed headless by nbclient on the simulated CUDA.
The cell's figures are worked out from what it allocates; its sites name
the notebook's own lines as `In [n], line k`. Skips without nbclient,
nbformat or ipykernel (scripts/python-deps.sh installs them)."""
import json
import os
import subprocess
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

MiB = 1 << 20

DEFS = '''import ctypes
rt = ctypes.CDLL("libcudart.so.13")  # the simulated CUDA runtime
def alloc(n):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0
    return p
def free(p):
    rt.cudaFree(p)'''

CELL = '''%%gpumemtrace
a = alloc(64 << 20)
b = alloc(32 << 20)
free(a)
keep = alloc(16 << 20)
free(b)
print("cell ran")'''


def kernel_cmd(gmt, *args, env=None):
    return subprocess.run([sys.executable, "-m", "gpumemtrace", "kernel", *args],
                          env=env or gmt.traced_env(), capture_output=True, text=True,
                          check=False)


@pytest.fixture()
def jupyter(gmt, tmp_path, monkeypatch):
    """A prefix with the traced kernel installed, on JUPYTER_PATH, and the
    environment the kernels inherit (the simulated CUDA on the library path,
    this source tree's package on PYTHONPATH)."""
    prefix = tmp_path / "prefix"
    r = kernel_cmd(gmt, "install", "--prefix", str(prefix), "--name", "gmt-test")
    assert r.returncode == 0, r.stderr
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    for k, v in gmt.traced_env().items():
        if k in ("LD_LIBRARY_PATH", "PYTHONPATH"):
            monkeypatch.setenv(k, v)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv("GPUMEMTRACE_OUTPUT", raising=False)
    work = tmp_path / "nb"
    work.mkdir()
    return prefix, work


def run_notebook(cells, kernel, work):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    client = nbclient.NotebookClient(nb, kernel_name=kernel, timeout=180,
                                     resources={"metadata": {"path": str(work)}})
    client.execute()
    return nb


def text_of(cell):
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif o.output_type in ("display_data", "execute_result"):
            out.append(o.data.get("text/plain", ""))
    return "".join(out)


def test_kernel_spec(gmt, jupyter):
    prefix, _ = jupyter
    spec = json.load(open(prefix / "share/jupyter/kernels/gmt-test/kernel.json"))
    assert spec["argv"][:5] == [sys.executable, "-m", "gpumemtrace", "kernel", "launch"]
    assert "{connection_file}" in spec["argv"]
    assert "LD_PRELOAD" not in spec.get("env", {})  # the kernel's launcher sets it, no one else
    # a spec that exists already: one line, exit 1, the spec as it was
    r = kernel_cmd(gmt, "install", "--prefix", str(prefix), "--name", "gmt-test")
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "exists already" in r.stderr and "--replace" in r.stderr
    r = kernel_cmd(gmt, "install", "--prefix", str(prefix), "--name", "gmt-test", "--replace")
    assert r.returncode == 0, r.stderr
    r = kernel_cmd(gmt, "install", "--prefix", str(prefix), "--name", "no/slash")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_cell_magic(gmt, jupyter):
    _, work = jupyter
    nb = run_notebook(["%load_ext gpumemtrace", DEFS, CELL, "%gpumemtrace summary",
                       "%gpumemtrace explain", "%gpumemtrace plot",
                       "import os; print(os.environ.get('LD_PRELOAD'))"], "gmt-test", work)
    load, _, cell, summary, explain, plot, preload = nb.cells
    assert text_of(load) == ""  # traced: nothing to say
    out = text_of(cell)
    assert "cell ran" in out
    # 64 + 32 MiB live at once; 16 MiB kept; three cudaMalloc calls
    assert "In [3]: GPU peak 96.0 MiB, left live 16.0 MiB, 3 allocations in" in out, out
    # the sites at the peak: the helper's line in cell 2, called from cell 3's lines
    assert "alloc (In [2], line 5) <- <module> (In [3], line 2)" in out, out
    assert "alloc (In [2], line 5) <- <module> (In [3], line 3)" in out, out
    html = [o for o in cell.outputs if o.output_type == "display_data"][0].data["text/html"]
    assert "<svg" in html and "96.0 MiB" in html
    assert "96.0 MiB" in text_of(summary)  # its peak
    # the kernel runs, so its trace has no trailer: said as what it is, not
    # as the CLI's warning for a killed process's trace
    for c in (summary, explain):
        assert "incomplete trace: no trailer" not in text_of(c), text_of(c)
        assert "the kernel's trace so far" in text_of(c), text_of(c)
    assert text_of(explain).strip()
    assert any("image/svg+xml" in o.get("data", {}) for o in plot.outputs)
    assert gmt.lib in text_of(preload)  # the kernel itself is traced
    # the kernel's trace, in the notebook's folder, agrees
    traces = list(work.glob("gpumemtrace.*.gmt"))
    assert len(traces) == 1
    s = gmt.summary_json(str(traces[0]))
    assert s["devices"][0]["peak_bytes"] == 96 * MiB


def test_not_traced(gmt, jupyter):
    """A kernel not started under the tracer: one line, and the cell runs."""
    _, work = jupyter
    nb = run_notebook(["%load_ext gpumemtrace", DEFS, CELL, "%gpumemtrace summary"],
                      "python3", work)
    load, _, cell, summary = nb.cells
    assert "python -m gpumemtrace kernel install" in text_of(load)
    out = text_of(cell)
    assert "cell ran" in out
    assert out.count("\n") == 2 and "not traced" in out  # the line, then the cell's own
    assert "not traced" in text_of(summary) and text_of(summary).count("\n") == 1
    assert not list(work.glob("gpumemtrace.*.gmt"))
