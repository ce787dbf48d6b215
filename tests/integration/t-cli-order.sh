#!/usr/bin/env bash
# Batches of different threads interleave in the file: the summary replays
# events in time order, so a free written before its allocation still
# matches it, and the peak is the peak in time.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

"$MKTRACE" order.gmt <<'T'
header start_mono=0
events tid=2
ev api=cudaFree t=300 ptr=0x1000 dev=0
ev api=cudaMalloc t=400 ptr=0x3000 size=5
chunk
events tid=1
ev api=cudaMalloc t=100 ptr=0x1000 size=10 dev=0
ev api=cudaMalloc t=200 ptr=0x2000 size=20
ev api=cudaFree t=500 ptr=0x2000
trailer t=600
T
"$GMT_CLI" summary --json order.gmt >s.json 2>err || fail "summary exit $?: $(cat err)"
d='d["devices"][0]'
expect_eq peak "$(json s.json "$d[\"peak_bytes\"]")" 30
expect_eq peak_time "$(json s.json "$d[\"peak_time_ns\"]")" 200
expect_eq live_end "$(json s.json "$d[\"live_bytes_at_end\"]")" 5
expect_eq unmatched "$(json s.json 'd["unmatched_frees"]')" 0
# dump keeps the file order
"$GMT_CLI" dump order.gmt >dump.txt || fail "dump exit $?"
expect_eq "first event" "$(grep -m1 'EVENT #0' dump.txt | grep -o 'cuda[A-Za-z]*')" cudaFree
echo ok
