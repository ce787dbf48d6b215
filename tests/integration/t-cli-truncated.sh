#!/usr/bin/env bash
# A truncated trace's duration is the time of the last record of its last
# good chunk (here an NVML sample 2 s in, after the last allocation), and
# every command says the same: summary, the multi-trace reports' heads,
# leaks' "last flush". A third chunk (5 s in) is torn off. Event times before
# the header's start never make a negative duration.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
S=1000000000
"$MKTRACE" full.gmt <<T
header start_mono=$S pid=51
device ord=0 name=sim total=0x40000000
events tid=1
ev api=cudaMalloc t=$((S + 5000000)) ptr=0x1000 size=4096 dev=0
ev api=cudaMalloc t=$((S + 7000000)) ptr=0x2000 size=4096 dev=0
chunk
sample t=$((S + 2000000000)) used=0x1000000 total=0x40000000 process=0x800000
chunk
events tid=1
ev api=cudaFree t=$((S + 5000000000)) ptr=0x1000
T
size=$(stat -c %s full.gmt)
head -c $((size - 3)) full.gmt >torn.gmt
"$GMT_CLI" summary --json torn.gmt >s.json 2>/dev/null || fail "summary exit $?"
expect_eq summary "$(json s.json "d['duration_ns']")" 2000000000
"$GMT_CLI" summary torn.gmt >s.txt 2>/dev/null || fail "summary text exit $?"
grep -q '^duration  2.000000000 s, 2 events' s.txt || fail "summary text: $(grep duration s.txt)"
for c in growth accounting fragmentation oom; do
	"$GMT_CLI" "$c" --json torn.gmt >"$c.json" 2>/dev/null || fail "$c exit $?"
	expect_eq "$c" "$(json "$c.json" "d['traces'][0]['duration_ns']")" 2000000000
	"$GMT_CLI" "$c" torn.gmt >"$c.txt" 2>/dev/null || fail "$c text exit $?"
	grep -q '^  2 events over 2.000 s$' "$c.txt" || fail "$c head: $(head -3 "$c.txt")"
done
"$GMT_CLI" leaks torn.gmt >l.txt 2>/dev/null || fail "leaks exit $?"
grep -q 'live at its last flush (+2.000 s)' l.txt || fail "leaks: $(cat l.txt)"

# events stamped before the header's start: 0, not a negative length
"$MKTRACE" early.gmt <<T
header start_mono=$((5 * S)) pid=52
events tid=1
ev api=cudaMalloc t=$S ptr=0x1000 size=4096 dev=0
T
"$GMT_CLI" summary --json early.gmt >e.json 2>/dev/null || fail "summary early exit $?"
expect_eq early "$(json e.json "d['duration_ns']")" 0
"$GMT_CLI" leaks early.gmt >le.txt 2>/dev/null || fail "leaks early exit $?"
grep -q 'last flush (+0 ns)' le.txt || fail "leaks early: $(cat le.txt)"
