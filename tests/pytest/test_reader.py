"""gpumemtrace.load: the C reader's tables from Python, checked against the
CLI's own figures on the golden traces (tests/golden, recorded from
workload.c on the simulated CUDA)."""
import os
import shutil
import warnings

import pytest

import gpumemtrace


def test_metadata(gmt):
    t = gpumemtrace.load(gmt.golden("train.gmt"))
    s = gmt.summary_json(gmt.golden("train.gmt"))
    assert t.complete and t.problems() == []
    assert t.status["events"] == s["events"] == 88
    assert t.process["pid"] == s["process"]["pid"]
    assert t.devices[0]["ordinal"] == 0 and t.devices[0]["uuid"].startswith("GPU-")
    assert any(m["library"] == "golden-workload" for m in t.modules)


def test_events_as_python_rows(gmt):
    t = gpumemtrace.load(gmt.golden("train.gmt"))
    rows = t.events.to_pylist()
    assert len(rows) == len(t.events) == 88
    times = [r["time_ns"] for r in rows]
    assert times == sorted(times), "events in time order"
    first = rows[0]
    assert (first["api"], first["op"], first["kind"], first["size"]) == \
        ("cudaMalloc", "alloc", "device", 8 << 20)
    assert first["device_bytes"] == 8 << 20 and first["phase"] == "(no phase)"
    # each device's highest device_bytes is summary's peak
    peak = max(r["device_bytes"] for r in rows if r["device"] == 0)
    assert peak == gmt.summary_json(gmt.golden("train.gmt"))["devices"][0]["peak_bytes"]


def test_arrow_columns_typed(gmt):
    pa = pytest.importorskip("pyarrow")
    t = gpumemtrace.load(gmt.golden("train.gmt"))
    ev = t.events.to_arrow()
    assert ev.num_rows == 88
    types = {f.name: f.type for f in ev.schema}
    assert types["time_ns"] == pa.int64() and types["size"] == pa.uint64()
    assert types["failed"] == pa.bool_() and pa.types.is_dictionary(types["api"])
    assert ev.column("size").to_pylist() == [r["size"] for r in t.events.to_pylist()]
    # a subset builds only those columns
    t2 = gpumemtrace.load(gmt.golden("train.gmt"))
    sub = t2.events.to_arrow(columns=["size", "device_bytes"])
    assert sub.column_names == ["size", "device_bytes"]
    with pytest.raises(gpumemtrace.TraceError):
        t2.events.to_arrow(columns=["api"])
    del t  # the Arrow table keeps the C memory alive
    assert ev.column("device_bytes").to_pylist()[0] == 8 << 20


def test_pandas(gmt):
    pd = pytest.importorskip("pandas")
    t = gpumemtrace.load(gmt.golden("oom.gmt"))
    df = t.events.to_pandas()
    assert len(df) == t.status["events"]
    assert str(df["api"].dtype) == "category"
    s = gmt.summary_json(gmt.golden("oom.gmt"))
    assert int(df["oom"].sum()) >= 1
    assert int(df.groupby("device")["device_bytes"].max()[0]) == s["devices"][0]["peak_bytes"]
    assert isinstance(df, pd.DataFrame)


def test_stacks_and_frames(gmt):
    t = gpumemtrace.load(gmt.golden("train.gmt"))
    stacks = t.stacks.to_pylist()
    ids = {r["stack_id"] for r in t.events.to_pylist() if r["stack_id"]}
    assert {s["stack_id"] for s in stacks} == ids
    first = t.events.to_pylist()[0]["stack_id"]
    frames = t.stacks[first]
    assert [f["depth"] for f in frames] == list(range(len(frames)))
    assert frames[0]["function"] == "load_weights" and frames[0]["file"].endswith("workload.c")
    site = next(s for s in stacks if s["stack_id"] == first)
    assert site["site"].startswith("load_weights (") and site["library"] == "golden-workload"


def test_ranks_and_samples(gmt):
    t = gpumemtrace.load(gmt.golden("rank1.gmt"))
    assert t.rank == 1
    assert len(t.samples) >= 0 and t.samples.columns[0] == "time_ns"


def test_truncated_trace_warns(gmt, tmp_path):
    src = gmt.golden("train.gmt")
    cut = tmp_path / "cut.gmt"
    data = open(src, "rb").read()
    cut.write_bytes(data[:len(data) - 40])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = gpumemtrace.load(str(cut))
    assert not t.complete and t.problems()
    assert any(issubclass(x.category, gpumemtrace.IncompleteTraceWarning) for x in w)
    assert "INCOMPLETE" in repr(t)


def test_not_a_trace(tmp_path):
    bad = tmp_path / "bad.gmt"
    bad.write_bytes(b"not a trace at all\n" * 10)
    with pytest.raises(gpumemtrace.TraceError) as err:
        gpumemtrace.load(str(bad))
    assert str(bad) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(gpumemtrace.TraceError):
        gpumemtrace.load(str(tmp_path / "missing.gmt"))


def test_schema_is_documented(gmt):
    """docs/python.md's tables section is reader.schema_markdown()'s text."""
    doc = open(os.path.join(gmt.root, "docs", "python.md"), encoding="utf-8").read()
    begin, end = "<!-- gen:begin schema -->\n", "<!-- gen:end -->"
    assert begin in doc, "docs/python.md lacks the schema section"
    got = doc.split(begin, 1)[1].split(end, 1)[0]
    assert got == gpumemtrace.reader.schema_markdown(), \
        "docs/python.md's schema differs: python -m gpumemtrace.reader --schema-markdown"


def test_marker_api_still_cheap():
    import sys
    import subprocess
    out = subprocess.run([sys.executable, "-c", "import gpumemtrace, sys; "
                          "print('gpumemtrace.reader' in sys.modules)"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(
                             gpumemtrace.__file__), os.pardir)}).stdout.strip()
    assert out == "False", "importing the marker API loads the reader"
