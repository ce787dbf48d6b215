# run --framework-history: the helper (python/gpumemtrace/_counters/
# sitecustomize.py) turns on the stand-in PyTorch's allocator history
# (tests/python/standins/torch: the real API's shapes; its allocator follows
# the documented caching rules, _caching.py) once the program initialised
# CUDA, and writes its snapshots at each OOM and at exit as FWSNAP, FWTRACE
# and FWSEG records: every entry once, with the program's Python lines,
# segments and blocks; the program's own recording wins and is flushed
# before it changes; the program's output never changes.
. "$TESTS_DIR/integration/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
py=$(python3 -c 'import sys; print(sys.executable)')
prog=$TESTS_DIR/python/history-train.py
export LD_LIBRARY_PATH=$SIM_DIR SIMCUDA_CAPACITY=1G GPUMEMTRACE_SAMPLE_MS=0
export PYTHONPATH=$TESTS_DIR/python/standins:$TESTS_DIR/python/usersite

run_case() { # case flag... -> out.$case, err.$case, $case.gmt, d.$case
	local c=$1
	shift
	rm -f "$c.gmt" # an existing file would make the library pick another name
	"$GMT_CLI" run -q "$@" -o "$PWD/$c.gmt" -- "$py" "$prog" "$c" >"out.$c" 2>"err.$c" ||
		fail "$c: run exit $?: $(cat "err.$c")"
	"$GMT_CLI" dump "$c.gmt" >"d.$c" || fail "$c: dump"
}
for c in leak oom own; do
	"$py" "$prog" "$c" >"plain.$c" 2>&1 || fail "$c untraced: $(cat "plain.$c")"
	run_case "$c" --framework-history
	diff "plain.$c" "out.$c" || fail "$c: the program's output changed with the history"
	grep -q "user sitecustomize ran" "out.$c" || fail "$c: the program's own sitecustomize did not run"
	! grep -q "gpumemtrace:" "err.$c" || fail "$c: the helper spoke: $(cat "err.$c")"
done
entries() { grep -cE "^ +#[0-9]+ $2 " "d.$1" || true; }

# leak: one snapshot at exit; 1 + 30 x 8 allocations, each entry once
grep -q 'FWSNAP .* seq 1 reason exit source "torch" .* flags 0x3 history python-stacks max_entries 100000' d.leak ||
	fail "leak: no exit snapshot: $(grep FWSNAP d.leak)"
expect_eq "leak: FWSNAP records" "$(grep -c ' FWSNAP ' d.leak)" 1
expect_eq "leak: alloc entries" "$(entries leak alloc)" 241
expect_eq "leak: free_requested entries" "$(entries leak free_requested)" 210
grep -q 'PYFRAME .* function "step" file ".*history-train.py" line 23' d.leak ||
	fail "leak: the leak's Python line is not among the frames"
grep -q '"expandable_segments" "False"' d.leak || fail "leak: no allocator settings"
# the blocks at exit: the 30 kept tensors and the weights are active
expect_eq "leak: active blocks at exit" "$(grep -c ' active_allocated ' d.leak)" 31

# oom: the OOM's snapshot holds the oom entry; the exit's adds nothing twice
grep -q 'FWSNAP .* seq 1 reason oom ' d.oom || fail "oom: no snapshot at the OOM"
grep -q 'FWSNAP .* seq 2 reason exit ' d.oom || fail "oom: no snapshot at exit"
expect_eq "oom: oom entries" "$(entries oom oom)" 1
grep -qE '^ +#[0-9]+ oom device_free [0-9]+ .* size 4294967296 ' d.oom || fail "oom: the entry's figures"
expect_eq "oom: alloc entries" "$(entries oom alloc)" 241
grep -q 'FWSEG seq 2 ' d.oom || fail "oom: no segments at exit"

# own: the program's max_entries 50 wins (bound unknown: 0), its turning
# the history off is preceded by a snapshot, flagged where entries dropped
grep -q 'FWSNAP .* seq 1 reason change .* max_entries 0 ' d.own || fail "own: no snapshot before the change: $(grep FWSNAP d.own)"
grep -q 'FWTRACE seq 1 dev 0 flags 0x1 gap ' d.own || fail "own: the dropped entries are not flagged"
n=$(entries own '[a-z_]+')
[ "$n" -le 50 ] && [ "$n" -ge 40 ] || fail "own: $n entries, not the program's last 50"

# without the flag: nothing
run_case plain
! grep -q ' FWSNAP ' d.plain || fail "plain: history records without the flag"
# --history-entries N: the bound, and the flag implied
"$GMT_CLI" run -q --history-entries 100 -o "$PWD/b.gmt" -- "$py" "$prog" leak >/dev/null 2>err.b ||
	fail "--history-entries: $(cat err.b)"
"$GMT_CLI" dump b.gmt >d.b
grep -q 'FWSNAP .* max_entries 100 settings' d.b || fail "--history-entries: the bound"
grep -q 'FWTRACE seq 1 dev 0 flags 0x1 gap ' d.b || fail "--history-entries: a full history is flagged"
expect_eq "--history-entries: entries" "$(grep -cE '^ +#[0-9]+ ' d.b)" 100

# the cudaMallocAsync backend keeps no history: said once, the program unchanged
export PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
run_case leak --framework-history
unset PYTORCH_CUDA_ALLOC_CONF
diff plain.leak out.leak || fail "async: output changed"
grep -q 'FWSNAP .* reason requested source "torch" .* flags 0x0 .* settings 1' d.leak || fail "async: $(grep FWSNAP d.leak)"
grep -q '"backend" "cudaMallocAsync"' d.leak || fail "async: the backend is not named"
! grep -q ' FWTRACE ' d.leak || fail "async: entries"
echo ok
