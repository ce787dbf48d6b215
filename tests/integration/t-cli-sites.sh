#!/usr/bin/env bash
# Top allocation sites at the peak: live allocations at the peak event,
# grouped by stack, named by the first frame outside libcuda/libcudart/
# libgpumemtrace (SYMBOL records, else module+offset).
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

# stack nodes 1..9; the stacks the events use, innermost frame first:
#   7: libgpumemtrace -> libcudart -> app (train, SYMBOL)      -> train (train.c:42)
#   8: libgpumemtrace -> libcudart -> app (eval, SYMBOL)       -> eval (eval.c:7)
#   5: libcudart only                                          -> libcudart+0x2000, flagged
#   9: libcuda.so.1 -> libtorch_cuda.so (no SYMBOL)            -> libtorch_cuda.so+0x1234
"$MKTRACE" sites.gmt <<'T'
header start_mono=0 features=1
module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
module id=2 bias=0x7f0000000000 start=0x7f0000000000 end=0x7f0000100000 path=/usr/lib/libcudart.so.12.4
module id=3 bias=0x7f1000000000 start=0x7f1000000000 end=0x7f1000100000 path=/opt/gmt/libgpumemtrace.so
module id=4 bias=0x7f2000000000 start=0x7f2000000000 end=0x7f2000100000 path=/usr/lib/libcuda.so.1
module id=5 bias=0x7f3000000000 start=0x7f3000000000 end=0x7f3000100000 path=/opt/torch/lib/libtorch_cuda.so
stack parent=0 ip=0x401100 parent=1 ip=0x7f0000001000 parent=0 ip=0x401200 parent=3 ip=0x7f0000001000
stack parent=0 ip=0x7f0000002000 parent=0 ip=0x7f3000001234
stack parent=2 ip=0x7f1000000100 parent=4 ip=0x7f1000000100 parent=6 ip=0x7f2000000500
symbol ip=0x401100 module=1 func=train file=train.c line=42
symbol ip=0x401200 module=1 func=eval file=eval.c line=7
symbol ip=0x7f0000001000 module=2 func=cudaMalloc
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=1000 dev=0 stack=7
ev api=cudaMalloc t=20 ptr=0x2000 size=1000 stack=7
ev api=cudaMalloc t=30 ptr=0x3000 size=500 stack=8
ev api=cudaMalloc t=40 ptr=0x4000 size=3000 stack=5
ev api=cuMemAlloc_v2 t=50 ptr=0x5000 size=100 stack=9
ev api=cudaFree t=60 ptr=0x4000
ev api=cudaMalloc t=70 ptr=0x6000 size=2000 stack=8
trailer t=100
T
"$GMT_CLI" summary --json sites.gmt >s.json 2>err || fail "summary exit $?: $(cat err)"
d='d["devices"][0]'
expect_eq peak "$(json s.json "$d[\"peak_bytes\"]")" 5600
expect_eq peak_time "$(json s.json "$d[\"peak_time_ns\"]")" 50
# at the peak (t=50): stack 5 3000, stack 7 2000 (2 allocs), stack 8 500, stack 9 100;
# the 2000 bytes allocated at t=70 are not there
expect_eq sites "$(json s.json "[(s['stack_id'], s['bytes'], s['allocations']) for s in $d['peak_sites']]")" \
	"[(5, 3000, 1), (7, 2000, 2), (8, 500, 1), (9, 100, 1)]"
expect_eq site5 "$(json s.json "[$d['peak_sites'][0][k] for k in ('function', 'module_offset', 'in_cuda_libraries')]")" \
	"['', 8192, True]"
expect_eq site7 "$(json s.json "[$d['peak_sites'][1][k] for k in ('function', 'file', 'line', 'module')]")" \
	"['train', 'train.c', 42, '/work/app']"
expect_eq site8 "$(json s.json "[$d['peak_sites'][2][k] for k in ('function', 'file', 'line')]")" "['eval', 'eval.c', 7]"
expect_eq site9 "$(json s.json "[$d['peak_sites'][3][k] for k in ('function', 'module', 'module_offset')]")" \
	"['', '/opt/torch/lib/libtorch_cuda.so', 4660]"
"$GMT_CLI" summary sites.gmt >s.txt 2>err || fail "summary (text) exit $?"
grep -q 'train (train.c:42)' s.txt || fail "no train site in: $(cat s.txt)"
grep -q 'libtorch_cuda.so+0x1234' s.txt || fail "no libtorch site in: $(cat s.txt)"
echo ok
