#!/usr/bin/env python3
"""Checks every row of tests/verdicts/verdicts.tsv against the CLI, or prints
the table docs/reports.md shows of them.

  check.py CLI [--fresh DIR]   run each row's command with --json on its trace
                               and compare the value at its key path; with
                               --fresh, traces under tests/verdicts/traces/
                               are read from DIR instead (regen.sh's output)
                               and only those rows are checked
  check.py CLI --table         print the Markdown table (expected, actual)

Row format (TAB-separated, contract of issue 19):
  trace  command  key-path  expected  why  [xfail]
The key path is dotted: names, array indexes, and [key=value] to pick the
element of an array whose key has that value. It is looked up from the top
of the JSON, then, if absent there, in the only trace of {"traces": [...]}.

Exit 0 when every row holds, 1 when one does not (a non-xfail row that
differs, or an xfail row that now holds: "XPASS: remove xfail"), 2 on a
malformed table or a command that failed.
"""
import json
import os
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


def check(cli, fresh):
    bad = errors = 0
    checked = xfails = 0
    for r in rows():
        if fresh and not r["trace"].startswith(EMU_PREFIX):
            continue
        argv, got = actual(cli, r, fresh)
        checked += 1
        ok = got == r["expected"]
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
    print("%d rows checked%s: %d wrong, %d xfail%s" % (
        checked, " on fresh traces" if fresh else "", bad, xfails,
        ", %d commands without JSON" % errors if errors else ""))
    return 2 if errors else 1 if bad else 0


def cell(s):
    return s.replace("|", "\\|")


def table(cli):
    print("| trace | command | key | expected | actual | why |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows():
        _, got = actual(cli, r, None)
        mark = "" if got == r["expected"] else (" (xfail)" if r["xfail"] else " (WRONG)")
        print("| `%s` | `%s` | `%s` | %s | %s%s | %s |" % (
            r["trace"].replace(EMU_PREFIX, "").replace("docs/validation/", ""),
            r["command"], r["key"], cell(r["expected"]), cell(got), mark, cell(r["why"])))


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cli = argv[1]
    if argv[2:] == ["--table"]:
        table(cli)
        return 0
    if argv[2:3] == ["--fresh"] and len(argv) == 4:
        return check(cli, os.path.abspath(argv[3]))
    if len(argv) == 2:
        return check(cli, None)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
