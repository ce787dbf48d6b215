#!/usr/bin/env bash
# summary: live device bytes at the peak by library (the module of each
# allocation's site) and by kind (device, stream-ordered, VMM physical), at
# the peak and at the end.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/report-traces.sh"
report_trace t.gmt

"$GMT_CLI" summary --json t.gmt >s.json 2>err || fail "summary exit $?: $(cat err)"
[ ! -s err ] || fail "unexpected stderr: $(cat err)"
d='d["devices"][0]'
expect_eq peak "$(json s.json "$d['peak_bytes'], $d['peak_time_ns']")" "(7600, 45)"
# at t=45: 4000 libnccl, 1000 + 2000 + 100 the program, 500 libcublasLt
expect_eq by_library "$(json s.json "[(x['library'], x['bytes'], x['allocations']) for x in $d['by_library']]")" \
	"[('libnccl.so.2', 4000, 1), ('app', 3100, 3), ('libcublasLt.so.12', 500, 1)]"
expect_eq site-library "$(json s.json "[(x['stack_id'], x['library']) for x in $d['peak_sites']]")" \
	"[(5, 'libnccl.so.2'), (3, 'app'), (7, 'libcublasLt.so.12'), (10, 'app')]"
expect_eq kinds "$(json s.json "$d['by_kind_at_peak'], $d['by_kind_at_end']")" \
	"({'device': 7600, 'stream_ordered': 0, 'vmm_physical': 0}, {'device': 4600, 'stream_ordered': 0, 'vmm_physical': 0})"
"$GMT_CLI" summary t.gmt >s.txt 2>err || fail "summary text exit $?"
grep -Eq '^by library at the device 0 peak' s.txt || fail "no by-library table: $(cat s.txt)"
grep -Eq '3\.91 KiB +52\.6% +1  libnccl\.so\.2$' s.txt || fail "no nccl row: $(cat s.txt)"

"$MKTRACE" k.gmt <<'T'
header start_mono=0
events tid=1
ev api=cudaMalloc      t=10 ptr=0x1000 size=1000 dev=0
ev api=cudaMallocAsync t=20 ptr=0x2000 size=2000
ev api=cuMemCreate     t=30 ptr=0x77 size=4096 aux=1
ev api=cudaFreeAsync   t=40 ptr=0x2000
trailer t=50
T
"$GMT_CLI" summary --json k.gmt >k.json 2>err || fail "summary exit $?: $(cat err)"
expect_eq kinds-peak "$(json k.json "$d['peak_bytes'], $d['by_kind_at_peak']")" \
	"(7096, {'device': 1000, 'stream_ordered': 2000, 'vmm_physical': 4096})"
expect_eq kinds-end "$(json k.json "$d['by_kind_at_end']")" \
	"{'device': 1000, 'stream_ordered': 0, 'vmm_physical': 4096}"
expect_eq no-stack "$(json k.json "$d['by_library']")" "[{'library': '(no stack)', 'bytes': 7096, 'allocations': 3}]"
"$GMT_CLI" summary k.gmt >k.txt 2>err || fail "summary text exit $?"
grep -Eq '^  stream-ordered \(cudaMallocAsync\) +1\.95 KiB +0 B$' k.txt || fail "no kinds table: $(cat k.txt)"
echo ok
