# explain with the framework's own counters (run --framework-counters on
# the stand-ins of t-api-framework-counters, tests/python/standins), known
# answers from tests/python/counters-train.py:
#   torch: three 8 MiB tensors and a freed 6 MiB one in two 20 MiB segments:
#     40 MiB reserved, 24 MiB allocated at the end, 16 MiB free in the cache
#     (all of it in split segments); a 4 GiB request fails after one retry:
#     num_alloc_retries 1, num_ooms 1, so no retry recovered
#   jax: a 64 MiB pool preallocated on a 96 MiB device, 20 MiB of arrays:
#     peak_bytes_in_use 20 MiB, 31% of the pool; with a fifth to spare
#     24 MiB = .25 of the device
# Without counters (a built PyTorch trace) the findings say how to get them.
. "$TESTS_DIR/integration/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"
. "$TESTS_DIR/integration/explain-traces.sh" # MiB, explain_traces
py=$(python3 -c 'import sys; print(sys.executable)')
export LD_LIBRARY_PATH=$SIM_DIR GPUMEMTRACE_SAMPLE_MS=50
export PYTHONPATH=$TESTS_DIR/python/standins

ex() { # fw capacity: run with the counters, then explain --json into fw.json
	SIMCUDA_CAPACITY=$2 "$GMT_CLI" run -q --framework-counters -o "$PWD/$1.gmt" -- \
		"$py" "$TESTS_DIR/python/counters-train.py" "$1" >"out.$1" 2>"err.$1" ||
		fail "$1: run exit $?: $(cat "err.$1")"
	"$GMT_CLI" explain --json "$1.gmt" >"$1.json" 2>err || fail "explain $1: $(cat err)"
}
finding() { # name id expr-on-f
	json "$1.json" "[$3 for f in d['traces'][0]['findings'] if f['id'] == '$2'][0]"
}
ev() { # name id substring: whether an evidence line has it
	finding "$1" "$2" "any('$3' in e['text'] for e in f['evidence'])"
}

ex torch 1G
expect_eq torch-fw "$(json torch.json "d['traces'][0]['framework']")" PyTorch
expect_eq torch-cache "$(finding torch torch-cache "[f['bytes'] // $MiB, 'tensors used' in f['answer'], f['needs_framework_counters']]")" "[40, True, False]"
expect_eq torch-end "$(ev torch torch-cache 'tensors 24.0 MiB of 40.0 MiB reserved, 16.0 MiB free in the cache')" True
expect_eq torch-split "$(ev torch torch-cache 'inactive in split segments')" True
expect_eq torch-advice "$(finding torch torch-cache "'sat in split segments at the peak' in f['change']")" True
# at the peak of 40 MiB reserved the tensors were 24 MiB, or 30 if a reading
# caught the 6 MiB tensor before its free: the split adds up either way
expect_eq smi-split "$(finding torch smi-breakdown "f['answer'].split('(tensors ')[1].split(')')[0] in ('24.0 MiB, free in its cache 16.0 MiB', '30.0 MiB, free in its cache 10.0 MiB')")" True
expect_eq oom-reading "$(ev torch oom-exceeds-device-total 'counters at the OOM: tensors 24.0 MiB of 40.0 MiB reserved; 16.0 MiB reserved but unallocated')" True
expect_eq no-recovered-retry "$(json torch.json "'oom-retried' in [f['id'] for f in d['traces'][0]['findings']]")" False

# the simulator charges a context to NVML only, 300 MiB by default: on a
# 96 MiB device NVML would say 364 MiB for this process, more than the
# device has, and no report uses such a figure (acct_nvml_inconsistent)
SIMCUDA_CTX_BYTES=16M ex jax 96M
expect_eq jax-fw "$(json jax.json "[d['traces'][0]['framework'], d['traces'][0]['allocator']]")" "['JAX', 'BFC, preallocated']"
expect_eq jax-used "$(ev jax preallocation 'peak in use was 20.0 MiB, 31% of the 64.0 MiB taken')" True
expect_eq jax-fraction "$(finding jax preallocation "['XLA_CLIENT_MEM_FRACTION=.25 (XLA_PYTHON_CLIENT_MEM_FRACTION in older JAX) holds it' in f['change'], f['needs_framework_counters']]")" "[True, False]"
expect_eq jax-smi "$(finding jax smi-breakdown "'(tensors 20.0 MiB, free in its cache 44.0 MiB)' in f['answer']")" True

# without counters: PyTorch's cache (retry.gmt of explain-traces.sh)
explain_traces
"$GMT_CLI" explain --json retry.gmt >retry.json || fail "explain retry.gmt"
expect_eq note "$(finding retry torch-cache "[f['needs_framework_counters'], any('run with \`gpumemtrace run --framework-counters\` to see how much of the cache tensors use' in e['text'] for e in f['evidence'])]")" "[True, True]"
expect_eq note-retries "$(ev retry oom-retried 'gpumemtrace run --framework-counters')" True
echo ok
