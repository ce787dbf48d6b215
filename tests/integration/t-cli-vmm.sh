#!/usr/bin/env bash
# VMM accounting: a cuMemCreate handle stays counted until it is released,
# unmapped, and every retain is balanced, in whatever order that happens.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

# handle 0x11 (1 MiB on device 0): reserve, map, release, then unmap.
# handle 0x22 (2 MiB): map, unmap, then release.
# handle 0x33 (4 MiB): map, retain by address, release, unmap, release.
# handle 0x44 (8 MiB on the host, location 2): not device memory.
cat >vmm.txt <<'T'
header start_mono=0
events tid=1
ev api=cuMemAddressReserve t=10 ptr=0x7f0000000000 size=0x10000000 dev=0 aux=0x200000
ev api=cuMemCreate  t=20 ptr=0x11 size=0x100000 aux=1
ev api=cuMemMap     t=30 ptr=0x7f0000000000 size=0x100000 aux=0x11
ev api=cuMemRelease t=40 ptr=0x11
ev api=cuMemCreate  t=50 ptr=0x22 size=0x200000 aux=1
ev api=cuMemMap     t=60 ptr=0x7f0000100000 size=0x200000 aux=0x22
ev api=cuMemUnmap   t=70 ptr=0x7f0000000000 size=0x100000
ev api=cuMemUnmap   t=80 ptr=0x7f0000100000 size=0x200000
ev api=cuMemRelease t=90 ptr=0x22
ev api=cuMemCreate  t=100 ptr=0x33 size=0x400000 aux=1
ev api=cuMemMap     t=110 ptr=0x7f0000400000 size=0x400000 aux=0x33
ev api=cuMemRetainAllocationHandle t=120 ptr=0x33 aux=0x7f0000400100
ev api=cuMemRelease t=130 ptr=0x33
ev api=cuMemUnmap   t=140 ptr=0x7f0000400000 size=0x400000
ev api=cuMemRelease t=150 ptr=0x33 result=1
ev api=cuMemCreate  t=160 ptr=0x44 size=0x800000 aux=2 dev=-1
ev api=cuMemRelease t=170 ptr=0x33
ev api=cuMemAddressFree t=180 ptr=0x7f0000000000 size=0x10000000
T
{ cat vmm.txt; echo "trailer t=200"; } | "$MKTRACE" vmm.gmt
"$GMT_CLI" summary --json vmm.gmt >s.json 2>err || fail "summary exit $?: $(cat err)"
d='d["devices"][0]'
# 0x11 counted 20..70 (released at 40 but mapped until 70), 0x22 50..90:
# 3 MiB at t=50; 0x33 alone (4 MiB) at t=100 is the peak
expect_eq peak "$(json s.json "$d[\"peak_bytes\"]")" $((0x400000))
expect_eq peak_time "$(json s.json "$d[\"peak_time_ns\"]")" 100
expect_eq live_end "$(json s.json "$d[\"live_bytes_at_end\"]")" 0
expect_eq count_end "$(json s.json "$d[\"live_allocations_at_end\"]")" 0
expect_eq ndev "$(json s.json 'len(d["devices"])')" 1
expect_eq vmm_host "$(json s.json 'd["memory"]["vmm_host"]["live_bytes_at_end"]')" $((0x800000))
expect_eq va.peak "$(json s.json 'd["memory"]["reserved_va"]["peak_bytes"]')" $((0x10000000))
expect_eq va.end "$(json s.json 'd["memory"]["reserved_va"]["live_bytes_at_end"]')" 0

# Cut the same trace short at each step and check the live device bytes.
live_after() { # t -> device live bytes after the events up to time t
	awk -v t="$1" '/^ev/ { for (i = 1; i <= NF; i++) if ($i ~ /^t=/) { split($i, a, "="); if (a[2] + 0 > t) next } } { print }' vmm.txt >cut.txt
	"$MKTRACE" cut.gmt <cut.txt
	"$GMT_CLI" summary --json cut.gmt 2>/dev/null >cut.json
	json cut.json 'd["devices"][0]["live_bytes_at_end"] if d["devices"] else 0'
}
expect_eq "after release, still mapped" "$(live_after 40)" $((0x100000))
expect_eq "both live" "$(live_after 60)" $((0x300000))
expect_eq "0x11 unmapped after its release" "$(live_after 70)" $((0x200000))
expect_eq "0x22 unmapped, not released" "$(live_after 80)" $((0x200000))
expect_eq "0x22 released after its unmap" "$(live_after 90)" 0
expect_eq "retained, released once" "$(live_after 130)" $((0x400000))
expect_eq "retained, released once, unmapped" "$(live_after 140)" $((0x400000))
expect_eq "a failed release changes nothing" "$(live_after 150)" $((0x400000))
expect_eq "retain balanced" "$(live_after 170)" 0
echo ok
