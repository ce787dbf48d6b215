#!/usr/bin/env bash
# explain: each finding on a trace whose answer is known. The real H100
# traces (docs/validation/*/traces, their README's figures): PyTorch's
# cudaMallocAsync pool reserve, JAX's 75% preallocation, NCCL's buffers in
# nvidia-smi's breakdown, the 1 PiB request larger than the device, no leak
# in the PyTorch loop. Built traces: TF allow_growth regions doubling, a
# PyTorch OOM retried after freeing the cache, an OOM because of another
# process, two runs compared. Then --json's ids, the exit codes, and the
# environment the library records for it.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"
MiB=1048576
GiB=$((1024 * MiB))
REAL=$TESTS_DIR/../docs/validation

ex() { # name args...: explain --json into name.json, exit 0, nothing on stderr
	local name=$1
	shift
	"$GMT_CLI" explain --json "$@" >"$name.json" 2>err || fail "explain $* exit $?: $(cat err)"
	[ ! -s err ] || fail "explain $*: unexpected stderr: $(cat err)"
}
ids() { json "$1.json" "[f['id'] for f in d['traces'][${2:-0}]['findings']]"; }
finding() { # name id expr-on-f
	json "$1.json" "[$3 for f in d['traces'][0]['findings'] if f['id'] == '$2'][0]"
}

# ---- the real traces ----
ex async "$REAL/2026-11-22-h100/traces/torch-async.837.gmt"
expect_eq async-mode "$(json async.json "d['traces'][0]['allocator']")" "cudaMallocAsync (stream-ordered pool)"
expect_eq async-ids "$(ids async)" "['smi-breakdown', 'pool-reserve', 'warm-up']"
# nvidia-smi 2.31 GiB at the end = 193 MiB traced + 518 MiB context + the reserve
expect_eq async-reserve "$(finding async pool-reserve "f['bytes'] // $MiB")" 1652
expect_eq async-threshold "$(finding async pool-reserve "'release threshold to the maximum' in f['answer'] and 'torch.cuda.empty_cache()' in f['change']")" True
expect_eq async-cmd "$(finding async smi-breakdown "f['evidence'][0]['command'].split()[:2]")" "['gpumemtrace', 'accounting']"

ex jax "$REAL/2026-11-22-h100/traces/jax-default.1043.gmt"
expect_eq jax-fw "$(json jax.json "d['traces'][0]['framework']")" JAX
expect_eq jax-pre "$(finding jax preallocation "[f['bytes'] // $MiB, '75% of the device' in f['answer'], 'XLA_PYTHON_CLIENT_PREALLOCATE=false' in f['change'], f['needs_framework_counters']]")" \
	"[60810, True, True, True]"

ex nccl "$REAL/2026-11-22-h100/traces/nccl.969.gmt"
expect_eq nccl-smi "$(finding nccl smi-breakdown "[e['text'] for e in f['evidence'] if e['text'].startswith('NCCL')]")" "['NCCL: 388 MiB']"
expect_eq nccl-cache "$(ids nccl | grep -c torch-cache)" 1

ex plain "$REAL/2026-11-22-h100/traces/plain-shared.596.gmt"
expect_eq plain-first "$(json plain.json "d['traces'][0]['findings'][0]['id']")" oom-exceeds-device-total
expect_eq plain-fw "$(json plain.json "d['traces'][0]['framework']")" "no framework"

ex nocache "$REAL/2026-11-23-h100/traces/torch-nocache.941.gmt"
expect_eq nocache-mode "$(json nocache.json "d['traces'][0]['allocator']")" "no caching"
# tests/gpu/torch_train.py keeps nothing per step: never a leak
for t in nocache async; do
	expect_eq "$t-no-leak" "$(ids $t | grep -c "'leak'" || true)" 0
done

# ---- TF with allow_growth: regions of 2 MiB doubling to 64 MiB, none returned ----
{
	cat <<T
process pid=7 ppid=1 exe=/usr/bin/python3 arg=python3 env=TF_FORCE_GPU_ALLOW_GROWTH=true
module id=1 bias=0 start=0x400000 end=0x500000 path=/usr/lib/libtensorflow_framework.so.2
device ord=0 name="Sim GPU" total=$((80 * GiB)) driver=12080
stack parent=0 ip=0x401000
events tid=1
T
	for i in 0 1 2 3 4 5; do
		echo "ev api=cuMemAlloc_v2 t=$((1000 * (i + 1))) ptr=$((0x10000000 * (i + 1))) size=$(((2 * MiB) << i)) dev=0 stack=1"
	done
	echo "trailer t=9000"
} | "$MKTRACE" tf.gmt
ex tf tf.gmt
expect_eq tf-mode "$(json tf.json "[d['traces'][0][k] for k in ('framework', 'allocator')]")" "['TensorFlow', 'BFC, growing (allow_growth)']"
expect_eq tf-growth "$(finding tf bfc-growth "[f['bytes'] // $MiB, 'returned none' in f['answer'], 'memory_limit' in f['change']]")" "[126, True, True]"

# ---- PyTorch: a cudaMalloc fails, the cache's segments are freed, the retry succeeds ----
{
	cat <<T
process pid=8 ppid=1 exe=/usr/bin/python3 arg=python3
module id=1 bias=0 start=0x400000 end=0x500000 path=/opt/torch/lib/libc10_cuda.so
device ord=0 name="Sim GPU" total=$GiB driver=12080
stack parent=0 ip=0x401000
events tid=1
ev api=cudaMalloc t=1000 ptr=0x10000000 size=$((20 * MiB)) dev=0 stack=1
ev api=cudaMalloc t=2000 ptr=0x20000000 size=$((20 * MiB)) dev=0 stack=1
ev api=cudaMalloc t=3000 ptr=0x30000000 size=$((2 * MiB)) dev=0 stack=1
ev api=cudaMalloc t=4000 ptr=0 size=$((20 * MiB)) dev=0 stack=1 result=2
ev api=cudaFree t=5000 ptr=0x20000000 dev=0
ev api=cudaMalloc t=6000 ptr=0x40000000 size=$((20 * MiB)) dev=0 stack=1
trailer t=9000
T
} | "$MKTRACE" retry.gmt
ex retry retry.gmt
expect_eq retry-ids "$(json retry.json "[f['id'] for f in d['traces'][0]['findings']][:2]")" "['torch-cache', 'oom-retried']"
expect_eq retry-answer "$(finding retry oom-retried "[f['bytes'] // $MiB, 'num_alloc_retries' in f['change']]")" "[20, True]"
expect_eq retry-segs "$(finding retry torch-cache "f['evidence'][0]['text']")" \
	"segments: 1 of 2 MiB (requests up to 1 MiB), 2 of 20 MiB (1 to 10 MiB), 0 larger (rounded to 2 MiB)"

# ---- an OOM because another process held the memory (free 200 MiB of 1 GiB, 100 MiB ours) ----
{
	cat <<T
process pid=9 ppid=1 exe=/work/app arg=app
module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
device ord=0 name="Sim GPU" total=$GiB driver=12080
stack parent=0 ip=0x401000
events tid=1
ev api=cudaMalloc t=1000 ptr=0x10000000 size=$((100 * MiB)) dev=0 stack=1
ev api=cudaMalloc t=2000 ptr=0 size=$((500 * MiB)) dev=0 stack=1 result=2
meminfo tid=1 t=2000 dev=0 free=$((200 * MiB)) total=$GiB api=cudaMalloc
trailer t=9000
T
} | "$MKTRACE" other.gmt
ex other other.gmt
expect_eq other-case "$(finding other oom-other-processes "['query-compute-apps' in f['change'], f['evidence'][0]['text']]")" \
	"[True, 'free then: 200 MiB of 1.00 GiB; this process held 100 MiB, others 724 MiB']"

# ---- two runs: B on a bigger GPU, another driver, expandable segments ----
run() { # out total driver env
	{
		cat <<T
process pid=10 ppid=1 exe=/usr/bin/python3 arg=python3 $4
module id=1 bias=0 start=0x400000 end=0x500000 path=/opt/torch/lib/libc10_cuda.so
device ord=0 name="$5" total=$2 driver=$3
stack parent=0 ip=0x401000
events tid=1
ev api=cudaMalloc t=1000 ptr=0x10000000 size=$6 dev=0 stack=1
trailer t=9000
T
	} | "$MKTRACE" "$1"
}
run a.gmt $((80 * GiB)) 12080 "" "H100" $((100 * MiB))
run b.gmt $((140 * GiB)) 13000 "env=PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" "H200" $((300 * MiB))
ex ab a.gmt b.gmt
expect_eq ab-ids "$(json ab.json "sorted(f['id'] for f in d['comparison']['findings'])")" \
	"['compare-driver', 'compare-env', 'compare-gpu', 'compare-peak', 'compare-sites']"
expect_eq ab-peak "$(json ab.json "d['comparison']['findings'][0]['answer']")" "B needed 200 MiB more than A: traced peak 300 MiB against 100 MiB"
expect_eq ab-env "$(json ab.json "[f['evidence'][0]['text'] for f in d['comparison']['findings'] if f['id'] == 'compare-env'][0]")" \
	"PYTORCH_CUDA_ALLOC_CONF: A unset, B expandable_segments:True"
expect_eq ab-traces "$(json ab.json "len(d['traces'])")" 2
"$GMT_CLI" explain a.gmt b.gmt >ab.txt || fail "explain A B text: exit $?"
grep -q '^why B needed' ab.txt || fail "explain A B: no comparison heading"

# ---- exit codes ----
rc=0; "$GMT_CLI" explain >/dev/null 2>&1 || rc=$?; expect_eq no-args $rc 2
rc=0; "$GMT_CLI" explain a.gmt a.gmt a.gmt >/dev/null 2>&1 || rc=$?; expect_eq three $rc 2
rc=0; "$GMT_CLI" explain --device 4 a.gmt >/dev/null 2>err || rc=$?; expect_eq no-device $rc 2
grep -q 'no device memory on device 4' err || fail "no-device: $(cat err)"
rc=0; "$GMT_CLI" explain missing.gmt >/dev/null 2>&1 || rc=$?; expect_eq missing $rc 3
echo 'not a trace at all' >bad.gmt
rc=0; "$GMT_CLI" explain bad.gmt >/dev/null 2>&1 || rc=$?; expect_eq bad $rc 4

# ---- the environment the library records (the allow-list and its prefixes) ----
XLA_CLIENT_MEM_FRACTION=.5 NCCL_BUFFSIZE=1048576 NCCL_P2P_DISABLE=1 \
	CUBLAS_WORKSPACE_CONFIG=:4096:8 XLA_PYTHON_CLIENT_PREALLOCATE=false UNRELATED_SETTING=1 \
	traced "$PROG_DIR/driver-basic" >/dev/null
"$GMT_CLI" dump "$(the_trace)" | grep ' PROCESS ' >process.txt
for kv in '"XLA_CLIENT_MEM_FRACTION": ".5"' '"NCCL_BUFFSIZE": "1048576"' '"NCCL_P2P_DISABLE": "1"' \
	'"CUBLAS_WORKSPACE_CONFIG": ":4096:8"' '"XLA_PYTHON_CLIENT_PREALLOCATE": "false"'; do
	grep -qF "$kv" process.txt || fail "not recorded: $kv in $(cat process.txt)"
done
! grep -q UNRELATED_SETTING process.txt || fail "recorded a variable off the list"
echo ok
