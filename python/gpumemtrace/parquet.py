"""Traces as a Parquet dataset, for DuckDB, Spark and Polars.

    gpumemtrace export --format parquet -o DIR TRACE...     (console script)
    python -m gpumemtrace export --format parquet -o DIR TRACE...
    gpumemtrace.parquet.export(["rank0.gmt", "rank1.gmt"], "DIR")

DIR/<table>/host=<host>/rank=<rank>/<pid>.parquet, a Hive-partitioned
dataset: every trace of a job, or of many jobs, lands in one tree, and each
file's rows carry the trace's pid (stack ids are per trace: join on
host, rank, pid and stack_id). Tables: the reader's (events, stacks,
frames, samples, ranges, counters; docs/python.md) and traces, devices,
modules. rank is -1 for a process with no rank in its environment
(RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID). Exporting the same
trace again replaces its files. Needs pyarrow.
"""
import argparse
import os
import re
import sys

from . import reader

__all__ = ["export", "TABLES"]

TABLES = ("traces", "devices", "modules", "events", "stacks", "frames", "samples", "ranges",
          "counters")
EXIT_USAGE, EXIT_INPUT = 2, 3  # as the CLI's (docs/cli.md)


def _part(value):
    """A partition value as a folder name: no '/', no '=', nothing odd."""
    text = re.sub(r"[^A-Za-z0-9._-]", "_", str(value)) or "_"
    return text[:100]


def _meta_tables(pa, t, rank):
    p = t.process
    s = t.status
    traces = pa.table({
        "pid": [p.get("pid")], "ppid": [p.get("ppid")], "command": [p.get("command")],
        "exe": [p.get("exe")], "path": [t.path], "format_version": [t.format_version],
        "start_wall_ns": pa.array([s["start_wall_ns"]], pa.uint64()),
        "duration_ns": [s["duration_ns"]], "events": pa.array([s["events"]], pa.uint64()),
        "lost_events": pa.array([s["lost_events"]], pa.uint64()), "complete": [t.complete],
        "problems": ["; ".join(t.problems())],
    })
    devices = pa.table({
        "pid": pa.array([p.get("pid")] * len(t.devices), pa.int64()),
        "device": pa.array([d["ordinal"] for d in t.devices], pa.int32()),
        "name": pa.array([d["name"] for d in t.devices], pa.string()),
        "uuid": pa.array([d["uuid"] for d in t.devices], pa.string()),
        "total_bytes": pa.array([d["total_bytes"] for d in t.devices], pa.uint64()),
        "compute_capability": pa.array([d["compute_capability"] for d in t.devices], pa.string()),
    })
    mods = t.modules
    modules = pa.table({
        "pid": pa.array([p.get("pid")] * len(mods), pa.int64()),
        "id": pa.array([m["id"] for m in mods], pa.uint64()),
        "path": pa.array([m["path"] for m in mods], pa.string()),
        "library": pa.array([m["library"] for m in mods], pa.string()),
        "start": pa.array([m["start"] for m in mods], pa.uint64()),
        "end": pa.array([m["end"] for m in mods], pa.uint64()),
        "build_id": pa.array([m["build_id"] for m in mods], pa.string()),
    })
    return {"traces": traces, "devices": devices, "modules": modules}


def _write(pq, table, path):
    """Writes one file, created 0600 (a trace's command line is private)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        pq.write_table(table, f, compression="zstd")
    os.replace(tmp, path)  # a reader never sees half a file


def export_one(path, out, tables=TABLES):
    """Writes one trace's tables under out; returns (trace, files written)."""
    import pyarrow as pa  # pylint: disable=import-outside-toplevel
    import pyarrow.parquet as pq  # pylint: disable=import-outside-toplevel

    t = reader.load(path, warn=False)
    pid = t.process.get("pid")
    rank = t.rank if t.rank is not None else -1
    host = t.process.get("hostname") or "unknown"
    where = "host=%s/rank=%s/%s.parquet" % (_part(host), _part(rank), _part(pid))
    meta = _meta_tables(pa, t, rank)
    files = []
    for name in tables:
        if name in meta:
            table = meta[name]
        else:
            table = getattr(t, name).to_arrow()
            table = table.add_column(0, "pid", pa.array([pid] * table.num_rows, pa.int64()))
        dest = os.path.join(out, name, where)
        _write(pq, table, dest)
        files.append(dest)
    return t, files


def export(paths, out, tables=TABLES):
    """Exports each trace into the dataset at out; returns the traces."""
    return [export_one(p, out, tables)[0] for p in paths]


def main(argv):
    """`export --format parquet` of the command line; its exit status."""
    ap = argparse.ArgumentParser(prog="gpumemtrace export --format parquet",
                                 description="Writes traces as a Parquet dataset partitioned "
                                 "by host and rank (docs/python.md).")
    ap.add_argument("-f", "--format", required=True, choices=["parquet"])
    ap.add_argument("-o", "--output", default="gpumemtrace-parquet", metavar="DIR",
                    help="the dataset's folder (default gpumemtrace-parquet)")
    ap.add_argument("--tables", default=",".join(TABLES),
                    help="which tables, comma-separated (default all: %s)" % ",".join(TABLES))
    ap.add_argument("traces", nargs="+", metavar="TRACE")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else 0
    tables = [x for x in args.tables.split(",") if x]
    bad = [x for x in tables if x not in TABLES]
    if bad:
        sys.stderr.write("gpumemtrace export: --tables: no table %s (tables: %s)\n"
                         % (", ".join(bad), ", ".join(TABLES)))
        return EXIT_USAGE
    try:
        import pyarrow.parquet  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        sys.stderr.write("gpumemtrace export: --format parquet needs pyarrow: pip install "
                         "'gpumemtrace[parquet]'\n")
        return EXIT_USAGE
    rc = 0
    for path in args.traces:
        try:
            t, files = export_one(path, args.output, tables)
        except reader.TraceError as err:
            sys.stderr.write("gpumemtrace export: %s\n" % err)
            rc = EXIT_INPUT
            continue
        except OSError as err:
            sys.stderr.write("gpumemtrace export: cannot write %s: %s\n" % (args.output, err))
            return EXIT_INPUT
        for problem in t.problems():  # nothing lost silently
            sys.stderr.write("gpumemtrace export: %s: warning: %s\n" % (path, problem))
        sys.stderr.write("gpumemtrace export: %s: %d events -> %s\n"
                         % (path, t.status["events"], os.path.dirname(files[0]) if files else "-"))
    return rc
