#!/usr/bin/env python3
"""Checks every row of tests/verdicts/verdicts.tsv against the CLI, or prints
the table docs/reports.md shows of them.

  check.py CLI [--fresh DIR]   run each row's command with --json on its trace
                               and compare the value at its key path; with
                               --fresh, traces under tests/verdicts/traces/
                               are read from DIR instead (regen.sh's output)
                               and only those rows are checked, less the
                               rows judged on wall time (below)
  check.py CLI --table         print the Markdown table (expected, actual)
  check.py CLI --doc FILE [--check]
                               write that table between FILE's markers (or
                               only say, exit 1, when it differs)

Row format (TAB-separated, contract of issue 19):
  trace  command  key-path  expected  why  [xfail]
An expected value N~P% (a number and a tolerance in percent) holds for any
number within P% of N (a rate measured on timed traces).

Rows judged on wall time: growth's driver-level answers (a devices.N key,
not devices.N.tensors, nor the iterations found, which no clock moves) on a
trace whose stored copy marks no iterations
(iteration_source none). Growth then places the high-water mark's rises in
nanoseconds, and a loaded machine stretches some gaps and not others (a
step that lands 2 ms later turns a staircase irregular, or a flat end too
short), so a fresh run's verdict follows the load, not the capture. Their
stored traces are checked (the first pass); --fresh skips them and says how
many. A fresh trace's capture is still checked by every other row on it.
The key path is dotted: names, array indexes, and [key=value] to pick the
element of an array whose key has that value. It is looked up from the top
of the JSON, then, if absent there, in the only trace of {"traces": [...]}.

Exit 0 when every row holds, 1 when one does not (a non-xfail row that
differs, or an xfail row that now holds: "XPASS: remove xfail"), 2 on a
malformed table or a command that failed.
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EMU_PREFIX = "tests/verdicts/traces/"
MISSING = "(absent)"


def rows():
    out = []
    with open(os.path.join(HERE, "verdicts.tsv"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) not in (5, 6) or (len(cols) == 6 and cols[5] != "xfail"):
                sys.exit("verdicts.tsv:%d: want 5 columns and an optional 'xfail'" % n)
            out.append({"line": n, "trace": cols[0], "command": cols[1], "key": cols[2],
                        "expected": cols[3], "why": cols[4], "xfail": len(cols) == 6})
    return out


def matches(got, expected):
    """got == expected, or within the tolerance of an N~P% expectation."""
    m = re.fullmatch(r"(-?[0-9.]+)~([0-9.]+)%", expected)
    if not m:
        return got == expected
    try:
        value = float(got)
    except ValueError:
        return False
    want, tol = float(m.group(1)), float(m.group(2))
    return abs(value - want) <= abs(want) * tol / 100


def step(node, part):
    if part.startswith("[") and part.endswith("]") and "=" in part:
        k, v = part[1:-1].split("=", 1)
        if isinstance(node, list):
            for e in node:
                if isinstance(e, dict) and str(e.get(k)) == v:
                    return e
        raise KeyError(part)
    if isinstance(node, list):
        return node[int(part)]
    return node[part]


def lookup(doc, path):
    for base in (doc, (doc.get("traces") or [None])[0] if isinstance(doc, dict) else None):
        if base is None:
            continue
        node = base
        try:
            for part in path.split("."):
                node = step(node, part)
        except (KeyError, IndexError, ValueError, TypeError):
            continue
        return node
    return MISSING


def show(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v)[:60]
    return str(v)


_cache = {}


def run(cli, command, trace):
    key = (command, trace)
    if key not in _cache:
        argv = [cli] + command.split() + ["--json", trace]
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _cache[key] = (argv, json.loads(p.stdout))
        except ValueError:
            _cache[key] = (argv, None)
            print("ERROR: %s: exit %d, no JSON: %s" % (" ".join(argv), p.returncode,
                                                    p.stderr.strip()[:300]))
    return _cache[key]


def actual(cli, r, fresh):
    trace = r["trace"]
    if fresh:
        trace = os.path.join(fresh, trace[len(EMU_PREFIX):])
    else:
        trace = os.path.join(ROOT, trace)
    argv, doc = run(cli, r["command"], trace)
    return argv, (MISSING if doc is None else show(lookup(doc, r["key"])))


WALL_KEY = re.compile(r"devices\.([0-9]+)\.(?!tensors(\.|$)|iteration_source$|iterations$)")


def wall_timed(cli, r):
    """Whether growth judges the row on wall time: a devices.N key of growth
    on a trace whose stored copy has no iterations (see the docstring)."""
    m = WALL_KEY.match(r["key"])
    if r["command"] != "growth" or not m:
        return False
    _, doc = run(cli, "growth", os.path.join(ROOT, r["trace"]))
    src = MISSING if doc is None else lookup(doc, "devices.%s.iteration_source" % m.group(1))
    return src == "none"


def check(cli, fresh):
    bad = errors = 0
    checked = xfails = timed = 0
    for r in rows():
        if fresh and not r["trace"].startswith(EMU_PREFIX):
            continue
        if fresh and wall_timed(cli, r):
            timed += 1
            continue
        argv, got = actual(cli, r, fresh)
        checked += 1
        ok = matches(got, r["expected"])
        where = "verdicts.tsv:%d" % r["line"]
        if ok and r["xfail"]:
            print("XPASS: remove xfail: %s: %s | %s | %s = %s"
                  % (where, r["trace"], " ".join(argv[1:]), r["key"], got))
            bad += 1
        elif not ok and not r["xfail"]:
            print("FAIL: %s\n  trace:    %s\n  command:  %s\n  key:      %s\n"
                  "  expected: %s\n  actual:   %s\n  why:      %s"
                  % (where, r["trace"], " ".join(argv), r["key"], r["expected"], got, r["why"]))
            bad += 1
        elif r["xfail"]:
            xfails += 1
        if got == MISSING and argv and _cache[(r["command"], argv[-1])][1] is None:
            errors += 1
    print("%d rows checked%s: %d wrong, %d xfail%s%s" % (
        checked, " on fresh traces" if fresh else "", bad, xfails,
        ", %d commands without JSON" % errors if errors else "",
        "; %d judged on wall time: checked on their stored traces only" % timed
        if timed else ""))
    return 2 if errors else 1 if bad else 0


def cell(s):
    return s.replace("|", "\\|")


def scenarios():
    out = {}
    with open(os.path.join(HERE, "scenarios.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, prog, scenario, envs = (line.rstrip("\n").split("\t") + [""])[:4]
                out[name] = (prog, scenario, envs.split())
    return out


def what_ran(trace, sc):
    name = os.path.basename(trace)[:-len(".gmt")]
    if not trace.startswith(EMU_PREFIX) or name not in sc:
        return "H100, " + trace.split("/")[2][:10]
    prog, scenario, envs = sc[name]
    dev = [e.split("=", 1)[1] for e in envs if e.startswith("SIMCUDA_CAPACITY=")]
    rest = [e for e in envs if not e.startswith("SIMCUDA_CAPACITY=")]
    return "`%s %s`%s%s" % (prog, scenario, ", %s device" % dev[0] if dev else "",
                            "".join(", `%s`" % e for e in rest))


def verdict_cell(r, got):
    if r is None:
        return "", ""
    if matches(got, r["expected"]):
        return r["expected"], "yes"
    return r["expected"], "no: %s%s" % (got, " (xfail)" if r["xfail"] else "")


def table(cli):
    """One line per trace: growth and OOM verdicts, then the other checks."""
    sc = scenarios()
    order, by_trace = [], {}
    for r in rows():
        if r["trace"] not in by_trace:
            order.append(r["trace"])
            by_trace[r["trace"]] = []
        by_trace[r["trace"]].append(r)
    lines = ["| trace | what ran | growth verdict | right | OOM verdict | right | other checks |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for t in order:
        growth = oom = None
        others = []
        for r in by_trace[t]:
            _, got = actual(cli, r, None)
            if r["command"] == "growth" and r["key"] == "devices.0.verdict":
                growth = (r, got)
            elif r["command"] == "oom" and r["key"] == "verdict":
                oom = (r, got)
            else:
                mark = "yes" if matches(got, r["expected"]) else "no: %s%s" % (
                    got, " (xfail)" if r["xfail"] else "")
                others.append("%s `%s` = %s (%s)" % (r["command"], r["key"], r["expected"], mark))
        g = verdict_cell(*growth) if growth else ("", "")
        o = verdict_cell(*oom) if oom else ("", "")
        lines.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
            t.replace(EMU_PREFIX, "").replace("tests/real/", ""), what_ran(t, sc),
            g[0], cell(g[1]), o[0], cell(o[1]), cell("; ".join(others))))
    return lines


BEGIN = "<!-- verdicts table: tests/verdicts/check.py --doc writes it from verdicts.tsv -->"
END = "<!-- end of the verdicts table -->"


def doc(cli, path, check_only):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        sys.exit("%s: no verdicts table markers" % path)
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + "\n".join(table(cli)) + "\n" + END + tail
    if new == text:
        return 0
    if check_only:
        print("%s: the verdicts table is stale: run make gen-verdicts-doc" % path)
        return 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cli = argv[1]
    if argv[2:] == ["--table"]:
        print("\n".join(table(cli)))
        return 0
    if argv[2:3] == ["--doc"] and len(argv) in (4, 5) and argv[4:] in ([], ["--check"]):
        return doc(cli, argv[3], argv[4:] == ["--check"])
    if argv[2:3] == ["--fresh"] and len(argv) == 4:
        return check(cli, os.path.abspath(argv[3]))
    if len(argv) == 2:
        return check(cli, None)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
