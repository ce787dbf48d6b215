#!/usr/bin/env bash
# run --framework-counters records each framework out-of-memory error (a
# FWOOM record: python/gpumemtrace/_counters/sitecustomize.py's _OomWatch)
# on the stand-ins (tests/python/standins, the real APIs' shapes): PyTorch's
# through its observer, caught or not, armed as torch.cuda is imported;
# PyTorch's, JAX's, TensorFlow's and CuPy's when uncaught in the main thread
# or in a thread, inside a chain (raise ... from), or past a program's own
# excepthook (at exit); and oom names each one's case from its figures.
# The program's output and exit status never change.
. "$TESTS_DIR/integration/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
py=$(python3 -c 'import sys; print(sys.executable)')
prog=$TESTS_DIR/python/oom-scenarios.py
export LD_LIBRARY_PATH=$SIM_DIR SIMCUDA_CAPACITY=1G GPUMEMTRACE_SAMPLE_MS=50
export PYTHONPATH=$TESTS_DIR/python/standins

# scenario  verdict  "case,caught,how,observer" of the last failure
check() {
	local m=$1 verdict=$2 last=$3 rc=0 rc2=0
	"$py" "$prog" "$m" >"plain.$m" 2>"plain-err.$m" || rc=$?
	"$GMT_CLI" run -q --framework-counters -o "$PWD/$m.gmt" -- "$py" "$prog" "$m" \
		>"out.$m" 2>"err.$m" || rc2=$?
	expect_eq "$m: exit status" $rc2 $rc
	diff "plain.$m" "out.$m" >/dev/null || fail "$m: the program's output changed"
	sed '/^gpumemtrace run: trace written/d' "err.$m" | diff "plain-err.$m" - >/dev/null ||
		fail "$m: its stderr changed: $(diff "plain-err.$m" "err.$m")"
	"$GMT_CLI" oom --json "$m.gmt" >"$m.json" || fail "$m: oom exit $?"
	local got
	got=$(python3 - "$m.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))["traces"][0]
o = d["ooms"][-1] if d["ooms"] else None
w = o and o["framework"]
print(d["verdict"], o and "%s,%s,%s,%s" % (o["case"], o["caught"], w and w["how"], w and w["observer"]))
P
	)
	expect_eq "$m" "$got" "$verdict $last"
}

check torch-fragmented fragmentation fragmentation,False,excepthook,True
check torch-caught caught exceeds-device-total,True,observer,True
check torch-fraction limit limit,False,excepthook,True
check torch-replaced-hook exceeds-device-total exceeds-device-total,False,at-exit,True
check torch-chained exceeds-device-total exceeds-device-total,False,excepthook,True
check jax limit limit,False,excepthook,False
check tf-thread exceeds-device-total exceeds-device-total,False,thread,False
check tf-limit limit limit,False,excepthook,False
check cupy this-process this-process,False,excepthook,False
CUPY_GPU_MEMORY_LIMIT=536870912 check cupy-limit limit limit,False,excepthook,False

# the records: the framework's type, its message, the figures read then
"$GMT_CLI" dump torch-chained.gmt >d.txt
grep -q 'FWOOM .* how excepthook source "torch" type "torch.OutOfMemoryError" ordinal 0 count [0-9]* message "CUDA out of memory. Tried to allocate 4.00 GiB' d.txt ||
	fail "torch-chained: the raised record: $(grep FWOOM d.txt)"
grep -q 'FWOOM .* how observer source "torch" type "" ordinal 0' d.txt || fail "no observer record"
grep -q '"limit_or_total" 1073741824' d.txt || fail "the observer's third argument"
"$GMT_CLI" dump jax.gmt | grep -A12 ' FWOOM ' >j.txt
grep -q 'type "jax.errors.JaxRuntimeError"' j.txt && grep -q '"bytes_limit" 67108864' j.txt &&
	grep -q '"largest_free_block_bytes"' j.txt || fail "jax's record: $(cat j.txt)"
grep -q '"memory_limit" 104857600' <("$GMT_CLI" dump tf-limit.gmt) || fail "tf's memory_limit"
grep -q '"limit" 536870912' <("$GMT_CLI" dump cupy-limit.gmt) || fail "cupy's limit"
# explain names the case first, with advice for it
"$GMT_CLI" explain torch-fragmented.gmt >x.txt
grep -m1 '^1\. ' x.txt | grep -q 'oom-fragmentation' || fail "explain's first finding: $(grep '^[0-9]\.' x.txt)"
grep -q 'expandable_segments:True' x.txt || fail "explain: no expandable_segments advice"
# without the flag: no helper, no record
"$GMT_CLI" run -q -o "$PWD/plain.gmt" -- "$py" "$prog" torch-fragmented >/dev/null 2>&1 || true
! "$GMT_CLI" dump plain.gmt | grep -q ' FWOOM ' || fail "a FWOOM record without the flag"
echo ok
