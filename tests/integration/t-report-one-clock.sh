#!/usr/bin/env bash
# One clock, one origin: an instant that several reports print for one trace
# reads the same in each. Every real trace and the verdict corpus: each
# device's peak (summary --json is the reference; top, growth, accounting,
# fragmentation print it), the trace's end (accounting, fragmentation) and
# the first failed allocation (oom, the Chrome JSON export). Each text
# time is the reference within the precision printed, and the text reports
# print the same string for one instant (top said "+188 ms" where growth
# said "+188.4 ms"; fragmentation's end was the last event, not the end).
. "$(dirname "$0")/lib.sh"
tmp=$PWD
cd "$TESTS_DIR/.."
python3 - "$GMT_CLI" "$tmp/c.json" tests/real/*/*.gmt tests/verdicts/traces/*.gmt <<'PY' || fail "times disagree (see above)"
import json, re, subprocess, sys

cli, cjson, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
TIME = r"\+(\d+(?:\.\d+)?) (ns|us|ms|s)\b"


def run(*args):
    r = subprocess.run([cli, *args], capture_output=True, text=True, env={"COLUMNS": "160"})
    return r.stdout


def ns_of(num, unit):
    decimals = len(num.split(".")[1]) if "." in num else 0
    return float(num) * UNIT[unit], 0.5 * 10 ** -decimals * UNIT[unit] + 1


bad = []


def near(trace, what, text, ref):
    m = re.fullmatch(TIME, text)
    if not m:
        bad.append("%s: %s: not a time: %r" % (trace, what, text))
        return
    v, tol = ns_of(*m.groups())
    if abs(v - ref) > tol:
        bad.append("%s: %s says %s, the trace %d ns" % (trace, what, text, ref))


def per_device(out, pattern):
    """{device: first match of pattern after the line that names it}"""
    dev, found = None, {}
    for line in out.splitlines():
        d = re.match(r"device (\d+)\b", line)
        if d:
            dev = int(d.group(1))
        m = re.search(pattern, line)
        if m and dev is not None and dev not in found:
            found[dev] = m.group(1)
    return found


for t in traces:
    s = json.loads(run("summary", "--json", t))
    peaks = {d["index"]: d["peak_time_ns"] for d in s["devices"] if d["peak_bytes"]}
    end = s["duration_ns"]
    said = {}
    for cmd, pattern in (("top", r"^device \d+: peak [^ ]+ [^ ]+ at (" + TIME + ")"),
                         ("growth", r"^  peak [^ ]+ [^ ]+ at (" + TIME + ")"),
                         ("accounting", r"at the peak (" + TIME + ")"),
                         ("fragmentation", r"at the peak \((" + TIME + ")\)")):
        for dev, text in per_device(run(cmd, t), pattern).items():
            if dev in peaks:
                near(t, "%s's peak of device %d" % (cmd, dev), text, peaks[dev])
                said.setdefault(dev, {})[cmd] = text
    for dev, by in said.items():
        if len(set(by.values())) > 1:
            bad.append("%s: device %d's peak reads %s" % (t, dev, by))
    for cmd, pattern in (("accounting", r"at the end (" + TIME + ")"),
                         ("fragmentation", r"at the end \((" + TIME + ")\)")):
        for dev, text in per_device(run(cmd, t), pattern).items():
            near(t, "%s's end on device %d" % (cmd, dev), text, end)
    if s["failures"]:
        first = min(f["time_ns"] for f in s["failures"])
        # oom lists an error at its last retried call: one of the failures
        m = re.search(r"^(" + TIME + r")  \S+ of ", run("oom", t), re.M)
        if m:
            ref = min((f["time_ns"] for f in s["failures"]),
                      key=lambda v: abs(v - ns_of(*re.fullmatch(TIME, m.group(1)).groups())[0]))
            near(t, "oom's first error", m.group(1), ref)
        subprocess.run([cli, "export", "--format", "chrome-json", "-o", cjson, t], check=True)
        ev = json.load(open(cjson))
        ev = ev["traceEvents"] if isinstance(ev, dict) else ev
        ts = [e["ts"] for e in ev if e.get("cat") == "oom"]
        if ts and abs(min(ts) * 1e3 - first) > 1:
            bad.append("%s: the export's first OOM at %s us, the trace's %d ns" % (t, min(ts), first))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
echo ok
