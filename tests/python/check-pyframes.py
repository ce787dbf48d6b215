"""Compares the Python frames of each allocation in a trace (from
`gpumemtrace dump`) with the stack sys._getframe() gave at the same line
(pyframes.py's JSON lines). Also checks that no interpreter frame is left
in a stack that has Python frames. Prints one line per mismatch; exits 1
if there is any.

usage: check-pyframes.py DUMP EXPECTED [interpreter paths...]"""
import json
import os
import re
import sys

dump, expected_path = sys.argv[1], sys.argv[2]
STR = r'"((?:[^"\\]|\\.)*)"'
pyframes, parent, ip_of, modules, events = {}, {}, {}, [], {}
symbols = {}
for line in open(dump, encoding="utf-8", errors="replace"):
    m = re.search(r"PYFRAME (\d+) function " + STR + " file " + STR + r" line (\d+)", line)
    if m:
        pyframes[int(m.group(1))] = (m.group(2), m.group(3), int(m.group(4)))
        continue
    if " STACK " in line:
        for n, p, ip in re.findall(r"#(\d+) parent (\d+) ip (0x[0-9a-f]+)", line):
            parent[int(n)], ip_of[int(n)] = int(p), int(ip, 16)
        continue
    m = re.search(r"MODULE id \d+ \[(0x[0-9a-f]+), (0x[0-9a-f]+)\).* path " + STR, line)
    if m:
        modules.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
        continue
    m = re.search(r"SYMBOL (0x[0-9a-f]+) .*function " + STR, line)
    if m:
        symbols[int(m.group(1), 16)] = m.group(2)
        continue
    m = re.search(r"EVENT .* cuMemAlloc_v2 .* size (\d+) .*stack (\d+)", line)
    if m:
        events[int(m.group(1))] = int(m.group(2))

PY_BASE = 0xFE00000000000000


def module_of(ip):
    for lo, hi, path in modules:
        if lo <= ip < hi:
            return os.path.basename(path)
    return "?"


def stack(leaf):
    out = []
    while leaf:
        out.append(ip_of[leaf])
        leaf = parent[leaf]
    return out


interp = re.compile(r"^(libpython3|python3)")
errors = []
cases = set()
for line in open(expected_path, encoding="utf-8"):
    e = json.loads(line)
    case, size = e["case"], e["size"]
    cases.add(case)
    if size not in events:
        errors.append("%s: no cuMemAlloc_v2 of %d bytes in the trace" % (case, size))
        continue
    ips = stack(events[size])
    got = [pyframes.get(ip - PY_BASE, ("?", "?", 0)) for ip in ips if ip >= PY_BASE]
    want = [tuple(f) for f in e["frames"]]
    if case == "no-python":
        want = [("[thread runs no Python]", "", 0)]
        if ips and ips[-1] < PY_BASE:
            errors.append("no-python: its pseudo-frame is not the outermost")
    if got != want:
        errors.append("%s: trace has %d Python frames, sys._getframe %d" % (case, len(got), len(want)))
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                errors.append("  first difference at #%d: trace %r, expected %r" % (i, g, w))
                break
    for ip in ips:
        if ip < PY_BASE and (interp.match(module_of(ip)) or symbols.get(ip, "").startswith("_PyEval_")):
            errors.append("%s: interpreter frame left in: %s %s" % (case, module_of(ip), symbols.get(ip, "")))
            break
    if case == "ext-callback":
        # C frames of the extension stay between the lambda and its caller
        kinds = ["py" if ip >= PY_BASE else module_of(ip) for ip in ips]
        first_py = kinds.index("py")
        between = kinds[first_py + 2:first_py + 2 + kinds[first_py + 2:].index("py")] if "py" in kinds[first_py + 2:] else []
        if not any(k.startswith("gmtpyext") for k in between):
            errors.append("ext-callback: no gmtpyext frame between the callback and its caller: %s" % kinds)
for err in errors:
    print(err)
print("checked %d allocations (%s)" % (len(cases) and sum(1 for _ in open(expected_path)), ", ".join(sorted(cases))))
sys.exit(1 if errors else 0)
