#!/usr/bin/env bash
# gpumemtrace diff A B: environment differences (GPU, driver, allocator
# variables), peaks per device with exact deltas, calls per API, and the
# allocation sites live at the peak that were added, removed, grew or shrank.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

# stacks, innermost first: 2 = libcudart <- train, 4 = libcudart <- eval,
# 6 = libcudart <- libcublasLt
cat >common <<'T'
module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
module id=2 bias=0x7f0000000000 start=0x7f0000000000 end=0x7f0000100000 path=/usr/lib/libcudart.so.12.4
module id=3 bias=0x7f4000000000 start=0x7f4000000000 end=0x7f4000100000 path=/usr/lib/libcublasLt.so.12
stack parent=0 ip=0x401100 parent=1 ip=0x7f0000001000 parent=0 ip=0x401200 parent=3 ip=0x7f0000001000 parent=0 ip=0x7f4000001000 parent=5 ip=0x7f0000001000
symbol ip=0x401100 module=1 func=train file=train.c line=42
symbol ip=0x401200 module=1 func=eval file=eval.c line=7
symbol ip=0x7f4000001000 module=3 func=cublasLtMatmul
T
# A: device 0 peak 1800 at t=30 (train 1000, eval 800), 1500 live at the end;
#    device 1 peak 7000 (train)
# B: device 0 peak 5596 at t=20 (train 1500, cuBLAS 4096; eval gone),
#    nothing live at the end; device 1 peak 6000 (train)
{
	echo "header start_mono=0 features=1"
	echo 'process pid=1 ppid=0 host=boxa exe=/usr/bin/python3 arg=python3 arg=train.py env=CUDA_VISIBLE_DEVICES=0,1 env=PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True env=XLA_PYTHON_CLIENT_PREALLOCATE=false'
	echo 'device ord=0 name="NVIDIA A100-SXM4-80GB" total=85899345920 cc=8.0 driver=12040'
	echo 'device ord=1 name="NVIDIA A100-SXM4-80GB" total=85899345920 cc=8.0 driver=12040'
	cat common
	cat <<'T'
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=1000 dev=0 stack=2
ev api=cudaMalloc t=20 ptr=0x2000 size=500 stack=4
ev api=cudaMalloc t=30 ptr=0x3000 size=300 stack=4
ev api=cudaFree t=40 ptr=0x3000
ev api=cudaMalloc t=50 ptr=0x9000 size=7000 dev=1 stack=2
ev api=cudaFree t=60 ptr=0x9000
ev api=cudaFree t=70 ptr=0x2000 dev=0
trailer t=100
T
} | "$MKTRACE" a.gmt
{
	echo "header start_mono=0 features=1"
	echo 'process pid=2 ppid=0 host=boxb exe=/usr/bin/python3 arg=python3 arg=train.py env=CUDA_VISIBLE_DEVICES=0,1 env=NCCL_CUMEM_ENABLE=1 env=XLA_PYTHON_CLIENT_PREALLOCATE=false'
	echo 'device ord=0 name="NVIDIA H100 80GB HBM3" total=85899345920 cc=9.0 driver=12080'
	echo 'device ord=1 name="NVIDIA A100-SXM4-80GB" total=85899345920 cc=8.0 driver=12040'
	cat common
	cat <<'T'
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=1500 dev=0 stack=2
ev api=cudaMalloc t=20 ptr=0x5000 size=4096 stack=6
ev api=cudaFree t=40 ptr=0x5000
ev api=cudaFree t=50 ptr=0x1000
ev api=cudaMalloc t=60 ptr=0x9000 size=6000 dev=1 stack=2
ev api=cudaFree t=70 ptr=0x9000
ev api=cudaMallocManaged t=80 ptr=0x20000 size=65536 dev=0 stack=2
trailer t=100
T
} | "$MKTRACE" b.gmt

"$GMT_CLI" diff --json a.gmt b.gmt >d.json 2>err || fail "diff exit $?: $(cat err)"
# the environment: only what differs, with null for unset
expect_eq env "$(json d.json '[(x["key"], x["a"], x["b"]) for x in d["environment"]["differences"]]')" \
	"[('host', 'boxa', 'boxb'), ('device 0 name', 'NVIDIA A100-SXM4-80GB', 'NVIDIA H100 80GB HBM3'), ('device 0 compute capability', '8.0', '9.0'), ('device 0 driver (CUDA version)', '12.4 (12040)', '12.8 (12080)'), ('env PYTORCH_CUDA_ALLOC_CONF', 'expandable_segments:True', None), ('env NCCL_CUMEM_ENABLE', None, '1')]"
same=$(json d.json 'd["environment"]["same"]')
for k in "'device 1 name'" "'env CUDA_VISIBLE_DEVICES'" "'env XLA_PYTHON_CLIENT_PREALLOCATE'" "'library libcudart'" "'command'"; do
	[[ $same == *"$k"* ]] || fail "$k not in same: $same"
done
# peaks and live-at-end per device, exact
expect_eq devices "$(json d.json '[(x["index"], x["a_peak_bytes"], x["b_peak_bytes"], x["peak_delta_bytes"], x["a_live_bytes_at_end"], x["b_live_bytes_at_end"], x["live_at_end_delta_bytes"]) for x in d["devices"]]')" \
	"[(0, 1800, 5596, 3796, 1000, 0, -1000), (1, 7000, 6000, -1000, 0, 0, 0)]"
expect_eq pct "$(json d.json '[round(x["peak_delta_pct"], 3) for x in d["devices"]]')" "[210.889, -14.286]"
expect_eq managed "$(json d.json '[d["memory"]["managed"][k] for k in ("a_peak_bytes", "b_peak_bytes", "peak_delta_bytes")]')" "[0, 65536, 65536]"
expect_eq calls "$(json d.json '[(x["api"], x["a_count"], x["b_count"], x["count_delta"], x["bytes_delta"]) for x in d["calls"]]')" \
	"[('cudaMalloc', 4, 3, -1, 2796), ('cudaFree', 3, 3, 0, 0), ('cudaMallocManaged', 0, 1, 1, 65536)]"
# sites at each device's peak, largest change first
expect_eq sites "$(json d.json '[(x["device"], x["status"], x["site"], x["a_bytes"], x["b_bytes"], x["delta_bytes"], x["a_allocations"], x["b_allocations"]) for x in d["sites"]]')" \
	"[(0, 'added', 'cublasLtMatmul (libcublasLt.so.12+0x1000)', 0, 4096, 4096, 0, 1), (1, 'shrank', 'train (train.c:42)', 7000, 6000, -1000, 1, 1), (0, 'removed', 'eval (eval.c:7)', 800, 0, -800, 2, 0), (0, 'grew', 'train (train.c:42)', 1000, 1500, 500, 1, 1)]"
expect_eq keys "$(json d.json 'sorted(d.keys())')" \
	"['a', 'allocator_environment', 'allocator_environment_ignored', 'b', 'calls', 'depth', 'devices', 'environment', 'group_by', 'memory', 'nvidia_smi', 'sites', 'sites_unchanged']"
expect_eq grouping "$(json d.json '[d["group_by"], d["depth"], d["sites_unchanged"], d["a"]["path"], d["b"]["complete"]]')" "['stack', 3, 0, 'a.gmt', True]"

# --by library: the app's sites merge
"$GMT_CLI" diff --json --by library a.gmt b.gmt >l.json || fail "--by library exit $?"
expect_eq by-library "$(json l.json '[(x["device"], x["status"], x["site"], x["delta_bytes"]) for x in d["sites"]]')" \
	"[(0, 'added', 'libcublasLt.so.12', 4096), (1, 'shrank', 'app', -1000), (0, 'shrank', 'app', -300)]"
# a trace against itself: nothing differs
"$GMT_CLI" diff --json --by function a.gmt a.gmt >s.json || fail "self diff exit $?"
expect_eq self "$(json s.json '[len(d["environment"]["differences"]), d["sites"], d["sites_unchanged"], [x["peak_delta_bytes"] for x in d["devices"]]]')" \
	"[0, [], 3, [0, 0]]"

# the text form
"$GMT_CLI" diff a.gmt b.gmt >d.txt 2>err || fail "text exit $?: $(cat err)"
grep -q 'environment: 6 different' d.txt || fail "env header: $(cat d.txt)"
grep -Eq '^  env PYTORCH_CUDA_ALLOC_CONF +expandable_segments:True +\(none\)' d.txt || fail "env row: $(cat d.txt)"
grep -Eq '^  0 +1.76 KiB +5.46 KiB +\+3.71 KiB +\+210.9%' d.txt || fail "device row: $(cat d.txt)"
grep -Eq '^  added +0 .*cublasLtMatmul' d.txt || fail "added row: $(cat d.txt)"
grep -Eq '^  removed +0 +800 B +0 B +-800 B +eval \(eval.c:7\)' d.txt || fail "removed row: $(cat d.txt)"
grep -q '1 added, 1 removed, 1 grew, 1 shrank, 0 unchanged' d.txt || fail "site counts: $(cat d.txt)"

# bad input: one line, documented codes
set +e
"$GMT_CLI" diff a.gmt >/dev/null 2>err
expect_eq one-trace "$? $(wc -l <err)" "2 1"
"$GMT_CLI" diff a.gmt b.gmt a.gmt >/dev/null 2>err
expect_eq three "$?" 2
"$GMT_CLI" diff --by api a.gmt b.gmt >/dev/null 2>err
expect_eq by-api "$?" 2
"$GMT_CLI" diff --depth x a.gmt b.gmt >/dev/null 2>err
expect_eq depth "$?" 2
"$GMT_CLI" diff a.gmt missing.gmt >/dev/null 2>err
expect_eq missing "$? $(wc -l <err)" "3 1"
echo junk >junk.gmt
"$GMT_CLI" diff junk.gmt a.gmt >/dev/null 2>err
expect_eq junk "$?" 4
set -e
"$GMT_CLI" diff --help | grep -q 'gpumemtrace diff main.gmt pr.gmt' || fail "no example in --help"
echo ok
