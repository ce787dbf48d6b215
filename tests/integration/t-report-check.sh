#!/usr/bin/env bash
# gpumemtrace check: the CI gate. Limits pass exactly at the boundary and fail
# one byte above it; --device picks a device; --max-live-at-end; exit codes
# 0 pass, 1 fail, 2 any error; several traces, one line each.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

# device 0: peak 1.5 GiB (1610612736) at t=20, 512 MiB live at the end;
# device 1: peak 3000 at t=40, 1000 live at the end.
"$MKTRACE" run.gmt <<'T'
header start_mono=0 features=1
device ord=0 name="NVIDIA H100 80GB HBM3" total=85899345920 cc=9.0 driver=12040
device ord=1 name="NVIDIA H100 80GB HBM3" total=85899345920 cc=9.0 driver=12040
events tid=1
ev api=cudaMalloc t=10 ptr=0x10000000 size=1073741824 dev=0
ev api=cudaMalloc t=20 ptr=0x60000000 size=536870912 dev=0
ev api=cudaFree t=25 ptr=0x10000000 dev=0
ev api=cudaMalloc t=30 ptr=0x1000 size=2000 dev=1
ev api=cudaMalloc t=40 ptr=0x2000 size=1000 dev=1
ev api=cudaFree t=50 ptr=0x1000 dev=1
ev api=cudaMalloc t=60 ptr=0x70000000 size=99999999999 dev=0 result=2
trailer t=100
T

st() { # expected-status args...: runs check, compares the exit status
	local want=$1
	shift
	set +e
	"$GMT_CLI" check "$@" >out 2>err
	local rc=$?
	set -e
	[ $rc -eq "$want" ] || fail "check $*: exit $rc, expected $want: $(cat out err)"
}

# the peak, at the boundary, in units and in bytes
st 0 --max-peak 1.5GiB --device 0 run.gmt
grep -q '^PASS  max-peak .*device 0 .*run.gmt: peak 1.50 GiB (1610612736 B) <= limit 1.50 GiB (1610612736 B)' out ||
	fail "pass line: $(cat out)"
st 0 --max-peak 1610612736 --device 0 run.gmt
st 1 --max-peak 1610612735 --device 0 run.gmt
grep -q '^FAIL  max-peak .*device 0 .*peak 1.50 GiB (1610612736 B) > limit' out || fail "fail line: $(cat out)"
expect_eq summary "$(tail -1 out)" "check: 0 passed, 1 failed"
st 0 --max-peak 1536MiB --device 0 run.gmt
st 1 --max-peak 1.6GB --device 0 run.gmt # 1.6e9 < 1.5 GiB

# --device: device 1 alone passes at 3000; without --device every device is
# checked, and device 0 fails 3000
st 0 --max-peak 3000 --device 1 run.gmt
st 1 --max-peak 2999 --device 1 run.gmt
st 1 --max-peak 3000 run.gmt
expect_eq lines "$(grep -c '^PASS  max-peak .*device 1' out) $(grep -c '^FAIL  max-peak .*device 0' out)" "1 1"

# --max-live-at-end: 512 MiB on device 0, 1000 B on device 1
st 0 --max-live-at-end 512MiB run.gmt
st 1 --max-live-at-end 536870911 --device 0 run.gmt
st 0 --max-live-at-end 1000 --device 1 run.gmt
st 1 --max-live-at-end 999 --device 1 run.gmt
grep -q '^FAIL  max-live-at-end .*live at end 1000 B > limit 999 B' out || fail "live line: $(cat out)"

# the JSON form
st 1 --json --max-peak 3000 --max-live-at-end 999 --device 1 run.gmt
expect_eq json "$(json out '[d["passed"], d["checks_total"], d["checks_failed"]]')" "[False, 2, 1]"
st 0 --json --max-peak 3000 --max-live-at-end 1000 --device 1 run.gmt
expect_eq json-checks "$(json out '[(c["trace"], c["check"], c["device"], c["measured_bytes"], c["limit_bytes"], c["pass"]) for c in d["checks"]]')" \
	"[('run.gmt', 'max-peak', 1, 3000, 3000, True), ('run.gmt', 'max-live-at-end', 1, 1000, 1000, True)]"

# several traces (one per rank): each is checked, the line names it
"$MKTRACE" rank1.gmt <<'T'
header start_mono=0 features=1
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=5000 dev=0
trailer t=100
T
st 0 --max-peak 1.5GiB --device 0 rank1.gmt run.gmt
expect_eq two-lines "$(grep -c '^PASS' out)" 2
st 1 --max-peak 1GiB --device 0 run.gmt rank1.gmt
grep -q '^FAIL .*device 0 .*run.gmt: peak 1.50 GiB' out || fail "rank 0 line: $(cat out)"
grep -q '^PASS .*device 0 .*rank1.gmt: peak 4.88 KiB (5000 B)' out || fail "rank 1 line: $(cat out)"
st 1 --max-peak 4999 --device 0 rank1.gmt

# exit 2: every error
st 2 --max-peak 1.5XB run.gmt
grep -q "bad size '1.5XB'" err || fail "bad size message: $(cat err)"
expect_eq one-line "$(wc -l <err)" 1
st 2 --max-peak -5 run.gmt
st 2 run.gmt
grep -q 'no check given' err || fail "no-check message: $(cat err)"
st 2 --max-peak 1GiB missing.gmt
grep -q 'cannot open missing.gmt' err || fail "missing message: $(cat err)"
echo "not a trace" >junk.gmt
st 2 --max-peak 1GiB junk.gmt # the other commands say 4
st 2 --max-peak 1GiB run.gmt missing.gmt
st 2 --max-peak 1GiB --device 7 run.gmt
st 2 --max-peak 1GiB --bogus run.gmt
st 2 --max-peak
st 2 --max-peak 1GiB
st 2 --max-increase 5 run.gmt
st 2 --baseline run.gmt run.gmt
# a corrupt chunk in the middle: an error here, not a partial result
"$MKTRACE" tail.gmt <<'T'
header start_mono=0
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=10 dev=0
chunk
events tid=1
ev api=cudaMalloc t=20 ptr=0x2000 size=10 dev=0
trailer t=30
T
printf '\xff' | dd of=tail.gmt bs=1 seek=$((64 + 20)) conv=notrunc 2>/dev/null
st 2 --max-peak 1GiB tail.gmt
grep -q 'corrupt' err || fail "corrupt message: $(cat err)"

# --help: examples for CI
"$GMT_CLI" check --help >help || fail "--help exit $?"
grep -q 'gpumemtrace check --max-peak 8GiB gpumemtrace.\*.gmt' help || fail "no example in --help"
echo ok
