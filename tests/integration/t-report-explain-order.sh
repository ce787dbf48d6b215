#!/usr/bin/env bash
# explain reads in the order a user acts: what failed or is wrong first
# (an OOM, a leak, a damaged trace), then what explains the figures, then
# notes. On every trace in the repository the findings' severities never go
# back ("problem" < "explains" < "note"), every finding has one, the
# problems are exactly the failing cases, leaks and damage, and a trace
# whose growth verdict is a leak, whose run failed on an OOM or that is cut
# opens with a problem. A small leaking train.py (the stand-in torch, a
# loss kept every step) opens with its leak, not with nvidia-smi's
# breakdown.
. "$TESTS_DIR/integration/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
root=$TESTS_DIR/..
check_order() { # trace
	"$GMT_CLI" explain --json "$1" >x.json 2>/dev/null || fail "$1: explain exit $?"
	"$GMT_CLI" growth --json "$1" >g.json 2>/dev/null || true
	"$GMT_CLI" oom --json "$1" >o.json 2>/dev/null || true
	python3 - "$1" <<'P' || fail "$1: order"
import json, sys
t = json.load(open("x.json"))["traces"][0]
fs = t["findings"]
rank = {"problem": 0, "explains": 1, "note": 2}
sev = [rank[f["severity"]] for f in fs]
assert sev == sorted(sev), "severities out of order: %s" % [(f["id"], f["severity"]) for f in fs]
problems = {"leak", "oom-hidden", "partial-data"}
for f in fs:
    want = "problem" if (f["id"] in problems or (f["id"].startswith("oom-") and f["id"] not in
                                                ("oom-retried", "oom-invisible"))) else None
    assert want is None or f["severity"] == want, "%s is %s" % (f["id"], f["severity"])
    assert want == "problem" or f["severity"] != "problem", "%s is a problem" % f["id"]
try:
    g = json.load(open("g.json"))
    leak = any(d.get("verdict") == "leak" for t_ in g.get("traces", [g]) for d in t_["devices"])
except Exception:
    leak = False
try:
    v = json.load(open("o.json"))["verdict"]
except Exception:
    v = "none"
failed = v not in ("none", "caught", "recovered-by-retry", "not-an-oom")
if leak or failed or not t["complete"] or t.get("lost_events"):
    assert fs[0]["severity"] == "problem", "%s: first is %s (leak %s, oom %s)" % (
        sys.argv[1], fs[0]["id"], leak, v)
P
}
n=0
for t in "$root"/tests/real/*/*.gmt "$root"/tests/verdicts/traces/*.gmt \
	"$root"/tests/verdicts/cut/*.gmt "$root"/tests/golden/*.gmt; do
	[ -f "$t" ] || continue
	check_order "$t"
	n=$((n + 1))
done
[ $n -ge 60 ] || fail "only $n traces"

# the stand-in torch's leaking loop, traced as a user would
py=$(python3 -c 'import sys; print(sys.executable)')
export LD_LIBRARY_PATH=$SIM_DIR SIMCUDA_CAPACITY=1G GPUMEMTRACE_SAMPLE_MS=0
export PYTHONPATH=$TESTS_DIR/python/standins
"$GMT_CLI" run -q -o "$PWD/train.gmt" -- "$py" "$TESTS_DIR/python/leaky-train.py" >out.txt 2>err.txt ||
	fail "run exit $?: $(cat err.txt)"
check_order train.gmt
expect_eq "leaky train.py: first finding" "$(json x.json 'd["traces"][0]["findings"][0]["id"]')" leak
"$GMT_CLI" explain train.gmt >x.txt || fail "explain text"
sed -n '/^[0-9]*\. /{p;q}' x.txt | grep -q '^1\. \[leak, device 0\]' || fail "text: $(grep -m1 '^1\.' x.txt)"
grep -q '^problems: what failed or is wrong$' x.txt || fail "text: no problems heading"
echo "ok: $n traces"
