"""Sets what a program on a real GPU did beside what its trace holds.
Used by scripts/gpu-check.sh; prints one table row per call, details above.

  check.py plain  CLI PROG_OUTPUT TRACE    pointer-by-pointer match
  check.py torch  CLI PROG_OUTPUT TRACE    peaks: PyTorch, trace, NVML
  check.py jax    CLI PROG_OUTPUT TRACE    XLA's policy as the trace shows it
  check.py cupy   CLI PROG_OUTPUT TRACE    pool totals against the trace
  check.py nccl   CLI PROG_OUTPUT TRACE    what libnccl holds
"""
import collections
import json
import re
import subprocess
import sys

EVENT = re.compile(r"EVENT #\d+ \S+ tid \d+ (\S+) dev (-?\d+) ptr (0x[0-9a-f]+) size (\d+).* stack \d+ (.*)$")
FREEISH = re.compile(r"Free|Release|Unmap|Destroy|Unregister")
MIB = 1 << 20


def cli(cli_path, *args):
    p = subprocess.run([cli_path, *args], capture_output=True, text=True)
    return p.stdout, p.returncode, p.stderr


def summary(cli_path, trace):
    out, rc, err = cli(cli_path, "summary", "--json", trace)
    if rc not in (0,):
        print("  summary exit %d: %s" % (rc, err.strip()))
    return json.loads(out) if out.strip() else {}


def result_line(path):
    for line in open(path, errors="replace"):
        if line.startswith("RESULT "):
            return json.loads(line[7:]) if line[7:].lstrip().startswith("{") else line[7:].strip()
    return None


def trace_defects(dump):
    """What a trace of a real GPU must never hold (each seen once on an H100)."""
    bad = []
    if re.search(r"DEVICE \d+ .*uuid 00000000-0000-0000-0000-000000000000", dump):
        bad.append("a DEVICE record without its uuid")
    if re.search(r"EVENT #\d+ -", dump):
        bad.append("an event before the trace's start")
    if not re.search(r"^@\d+ +DEVICE ", dump, re.M):
        bad.append("no DEVICE record")
    return bad


def events(cli_path, trace):
    out, rc, err = cli(cli_path, "dump", trace)
    events.defects = trace_defects(out)
    evs = []
    for line in out.splitlines():
        m = EVENT.search(line)
        if m:
            api, dev, ptr, size, res = m.groups()
            evs.append({"api": api, "dev": int(dev), "ptr": int(ptr, 16), "size": int(size),
                        "ok": res.strip() == "ok", "res": res.strip(), "used": False})
    return evs


def mib(n):
    return "-" if n is None else "%.1f MiB" % (n / MIB)


def plain(cli_path, prog_out, trace):
    evs = events(cli_path, trace)
    want_alloc, want_free, want_fail = [], [], []
    for line in open(prog_out):
        f = line.split()
        if not f:
            continue
        if f[0] == "ALLOC":
            want_alloc.append((f[1], int(f[2], 16), int(f[3])))
        elif f[0] == "FREE":
            want_free.append((f[1], int(f[2], 16)))
        elif f[0] == "FAIL":
            want_fail.append((f[1], int(f[2])))
    missing = []
    for kind, ptr, size in want_alloc:
        hit = next((e for e in evs if not e["used"] and e["ok"] and e["ptr"] == ptr and e["size"] == size
                    and not FREEISH.search(e["api"])), None)
        if hit:
            hit["used"] = True
            print("  alloc %-13s %#x %10d  <- %s" % (kind, ptr, size, hit["api"]))
        else:
            missing.append("alloc %s %#x %d" % (kind, ptr, size))
    for kind, ptr in want_free:
        hit = next((e for e in evs if not e["used"] and e["ok"] and e["ptr"] == ptr and FREEISH.search(e["api"])), None)
        if hit:
            hit["used"] = True
            print("  free  %-13s %#x  <- %s" % (kind, ptr, hit["api"]))
        else:
            missing.append("free %s %#x" % (kind, ptr))
    for kind, size in want_fail:
        hit = next((e for e in evs if not e["used"] and not e["ok"] and e["size"] == size), None)
        if hit:
            hit["used"] = True
            print("  fail  %-13s %d  <- %s %s" % (kind, size, hit["api"], hit["res"]))
        else:
            missing.append("failed %s %d" % (kind, size))
    extra = collections.Counter()
    extra_bytes = collections.Counter()
    for e in evs:
        if not e["used"]:
            key = e["api"] + ("" if e["ok"] else " (failed)")
            extra[key] += 1
            extra_bytes[key] += e["size"]
    missing += events.defects
    for m in missing:
        print("  MISSING " + m)
    for k in sorted(extra):
        print("  not the program's own: %s x%d, %d bytes" % (k, extra[k], extra_bytes[k]))
    s = summary(cli_path, trace)
    leak = sum(d.get("live_bytes_at_end", 0) for d in s.get("devices", []))
    print("  live device bytes at the end: %d (the program leaves 64 MiB)" % leak)
    print("ROW | %d/%d allocs, %d/%d frees, %d/%d failures matched%s | %s | lost %s |" % (
        len(want_alloc) - sum(m.startswith("alloc") for m in missing), len(want_alloc),
        len(want_free) - sum(m.startswith("free") for m in missing), len(want_free),
        len(want_fail) - sum(m.startswith("failed") for m in missing), len(want_fail),
        "".join("; " + d for d in events.defects),
        ", ".join("%s x%d" % kv for kv in sorted(extra.items())) or "none",
        s.get("lost_events")))
    return 0 if not missing else 1


def peak(s):
    devs = s.get("devices") or [{}]
    return devs[0].get("peak_bytes")


def by_library(s, n=6):
    devs = s.get("devices") or [{}]
    libs = devs[0].get("by_library") or []
    return ", ".join("%s %s" % (l["library"].split("/")[-1], mib(l["bytes"])) for l in libs[:n])


def accounting(cli_path, trace):
    out, rc, err = cli(cli_path, "accounting", trace)
    print("  accounting:\n" + "\n".join("    " + l for l in out.splitlines()))


def defects(cli_path, trace):
    """trace_defects of the trace, printed; what every mode checks."""
    events(cli_path, trace)
    for d in events.defects:
        print("  DEFECT " + d)
    return "".join("; " + d for d in events.defects)


def torch_row(cli_path, prog_out, trace):
    r = result_line(prog_out) or {}
    bad = defects(cli_path, trace)
    s = summary(cli_path, trace)
    accounting(cli_path, trace)
    print("  by library at the peak: " + by_library(s))
    print("  calls: " + ", ".join("%s %d" % (k, v["count"]) for k, v in sorted((s.get("calls") or {}).items())))
    print("ROW | torch reserved %s, allocated %s | traced peak %s | NVML process %s | events %s lost %s%s |" % (
        mib(r.get("max_memory_reserved")), mib(r.get("max_memory_allocated")), mib(peak(s)),
        mib(r["nvml_process_bytes"]) if isinstance(r.get("nvml_process_bytes"), int) else r.get("nvml_process_bytes"),
        s.get("events"), s.get("lost_events"), bad))
    return 1 if bad or s.get("lost_events") or not r else 0


def generic(cli_path, prog_out, trace, what):
    r = result_line(prog_out) or {}
    bad = defects(cli_path, trace)
    s = summary(cli_path, trace)
    print("  program: " + json.dumps(r))
    print("  by library at the peak: " + by_library(s))
    print("  calls: " + ", ".join("%s %d" % (k, v["count"]) for k, v in sorted((s.get("calls") or {}).items())))
    mem = s.get("memory") or {}
    kinds = ", ".join("%s %s" % (k, mib(v.get("peak_bytes"))) for k, v in mem.items()
                      if isinstance(v, dict) and v.get("peak_bytes"))
    print("ROW | %s | traced device peak %s | peaks by kind: %s | events %s lost %s%s |" % (
        what, mib(peak(s)), kinds or "-", s.get("events"), s.get("lost_events"), bad))
    return 1 if bad or s.get("lost_events") or not r else 0


def main():
    mode, cli_path, prog_out, trace = sys.argv[1:5]
    if mode == "plain":
        return plain(cli_path, prog_out, trace)
    if mode == "torch":
        return torch_row(cli_path, prog_out, trace)
    return generic(cli_path, prog_out, trace, mode)


if __name__ == "__main__":
    sys.exit(main())
