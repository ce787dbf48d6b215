#!/usr/bin/env bash
# fragmentation: known answers by construction. Interleaved frees (the
# segment inventory at the peak and at the end: count, bytes, size classes,
# ages; no figure from the addresses), the size histogram, requested against
# granted, VMM reserved/mapped/physical, stream-ordered allocations, the
# cache's free space said to be invisible, several traces, --device, error
# exits.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"
MiB=1048576
S=1000000000
B=$((0x10000000))

{
	echo "header start_mono=$S pid=21"
	echo "device ord=0 name=G total=$((1024 * MiB))"
	echo "events tid=1"
	# eight 1 MiB blocks back to back
	for i in 0 1 2 3 4 5 6 7; do
		echo "ev api=cudaMalloc t=$(((1 + i) * S)) ptr=$((B + i * MiB)) size=$MiB dev=0"
	done
	# holes: block 1 (1 MiB), blocks 3-4 (2 MiB)
	echo "ev api=cudaFree t=$((9 * S)) ptr=$((B + 1 * MiB))"
	echo "ev api=cudaFree t=$((10 * S)) ptr=$((B + 3 * MiB))"
	echo "ev api=cudaFree t=$((11 * S)) ptr=$((B + 4 * MiB))"
	# a 4 MiB block after them: the peak (9 MiB over a 12 MiB span)
	echo "ev api=cuMemAlloc_v2 t=$((12 * S)) ptr=$((B + 8 * MiB)) size=$((4 * MiB))"
	# block 0 goes: at the end 8 MiB over 10 MiB, one 2 MiB gap
	echo "ev api=cudaFree t=$((13 * S)) ptr=$B"
	# rounding on device 1: 100 B -> 512 B, 1 MiB + 1 -> 2 MiB, 3 MiB -> 4 MiB
	echo "ev api=cudaMalloc t=$((14 * S)) ptr=0x20000000 size=100 dev=1"
	echo "ev api=cudaMalloc t=$((14 * S + 1)) ptr=0x21000000 size=$((MiB + 1))"
	echo "ev api=cudaMalloc t=$((14 * S + 2)) ptr=0x22000000 size=$((3 * MiB))"
	# VMM on device 2: 64 MiB reserved, two 2 MiB handles mapped, one undone
	V=$((0x7000000000))
	echo "ev api=cuMemAddressReserve t=$((15 * S)) ptr=$V size=$((64 * MiB)) dev=2"
	echo "ev api=cuMemCreate t=$((15 * S + 1)) ptr=1 size=$((2 * MiB)) aux=1"
	echo "ev api=cuMemCreate t=$((15 * S + 2)) ptr=2 size=$((2 * MiB)) aux=1"
	echo "ev api=cuMemMap t=$((15 * S + 3)) ptr=$V size=$((2 * MiB)) aux=1"
	echo "ev api=cuMemMap t=$((15 * S + 4)) ptr=$((V + 2 * MiB)) size=$((2 * MiB)) aux=2"
	echo "ev api=cuMemUnmap t=$((15 * S + 5)) ptr=$((V + 2 * MiB)) size=$((2 * MiB))"
	echo "ev api=cuMemRelease t=$((15 * S + 6)) ptr=2"
	# stream-ordered on device 3: 2 MiB outstanding at most, 1 MiB at the end
	echo "ev api=cudaMallocAsync t=$((16 * S)) ptr=0x40000000 size=$MiB dev=3 aux=7"
	echo "ev api=cudaMallocAsync t=$((16 * S + 1)) ptr=0x40100000 size=$MiB aux=7"
	echo "ev api=cudaFreeAsync t=$((16 * S + 2)) ptr=0x40000000 aux=7"
	echo "trailer t=$((17 * S))"
} | "$MKTRACE" holes.gmt

"$GMT_CLI" fragmentation --json holes.gmt >h.json 2>err || fail "fragmentation exit $?: $(cat err)"
[ ! -s err ] || fail "unexpected stderr: $(cat err)"
d='d["traces"][0]["devices"]'
expect_eq devices "$(json h.json "[x['index'] for x in $d]")" "[0, 1, 2, 3]"
p="$d[0][\"segments_at_peak\"]"
# the peak (+11 s): blocks 0, 2, 5, 6, 7 and the 4 MiB one; ages 11, 9, 6,
# 5, 4 and 0 s: the median (the third of six) 5 s
expect_eq peak "$(json h.json "[$p[k] for k in ('time_ns', 'segments', 'bytes', 'oldest_age_ns', 'median_age_ns')]")" \
	"[$((11 * S)), 6, $((9 * MiB)), $((11 * S)), $((5 * S))]"
expect_eq peak.classes "$(json h.json "[(k, v['segments']) for k, v in $p['classes'].items() if v['segments']]")" \
	"[('other_2MiB_multiples', 1), ('other_sizes', 5)]"
expect_eq peak.pytorch "$(json h.json "$p['pytorch_like']")" False
e="$d[0][\"segments_at_end\"]"
expect_eq end "$(json h.json "[$e[k] for k in ('segments', 'bytes')]")" "[5, $((8 * MiB))]"
expect_eq oom "$(json h.json "$d[0]['segments_at_first_oom']")" None
expect_eq cache "$(json h.json "$d[0]['cache_free']")" "{'known': False, 'bytes': None, 'source': None}"
expect_eq nospan "$(json h.json "'span_bytes' in str(d) or 'external_fragmentation' in str(d)")" False
expect_eq hist "$(json h.json "[(b['min_bytes'], b['count'], b['bytes']) for b in $d[0]['size_histogram']]")" \
	"[($MiB, 8, $((8 * MiB))), ($((4 * MiB)), 1, $((4 * MiB)))]"
expect_eq waste0 "$(json h.json "$d[0]['rounding_waste_bytes']")" 0
# 100 B -> 512 B, 1 MiB + 1 -> 2 MiB, 3 MiB -> 4 MiB
expect_eq round1 "$(json h.json "[$d[1]['allocations'], $d[1]['granted']['driver_pages_estimated'], $d[1]['rounding_waste_bytes']]")" \
	"[3, {'count': 3, 'requested_bytes': 4194405, 'granted_bytes': 6291968}, 2097563]"
expect_eq async3 "$(json h.json "$d[3]['granted']['stream_ordered']")" \
	"{'count': 2, 'requested_bytes': $((2 * MiB)), 'granted_bytes': None}"
expect_eq hist1 "$(json h.json "[(b['min_bytes'], b['max_bytes'], b['count']) for b in $d[1]['size_histogram']]")" \
	"[(64, 127, 1), ($MiB, $((2 * MiB - 1)), 1), ($((2 * MiB)), $((4 * MiB - 1)), 1)]"
v='d["traces"][0]["vmm"]'
expect_eq vmm "$(json h.json "[$v[k] for k in ('reserved_peak_bytes', 'reserved_end_bytes', 'mapped_peak_bytes', 'mapped_end_bytes', 'physical_peak_bytes', 'physical_end_bytes')]")" \
	"[$((64 * MiB)), $((64 * MiB)), $((4 * MiB)), $((2 * MiB)), $((4 * MiB)), $((2 * MiB))]"
q='d["traces"][0]["pools"]'
expect_eq pools "$(json h.json "[$q[k] for k in ('stream_ordered_peak_bytes', 'stream_ordered_end_bytes', 'pools_created', 'reservation_known')]")" \
	"[$((2 * MiB)), $MiB, 0, False]"

# text
"$GMT_CLI" fragmentation holes.gmt >h.txt 2>err || fail "fragmentation text exit $?"
grep -q 'at the peak (+11.000 s): 6 segments, 9.00 MiB; oldest 11.000 s, median age 5.000 s' h.txt ||
	fail "no peak line: $(cat h.txt)"
grep -q 'free inside the cache: not visible from driver calls' h.txt || fail "no cache caveat: $(cat h.txt)"
! grep -q 'span\|external fragmentation' h.txt || fail "address span still reported: $(cat h.txt)"
grep -q 'reservations are not in the trace' h.txt || fail "no pool caveat: $(cat h.txt)"

# --device, several traces
"$GMT_CLI" fragmentation --json --device 0 holes.gmt holes.gmt >m.json 2>err || fail "multi exit $?"
expect_eq multi.devices "$(json m.json '[[x["index"] for x in t["devices"]] for t in d["traces"]]')" "[[0], [0]]"
expect_eq multi.totals "$(json m.json '[d["totals"][k] for k in ("processes", "live_bytes_at_peaks", "segments_at_peaks")]')" \
	"[2, $((18 * MiB)), 12]"
"$GMT_CLI" fragmentation holes.gmt holes.gmt >m.txt 2>err || fail "multi text exit $?"
grep -q 'per process' m.txt || fail "no per-process table: $(cat m.txt)"

# incomplete
printf 'header start_mono=1\nev api=cudaMalloc t=5 ptr=0x1000 size=4096 dev=0\n' | "$MKTRACE" torn.gmt
"$GMT_CLI" fragmentation torn.gmt >t.txt 2>err || fail "incomplete exit $?"
grep -q 'incomplete' t.txt || fail "no incomplete note: $(cat t.txt)"

# errors
echo "not a trace" >bad.gmt
expect_exit "no trace" 2 "$GMT_CLI" fragmentation
expect_exit "width not taken" 2 "$GMT_CLI" fragmentation --width 80 holes.gmt
expect_exit "bad device" 2 "$GMT_CLI" fragmentation --device -1 holes.gmt
expect_exit "missing file" 3 "$GMT_CLI" fragmentation nosuch.gmt
expect_exit "not a trace" 4 "$GMT_CLI" fragmentation holes.gmt bad.gmt
echo ok
