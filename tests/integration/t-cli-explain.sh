#!/usr/bin/env bash
# explain: each finding on a trace whose answer is known. The real H100
# traces (tests/real/*; their figures: docs/validation/*/README.md): PyTorch's
# cudaMallocAsync pool reserve, JAX's 75% preallocation, NCCL's buffers in
# nvidia-smi's breakdown, the 1 PiB request larger than the device, no leak
# in the PyTorch loop. Built traces: TF allow_growth regions doubling, a
# PyTorch OOM retried after freeing the cache, an OOM because of another
# process, two runs compared. Then --json's ids, the exit codes, and the
# environment the library records for it.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"
. "$(dirname "$0")/explain-traces.sh"
explain_traces
REAL=$TESTS_DIR/real

ex() { # name args...: explain --json into name.json, exit 0, nothing on stderr
	local name=$1
	shift
	"$GMT_CLI" explain --json "$@" >"$name.json" 2>err || fail "explain $* exit $?: $(cat err)"
	[ ! -s err ] || fail "explain $*: unexpected stderr: $(cat err)"
}
# the ids, less oom-invisible (a note on the OOMs no call shows, where oom gives them)
ids() { json "$1.json" "[f['id'] for f in d['traces'][${2:-0}]['findings'] if f['id'] != 'oom-invisible']"; }
finding() { # name id expr-on-f
	json "$1.json" "[$3 for f in d['traces'][0]['findings'] if f['id'] == '$2'][0]"
}

# ---- the real traces ----
ex async "$REAL/2026-11-22-h100/torch-async.837.gmt"
expect_eq async-mode "$(json async.json "d['traces'][0]['allocator']")" "cudaMallocAsync (stream-ordered pool)"
expect_eq async-ids "$(ids async)" "['smi-breakdown', 'pool-reserve', 'warm-up']"
# nvidia-smi 2.31 GiB at the end = 193 MiB traced + 518 MiB context + the reserve
expect_eq async-reserve "$(finding async pool-reserve "f['bytes'] // $MiB")" 1652
expect_eq async-threshold "$(finding async pool-reserve "'release threshold to the maximum' in f['answer'] and 'torch.cuda.empty_cache()' in f['change']")" True
expect_eq async-cmd "$(finding async smi-breakdown "f['evidence'][0]['command'].split()[:2]")" "['gpumemtrace', 'accounting']"

ex jax "$REAL/2026-11-22-h100/jax-default.1043.gmt"
expect_eq jax-fw "$(json jax.json "d['traces'][0]['framework']")" JAX
expect_eq jax-pre "$(finding jax preallocation "[f['bytes'] // $MiB, '75% of the device' in f['answer'], 'XLA_PYTHON_CLIENT_PREALLOCATE=false' in f['change'], f['needs_framework_counters']]")" \
	"[60810, True, True, True]"

ex nccl "$REAL/2026-11-22-h100/nccl.969.gmt"
expect_eq nccl-smi "$(finding nccl smi-breakdown "[e['text'] for e in f['evidence'] if e['text'].startswith('NCCL')]")" "['NCCL: 388 MiB']"
expect_eq nccl-cache "$(ids nccl | grep -c torch-cache)" 1

ex plain "$REAL/2026-11-22-h100/plain-shared.596.gmt"
expect_eq plain-first "$(json plain.json "d['traces'][0]['findings'][0]['id']")" oom-exceeds-device-total
expect_eq plain-fw "$(json plain.json "d['traces'][0]['framework']")" "no framework"

ex nocache "$REAL/2026-11-23-h100/torch-nocache.941.gmt"
expect_eq nocache-mode "$(json nocache.json "d['traces'][0]['allocator']")" "no caching"
# tests/gpu/torch_train.py keeps nothing per step: never a leak
for t in nocache async; do
	expect_eq "$t-no-leak" "$(ids $t | grep -c "'leak'" || true)" 0
done

# the golden workload keeps 1 MiB per step: a leak, at a site in its code
ex leak "$TESTS_DIR/golden/leak.gmt"
expect_eq leak "$(finding leak leak "[f['answer'].startswith('memory keeps growing'), 'tests/golden/workload.c:' in f['answer'], 'leaks' in [e['command'].split()[1] for e in f['evidence'] if e['command']]]")" \
	"[True, True, True]"

# ---- TF with allow_growth: regions of 2 MiB doubling to 64 MiB, none returned ----

ex tf tf.gmt
expect_eq tf-mode "$(json tf.json "[d['traces'][0][k] for k in ('framework', 'allocator')]")" "['TensorFlow', 'BFC, growing (allow_growth)']"
expect_eq tf-growth "$(finding tf bfc-growth "[f['bytes'] // $MiB, 'returned none' in f['answer'], 'memory_limit' in f['change']]")" "[126, True, True]"

# ---- PyTorch: a cudaMalloc fails, the cache's segments are freed, the retry succeeds ----

ex retry retry.gmt
expect_eq retry-ids "$(ids retry | cut -d, -f1-2)" "['torch-cache', 'oom-retried'"
expect_eq retry-answer "$(finding retry oom-retried "[f['bytes'] // $MiB, 'num_alloc_retries' in f['change']]")" "[20, True]"
expect_eq retry-segs "$(finding retry torch-cache "f['evidence'][0]['text']")" \
	"segments: 1 of 2 MiB (requests up to 1 MiB), 2 of 20 MiB (1 to 10 MiB), 0 larger (rounded to 2 MiB)"

# ---- an OOM because another process held the memory (free 200 MiB of 1 GiB, 100 MiB ours) ----

ex other other.gmt
expect_eq other-case "$(finding other oom-other-processes "['query-compute-apps' in f['change'], f['evidence'][0]['text']]")" \
	"[True, 'free then: 200 MiB of 1.00 GiB; this process held 100 MiB, other processes 724 MiB']"

# ---- two runs: B on a bigger GPU, another driver, expandable segments ----
ex ab a.gmt b.gmt
expect_eq ab-ids "$(json ab.json "sorted(f['id'] for f in d['comparison']['findings'])")" \
	"['compare-driver', 'compare-env', 'compare-gpu', 'compare-peak', 'compare-sites']"
expect_eq ab-peak "$(json ab.json "d['comparison']['findings'][0]['answer']")" "B needed 200 MiB more than A: traced peak 300 MiB against 100 MiB"
expect_eq ab-env "$(json ab.json "[f['evidence'][0]['text'] for f in d['comparison']['findings'] if f['id'] == 'compare-env'][0]")" \
	"PYTORCH_CUDA_ALLOC_CONF: A unset, B expandable_segments:True"
expect_eq ab-traces "$(json ab.json "len(d['traces'])")" 2
"$GMT_CLI" explain a.gmt b.gmt >ab.txt || fail "explain A B text: exit $?"
grep -q '^comparison: why one run needed more' ab.txt || fail "explain A B: no comparison heading"

# ---- exit codes ----
rc=0; "$GMT_CLI" explain >/dev/null 2>&1 || rc=$?; expect_eq no-args $rc 2
rc=0; "$GMT_CLI" explain a.gmt a.gmt a.gmt >/dev/null 2>&1 || rc=$?; expect_eq three $rc 2
rc=0; "$GMT_CLI" explain --device 4 a.gmt >/dev/null 2>err || rc=$?; expect_eq no-device $rc 2
grep -q 'no device 4 in the trace' err || fail "no-device: $(cat err)"
rc=0; "$GMT_CLI" explain missing.gmt >/dev/null 2>&1 || rc=$?; expect_eq missing $rc 3
echo 'not a trace at all' >bad.gmt
rc=0; "$GMT_CLI" explain bad.gmt >/dev/null 2>&1 || rc=$?; expect_eq bad $rc 4

# ---- the environment the library records (the framework table's names and prefixes) ----
XLA_CLIENT_MEM_FRACTION=.5 NCCL_BUFFSIZE=1048576 NCCL_P2P_DISABLE=1 \
	CUBLAS_WORKSPACE_CONFIG=:4096:8 XLA_PYTHON_CLIENT_PREALLOCATE=false UNRELATED_SETTING=1 \
	TF_DEVICE_MIN_SYS_MEMORY_IN_MB=512 CUPY_GPU_MEMORY_LIMIT=1G SLURM_PROCID=3 \
	traced "$PROG_DIR/driver-basic" >/dev/null
"$GMT_CLI" dump "$(the_trace)" | grep ' PROCESS ' >process.txt
for kv in '"XLA_CLIENT_MEM_FRACTION": ".5"' '"NCCL_BUFFSIZE": "1048576"' '"NCCL_P2P_DISABLE": "1"' \
	'"CUBLAS_WORKSPACE_CONFIG": ":4096:8"' '"XLA_PYTHON_CLIENT_PREALLOCATE": "false"' \
	'"TF_DEVICE_MIN_SYS_MEMORY_IN_MB": "512"' '"CUPY_GPU_MEMORY_LIMIT": "1G"' '"SLURM_PROCID": "3"'; do
	grep -qF "$kv" process.txt || fail "not recorded: $kv in $(cat process.txt)"
done
! grep -q UNRELATED_SETTING process.txt || fail "recorded a variable off the list"

# the sites explain names follow the site options as every other report's:
# --hide passes over a frame, --focus picks one, a pattern that matches no
# frame warns (explain had none of them)
lm="$TESTS_DIR/verdicts/traces/torch.leak-mid.gmt"
"$GMT_CLI" explain "$lm" >plain.txt || fail "explain"
grep -q 'last raised at drv_malloc' plain.txt || fail "the leak's site: $(grep -m1 'raised at' plain.txt)"
"$GMT_CLI" explain --hide drv_malloc "$lm" >hidden.txt 2>err.txt || fail "explain --hide"
grep -q 'last raised at alloc_block' hidden.txt || fail "--hide: $(grep -m1 'raised at' hidden.txt)"
! grep -q 'drv_malloc' hidden.txt || fail "--hide: drv_malloc still named"
"$GMT_CLI" explain --json --hide drv_malloc "$lm" | grep -q 'alloc_block' || fail "--hide --json"
"$GMT_CLI" explain --focus 'no_such_frame_xyz' "$lm" >/dev/null 2>err.txt || fail "--focus"
grep -q "matched no frame" err.txt || fail "--focus unmatched: no warning: $(cat err.txt)"
"$GMT_CLI" explain --focus 'torch_malloc' "$lm" | grep -q 'last raised at torch_malloc' ||
	fail "--focus torch_malloc"
echo ok
