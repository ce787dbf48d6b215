#!/usr/bin/env bash
# Frees are matched by address (or handle, in its namespace) whichever API
# frees; failed calls change nothing; each kind of memory is kept apart.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

"$MKTRACE" frees.gmt <<'T'
header start_mono=1000
events tid=1
# driver alloc, runtime free
ev api=cuMemAlloc_v2 t=1100 ptr=0xa000 size=100 dev=0
ev api=cudaFree t=1200 ptr=0xa000
# runtime async alloc, driver async free (aux: the stream)
ev api=cudaMallocAsync t=1300 ptr=0xb000 size=200 aux=0x5
ev api=cuMemFreeAsync t=1400 ptr=0xb000 aux=0x5
# pitch alloc: size is pitch * height; freed by cuMemFree_v2
ev api=cudaMallocPitch t=1500 ptr=0xc000 size=5120 aux=512 aux2=500
# a failed free leaves it live; a failed alloc adds nothing
ev api=cuMemFree_v2 t=1600 ptr=0xc000 result=1
ev api=cuMemAlloc_v2 t=1700 ptr=0xd000 size=999999 result=2
# freeing an unknown address, and cudaFree(0), change nothing
ev api=cudaFree t=1800 ptr=0xeeee
ev api=cudaFree t=1810 ptr=0
# pinned host from the runtime, freed by the driver; registered memory
ev api=cudaHostAlloc t=1900 ptr=0x7000 size=4096 dev=-1 aux=1
ev api=cudaHostRegister t=1910 ptr=0x9000 size=8192 aux=0
ev api=cuMemFreeHost t=2000 ptr=0x7000
ev api=cuMemHostUnregister t=2010 ptr=0x9000
# an array and a device allocation at the same number: different namespaces
ev api=cudaMallocArray t=2100 ptr=0xf000 size=64 dev=0
ev api=cudaMalloc t=2200 ptr=0xf000 size=300
ev api=cuArrayDestroy t=2300 ptr=0xf000
# managed memory is not device memory
ev api=cuMemAllocManaged t=2400 ptr=0x10000 size=7777 aux=1
# an allocation at an address still live (its free was lost) replaces it
ev api=cudaMalloc t=2500 ptr=0x20000 size=50
ev api=cudaMalloc t=2600 ptr=0x20000 size=70
# a pool: created and destroyed, trimmed in between, no bytes
ev api=cudaMemPoolCreate t=2700 ptr=0x3000
ev api=cudaMemPoolTrimTo t=2710 ptr=0x3000 size=0
ev api=cudaMemPoolDestroy t=2720 ptr=0x3000
trailer t=3000
T
"$GMT_CLI" summary --json frees.gmt >s.json 2>err || fail "summary exit $?: $(cat err)"
d='d["devices"][0]'
# live device bytes: 100, 0, 200, 0, 5120, ..., +300 (5420), +50 (5470), 50->70 (5490)
expect_eq peak "$(json s.json "$d[\"peak_bytes\"]")" 5490
expect_eq peak_time "$(json s.json "$d[\"peak_time_ns\"]")" 1600
expect_eq live_end "$(json s.json "$d[\"live_bytes_at_end\"]")" 5490
expect_eq count_end "$(json s.json "$d[\"live_allocations_at_end\"]")" 3
m='d["memory"]'
expect_eq arrays "$(json s.json "[$m[\"arrays\"][k] for k in ('peak_bytes','live_bytes_at_end')]")" "[64, 0]"
expect_eq pinned "$(json s.json "[$m[\"pinned_host\"][k] for k in ('peak_bytes','live_bytes_at_end')]")" "[4096, 0]"
expect_eq registered "$(json s.json "[$m[\"registered_host\"][k] for k in ('peak_bytes','live_bytes_at_end')]")" "[8192, 0]"
expect_eq managed "$(json s.json "[$m[\"managed\"][k] for k in ('peak_bytes','live_bytes_at_end')]")" "[7777, 7777]"
expect_eq pools "$(json s.json "$m[\"pools\"][\"live_allocations_at_end\"]")" 0
expect_eq unmatched "$(json s.json 'd["unmatched_frees"]')" 1
expect_eq pitch.bytes "$(json s.json 'd["calls"]["cudaMallocPitch"]["bytes"]')" 5120
expect_eq failed "$(json s.json '(d["calls"]["cuMemFree_v2"]["failed"], d["calls"]["cuMemAlloc_v2"]["bytes"])')" "(1, 100)"
echo ok
