#!/usr/bin/env python3
"""Regenerates the explain outputs shown in docs/questions.md.

  scripts/gen-questions.py [BUILD]      (BUILD: default build)

Each output in the page follows a marker line

  <!-- explain: TRACE [TRACE2] [ids=ID,ID...] -->

and is the fenced block after it: `gpumemtrace explain TRACE [TRACE2]`,
cut to the header and the findings named by ids= (all without it). Paths
with a slash are from the repository's root; bare names (a.gmt) are the
built traces of tests/integration/explain-traces.sh, made in a temporary
directory with mktrace. Run it after a change to explain's output or to
the aggregators it reads (the growth and oom verdicts), and commit."""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "questions.md")
MARK = re.compile(r"^<!-- explain: (.*) -->$")


# A build machine's own paths, recorded in the traces' command lines and
# sites: the part from the repository's build/ or tests/ on, else the file
# name alone (the page is read on other machines: t-docs-clean).
HOST_IN_REPO = re.compile(r"/(?:work|tmp|root|home)/[^\s:()]*?/((?:build|tests)/[^\s:()]*)")
HOST_OTHER = re.compile(r"/(?:work|tmp|root|home)/[^\s:()]*/([^\s/:()]+)")


def unhost(line):
    return HOST_OTHER.sub(r"\1", HOST_IN_REPO.sub(r"\1", line))


def excerpt(text, ids):
    lines = text.rstrip("\n").split("\n")
    if not ids:
        return lines
    out, keep, heading = lines[:3], False, None
    for line in lines[3:]:
        m = re.match(r"^\d+\. \[([a-z-]+)", line)
        if line.startswith("trace "):
            keep = False
        elif line and not line[0].isspace() and not m:  # a severity's heading
            keep, heading = False, line
            continue
        elif m:
            keep = m.group(1) in ids
            if keep:
                out += ["", heading] if heading else []
                out.append("")
                heading = None
        if keep and line:
            out.append(line)
    return out


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
    cli = os.path.join(build, "gpumemtrace")
    tmp = tempfile.mkdtemp(prefix="gen-questions.")
    env = dict(os.environ, MKTRACE=os.path.join(build, "tests", "unit-tools", "mktrace"))
    subprocess.run(["bash", "-c", ". '%s'; explain_traces" %
                    os.path.join(ROOT, "tests", "integration", "explain-traces.sh")],
                   cwd=tmp, env=env, check=True)

    def block(spec):
        words = spec.split()
        ids = [w[4:].split(",") for w in words if w.startswith("ids=")]
        paths = [w for w in words if not w.startswith("ids=")]
        cwd = ROOT if all("/" in p for p in paths) else tmp
        r = subprocess.run([cli, "explain"] + paths, cwd=cwd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("gen-questions: explain %s: exit %d: %s" % (" ".join(paths), r.returncode,
                                                                r.stderr.strip()))
        text = r.stdout
        if len(paths) == 2:  # the comparison, not each trace's own findings
            text = text.split("\ntrace ", 1)[0]
        body = [unhost(line) for line in excerpt(text, ids[0] if ids else None)]
        return ["```", "$ gpumemtrace explain " + " ".join(paths)] + body + ["```"]

    with open(DOC, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, n, i = [], 0, 0
    while i < len(lines):
        out.append(lines[i])
        m = MARK.match(lines[i])
        i += 1
        if not m:
            continue
        if i >= len(lines) or lines[i] != "```":
            sys.exit("gen-questions: %s:%d: a fenced block must follow the marker" % (DOC, i))
        end = lines.index("```", i + 1)  # the old block's closing fence
        out += block(m.group(1))
        i, n = end + 1, n + 1
    with open(DOC, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    subprocess.run(["rm", "-rf", tmp], check=False)
    print("gen-questions: %d outputs in %s" % (n, os.path.relpath(DOC, ROOT)))


if __name__ == "__main__":
    main()
