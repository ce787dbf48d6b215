#!/usr/bin/env bash
# gpumemtrace check --baseline B --max-increase PCT: each device's peak
# against the baseline's same device; a peak exactly PCT above passes, more
# fails; a device the baseline never used is an infinite increase.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

peak_trace() { # file dev0-peak [dev1-peak]
	{
		echo "header start_mono=0 features=1"
		echo "events tid=1"
		echo "ev api=cudaMalloc t=10 ptr=0x1000000 size=$(($2 / 2)) dev=0"
		echo "ev api=cudaMalloc t=20 ptr=0x9000000 size=$(($2 - $2 / 2)) dev=0"
		echo "ev api=cudaFree t=30 ptr=0x1000000 dev=0"
		[ -z "${3:-}" ] || echo "ev api=cudaMalloc t=40 ptr=0x5000 size=$3 dev=1"
		echo "trailer t=100"
	} | "$MKTRACE" "$1"
}
peak_trace base.gmt 1000000
peak_trace plus10.gmt 1100000      # +10%
peak_trace plus10b.gmt 1100001     # one byte more
peak_trace smaller.gmt 900000
peak_trace newdev.gmt 1000000 4096 # device 1 is new

st() {
	local want=$1
	shift
	set +e
	"$GMT_CLI" check "$@" >out 2>err
	local rc=$?
	set -e
	[ $rc -eq "$want" ] || fail "check $*: exit $rc, expected $want: $(cat out err)"
}

st 1 --baseline base.gmt --max-increase 5 plus10.gmt
grep -q '^FAIL  max-increase .*device 0 .*plus10.gmt: peak 1.05 MiB (1100000 B) vs baseline 977 KiB (1000000 B): +10.00% > limit +5%' out ||
	fail "fail line: $(cat out)"
st 0 --baseline base.gmt --max-increase 15 plus10.gmt
grep -q '^PASS  max-increase .*+10.00% <= limit +15%' out || fail "pass line: $(cat out)"
st 0 --baseline base.gmt --max-increase 10 plus10.gmt # exactly at the limit
st 0 --baseline base.gmt --max-increase 10% plus10.gmt
st 1 --baseline base.gmt --max-increase 9.99 plus10.gmt
st 1 --baseline base.gmt --max-increase 10 plus10b.gmt
st 0 --baseline base.gmt --max-increase 0 smaller.gmt
st 0 --baseline base.gmt --max-increase 0 base.gmt
st 1 --baseline base.gmt --max-increase 1000 newdev.gmt
grep -q '^PASS  max-increase .*device 0 ' out || fail "device 0: $(cat out)"
grep -q '^FAIL  max-increase .*device 1 .*+inf%' out || fail "device 1: $(cat out)"
st 0 --baseline base.gmt --max-increase 0 --device 0 newdev.gmt

st 1 --json --baseline base.gmt --max-increase 5 --max-peak 2MB plus10.gmt
expect_eq json "$(json out '[(c["check"], c["device"], c["pass"], c["measured_bytes"], c.get("baseline_bytes"), c.get("limit_bytes"), c.get("limit_pct")) for c in d["checks"]]')" \
	"[('max-peak', 0, True, 1100000, None, 2000000, None), ('max-increase', 0, False, 1100000, 1000000, None, 5)]"
expect_eq json-pct "$(json out 'float(round(d["checks"][1]["increase_pct"], 6))')" 10.0
expect_eq json-baseline "$(json out '[d["baseline"]["path"], d["baseline"]["peak_bytes"]]')" "['base.gmt', 1000000]"
st 1 --json --baseline base.gmt --max-increase 5 newdev.gmt
expect_eq json-inf "$(json out '[c["increase_pct"] for c in d["checks"]]')" "[0, None]"

# errors: a missing baseline, a bad percentage
st 2 --baseline nope.gmt --max-increase 5 base.gmt
grep -q 'cannot open nope.gmt' err || fail "missing baseline: $(cat err)"
st 2 --baseline base.gmt --max-increase five base.gmt
st 2 --baseline base.gmt --max-increase -1 base.gmt
echo ok
