"""export --format parquet: a multi-rank dataset that DuckDB reads, whose
per-rank peaks are summary --json's (the golden rank traces, recorded from
workload.c on the simulated CUDA with RANK=0 and RANK=1)."""
import os
import stat
import subprocess
import sys

import pytest


def _export(gmt, out, *traces):
    env = dict(os.environ, PYTHONPATH=os.path.join(gmt.root, "python"))
    return subprocess.run([sys.executable, "-m", "gpumemtrace", "export", "--format", "parquet",
                           "-o", str(out), *traces], env=env, capture_output=True, text=True)


def test_duckdb_peaks_per_rank(gmt, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    ranks = [gmt.golden("rank0.gmt"), gmt.golden("rank1.gmt")]
    r = _export(gmt, tmp_path / "ds", *ranks)
    assert r.returncode == 0, r.stderr
    con = duckdb.connect()
    rows = con.execute(
        "SELECT rank, device, max(device_bytes) FROM read_parquet(?, hive_partitioning = true) "
        "GROUP BY ALL ORDER BY rank, device", [str(tmp_path / "ds/events/**/*.parquet")]).fetchall()
    want = []
    for path in ranks:
        s = gmt.summary_json(path)
        for d in s["devices"]:
            want.append((s["rank"], d["index"], d["peak_bytes"]))
    assert rows == sorted(want), (rows, want)
    # the traces table says each is whole, and its event count
    t = con.execute("SELECT rank, events, complete FROM read_parquet(?, hive_partitioning = true) "
                    "ORDER BY rank", [str(tmp_path / "ds/traces/**/*.parquet")]).fetchall()
    assert t == [(0, gmt.summary_json(ranks[0])["events"], True),
                 (1, gmt.summary_json(ranks[1])["events"], True)]
    # the site of the largest allocation, joined through stacks
    site = con.execute(
        "SELECT s.site FROM read_parquet(?, hive_partitioning = true) e "
        "JOIN read_parquet(?, hive_partitioning = true) s USING (host, rank, pid, stack_id) "
        "ORDER BY e.size DESC LIMIT 1",
        [str(tmp_path / "ds/events/**/*.parquet"),
         str(tmp_path / "ds/stacks/**/*.parquet")]).fetchone()[0]
    assert "workload.c" in site


def test_layout_and_privacy(gmt, tmp_path):
    pytest.importorskip("pyarrow")
    r = _export(gmt, tmp_path / "ds", gmt.golden("rank1.gmt"))
    assert r.returncode == 0, r.stderr
    s = gmt.summary_json(gmt.golden("rank1.gmt"))
    host = s["process"]["hostname"]
    f = tmp_path / "ds" / "events" / ("host=" + host) / "rank=1" / ("%d.parquet" % s["process"]["pid"])
    assert f.exists(), sorted(str(p) for p in (tmp_path / "ds").rglob("*"))
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    import pyarrow.parquet as pq
    table = pq.read_table(str(f))
    assert table.column_names[:2] == ["pid", "time_ns"] and table.num_rows == s["events"]
    # again: replaced, not doubled
    assert _export(gmt, tmp_path / "ds", gmt.golden("rank1.gmt")).returncode == 0
    assert len(list((tmp_path / "ds" / "events").rglob("*.parquet"))) == 1


def test_bad_input_one_line(gmt, tmp_path):
    pytest.importorskip("pyarrow")
    bad = tmp_path / "bad.gmt"
    bad.write_bytes(b"junk" * 100)
    r = _export(gmt, tmp_path / "ds", str(bad))
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = _export(gmt, tmp_path / "ds")
    assert r.returncode == 2


def test_c_cli_points_to_the_package(gmt, tmp_path):
    r = subprocess.run([gmt.cli, "export", "--format", "parquet", gmt.golden("rank0.gmt")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "pip install 'gpumemtrace[parquet]'" in r.stderr
