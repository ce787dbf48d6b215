#!/usr/bin/env python3
"""PyTorch's own totals against gpumemtrace's, on one snapshot.

  memviz-compare.py MEMVIZ SNAPSHOT.pickle REPLAY.json

MEMVIZ is torch/cuda/_memory_viz.py (it imports only the standard
library, so it runs without torch). Its `stats` (segsum) and `trace`
outputs are computed on the snapshot, and the figures they print are set
against `gpumemtrace replay --json`'s, formatted by _memory_viz's own
functions: segments, total_reserved, total_allocated (the bytes live
tensors asked), total_free with its internal share, and each device's
entry count. trace's "TOTAL MEM" is left out: _memory_viz's loop variable
`count` is both the entry index and the byte sum, so the figure is neither.
Prints one line per figure; exit 1 when one differs. Only for snapshots you
trust: pickle.load runs what the file says.
"""
import importlib.util
import json
import pickle
import re
import sys


def load_memviz(path):
    spec = importlib.util.spec_from_file_location("memviz", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    memviz_path, snap_path, ours_path = sys.argv[1:4]
    mv = load_memviz(memviz_path)
    with open(snap_path, "rb") as f:
        data = pickle.load(f)
    if isinstance(data, list):
        data = {"segments": data, "device_traces": []}
    stats = mv.segsum(data)
    trace = mv.trace(data)
    with open(ours_path) as f:
        ours = json.load(f)
    devs = ours["devices"]
    end = {k: sum(d["end"][k] for d in devs) for k in devs[0]["end"]} if devs else {}
    asked = end.get("requested_bytes", 0)
    reserved = end.get("reserved_bytes", 0)
    internal = end.get("allocated_bytes", 0) - asked
    want = {
        "segments": str(end.get("segments", 0)),
        "total_reserved": repr(mv.Bytes(reserved)),
        "total_allocated": repr(mv.Bytes(asked)),
        "total_free": mv._report_free(reserved - asked - internal, internal),
    }
    bad = 0
    for key, ours_text in want.items():
        m = re.search(r"^%s: (.*)$" % key, stats, re.M)
        theirs = m.group(1) if m else "(absent)"
        same = theirs == ours_text
        bad += not same
        print("%-16s memviz %-22s gpumemtrace %-22s %s" % (key, theirs, ours_text,
                                                             "same" if same else "DIFFERS"))
    # trace: "Device N ----" then "K entries" for each device with entries
    # (not at a line's start: its "TOTAL MEM" line ends without a newline)
    theirs = dict(re.findall(r"Device (\d+) -+\n(\d+) entries", trace))
    for d in devs:
        t = theirs.get(str(d["device"]), "(absent)")
        same = t == str(d["entries"])
        bad += not same
        print("%-16s memviz %-22s gpumemtrace %-22s %s" % ("entries dev %d" % d["device"], t,
                                                             d["entries"], "same" if same else "DIFFERS"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
