#!/usr/bin/env bash
# Python frames (PYFRAME records, stack nodes at GMT_PYFRAME_IP(id)) in top,
# leaks and growth: the site is the Python frame when it is the first
# outside CUDA, "function (file:line)" for --by function, "python" for
# --by library; a stack taken without the GIL says so.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

# stacks (innermost first):
#   4: libcudart <- forward (model.py:42) <- train (train.py:10) <- python    site: Python
#   7: libcudart <- libtorch_cuda malloc <- forward (block.py:7) <- train    site: Python
#      (the first frame of the user's code, past PyTorch: analysis/sites.c)
#   9: libcudart <- [no GIL] <- python                                        site: Python
"$MKTRACE" py.gmt <<'T'
header start_mono=0 pid=55
module id=1 bias=0 start=0x400000 end=0x500000 path=/usr/bin/python3.11
module id=2 bias=0x7f0000000000 start=0x7f0000000000 end=0x7f0000100000 path=/usr/lib/libcudart.so.12
module id=3 bias=0x7f3000000000 start=0x7f3000000000 end=0x7f3000100000 path=/usr/lib/libtorch_cuda.so
stack parent=0 ip=0x401000 parent=1 ip=0xfe00000000000002 parent=2 ip=0xfe00000000000001 parent=3 ip=0x7f0000001000
stack parent=2 ip=0xfe00000000000003 parent=5 ip=0x7f3000000400 parent=6 ip=0x7f0000001000
stack parent=1 ip=0xfe00000000000000 parent=8 ip=0x7f0000001000
symbol ip=0x401000 module=1 func=_PyEval_EvalFrameDefault
symbol ip=0x7f3000000400 module=3 func=c10::cuda::CUDACachingAllocator::malloc
pyframe id=1 func=forward file=model.py line=42
pyframe id=2 func=train file=train.py line=10
pyframe id=3 func=forward file=block.py line=7
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=4000 dev=0 stack=4
ev api=cudaMalloc t=20 ptr=0x2000 size=2000 stack=7
ev api=cudaMalloc t=30 ptr=0x3000 size=1000 stack=9
trailer t=100
T
rows() { json "$1" "[(r['key'], r['peak_bytes'], r['library']) for r in d['devices'][0]['rows']]"; }
"$GMT_CLI" top --json --by function py.gmt >f.json 2>err || fail "top function exit $?: $(cat err)"
expect_eq by-function "$(rows f.json)" \
	"[('forward (model.py:42)', 4000, 'python'), ('forward (block.py:7)', 2000, 'libtorch_cuda.so'), ('[Python frames unavailable: the GIL was not held]', 1000, 'python')]"
"$GMT_CLI" top --json --by library py.gmt >l.json 2>err || fail "top library exit $?"
expect_eq by-library "$(json l.json "[(r['key'], r['peak_bytes'], r['calls']) for r in d['devices'][0]['rows']]")" \
	"[('python', 5000, 2), ('libtorch_cuda.so', 2000, 1)]"
# callers leave out what the rules pass over (the interpreter)
"$GMT_CLI" top --json --depth 2 py.gmt >s.json 2>err || fail "top stack exit $?"
expect_eq by-stack "$(json s.json "[r['key'] for r in d['devices'][0]['rows']][:2]")" \
	"['forward (model.py:42) <- train (train.py:10)', 'forward (block.py:7) <- train (train.py:10)']"
"$GMT_CLI" leaks --json py.gmt >k.json 2>err || fail "leaks exit $?: $(cat err)"
grep -q '"forward (model.py:42) <- train (train.py:10)' k.json || fail "leaks without the Python site: $(cat k.json)"
"$GMT_CLI" growth --json py.gmt >g.json 2>err || fail "growth exit $?"
expect_eq growth-site "$(json g.json "[(s['time_ns'], s['size'], s['site']) for s in d['traces'][0]['devices'][0]['steps']][0]")" \
	"(10, 4000, 'forward (model.py:42)')"
echo ok
