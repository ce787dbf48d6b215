#!/usr/bin/env bash
# What was live at the peak, found in the summary's one pass (analysis/peakset.c):
# allocations freed after the final peak count there, those freed before it
# (even if live at an earlier peak) do not, and a new peak forgets what an
# earlier one had collected. The accounting (same pass) agrees.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

"$MKTRACE" peak.gmt <<'T'
header start_mono=1000
device ord=0 name=GPU0 total=0x100000000 uuid=00112233445566778899aabbccddeeff
device ord=1 name=GPU1 total=0x100000000
stack parent=0 ip=0x401000 parent=0 ip=0x402000 parent=0 ip=0x403000 parent=0 ip=0x404000
events tid=1
# device 0: peaks of 100, 300, then 350 (A freed before it, B live at it)
ev api=cuMemAlloc_v2 t=1100 ptr=0xa000 size=100 dev=0 stack=1
ev api=cuMemAlloc_v2 t=1200 ptr=0xb000 size=200 stack=2
ev api=cuMemFree_v2 t=1300 ptr=0xa000
ev api=cuMemAlloc_v2 t=1400 ptr=0xc000 size=150 stack=3
# after the 350 peak: B and C freed (they count for that peak, not the next)
ev api=cuMemFree_v2 t=1500 ptr=0xb000
ev api=cuMemAlloc_v2 t=1600 ptr=0xd000 size=50 stack=1
ev api=cuMemFree_v2 t=1700 ptr=0xc000
ev api=cuMemAlloc_v2 t=1800 ptr=0xe000 size=30 stack=2
# the final peak: 50 (stack 1) + 30 (stack 2) + 400 (stack 4) = 480
ev api=cuMemAlloc_v2 t=1900 ptr=0xf000 size=400 stack=4
# all freed after it: nothing live at the end
ev api=cuMemFree_v2 t=2000 ptr=0xf000
ev api=cuMemFree_v2 t=2100 ptr=0xe000
ev api=cuMemFree_v2 t=2200 ptr=0xd000
# device 1: an allocation at a live address replaces it in the peak's event
ev api=cuMemAlloc_v2 t=2300 ptr=0x1000 size=100 dev=1 stack=1
ev api=cuMemAlloc_v2 t=2400 ptr=0x1000 size=300 stack=2
ev api=cuMemAllocAsync t=2500 ptr=0x2000 size=60 stack=3 aux=0x5
ev api=cuMemFreeAsync t=2600 ptr=0x2000 aux=0x5
ev api=cuMemFree_v2 t=2700 ptr=0x1000
# NVML: while the 480 peak lasted (900..1000 ns in), and after it
sample t=1950 used=600 total=0x100000000 process=600 uuid=00112233445566778899aabbccddeeff
sample t=2050 used=9999 total=0x100000000 process=9999 uuid=00112233445566778899aabbccddeeff
trailer t=3000
T

"$GMT_CLI" summary --json peak.gmt >s.json || fail "summary failed"
sites() { json s.json "[(s['stack_id'], s['bytes'], s['allocations']) for s in d['devices'][$1]['peak_sites']]"; }
expect_eq "device 0 peak" "$(json s.json 'd["devices"][0]["peak_bytes"]')" 480
expect_eq "device 0 sites at the peak" "$(sites 0)" "[(4, 400, 1), (1, 50, 1), (2, 30, 1)]"
expect_eq "device 0 kinds at the peak" "$(json s.json 'd["devices"][0]["by_kind_at_peak"]')" \
	"{'device': 480, 'stream_ordered': 0, 'vmm_physical': 0}"
expect_eq "device 1 peak" "$(json s.json 'd["devices"][1]["peak_bytes"]')" 360
expect_eq "device 1 sites at the peak" "$(sites 1)" "[(2, 300, 1), (3, 60, 1)]"
expect_eq "device 1 kinds at the peak" "$(json s.json 'd["devices"][1]["by_kind_at_peak"]')" \
	"{'device': 300, 'stream_ordered': 60, 'vmm_physical': 0}"
for k in 0 1; do
	expect_eq "device $k live at the end" "$(json s.json "d['devices'][$k]['live_bytes_at_end']")" 0
done
# the reconciliation's peak, from the same pass: what was live, and only
# the sample taken before the peak ended (when the 400 were freed)
acct() { json "$1" "(lambda a: (a['traced_bytes'], a['by_kind'], a['nvidia_smi_bytes']))($2)"; }
expect_eq "summary's accounting at the device 0 peak" \
	"$(acct s.json 'd["accounting"]["devices"][0]["at_peak"]')" \
	"(480, {'device': 480, 'stream_ordered': 0, 'vmm_physical': 0}, 600)"
"$GMT_CLI" accounting --json peak.gmt >a.json || fail "accounting failed"
expect_eq "accounting at the device 0 peak" "$(acct a.json 'd["traces"][0]["accounting"]["devices"][0]["at_peak"]')" \
	"(480, {'device': 480, 'stream_ordered': 0, 'vmm_physical': 0}, 600)"
expect_eq "accounting at the device 1 peak" "$(acct a.json 'd["traces"][0]["accounting"]["devices"][1]["at_peak"]')" \
	"(360, {'device': 300, 'stream_ordered': 60, 'vmm_physical': 0}, None)"
echo ok
