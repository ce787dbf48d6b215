# The README's quick-start demo runs and prints a summary.
. "$TESTS_DIR/integration/lib.sh"
[ -x "$BUILD/examples/train-loop" ] || skip "demo not built"
"$TESTS_DIR/../scripts/demo.sh" "$BUILD" >demo.txt 2>&1 || fail "demo failed: $(tail demo.txt)"
grep -q "trained 50 steps" demo.txt || fail "the workload did not run"
grep -qi "peak" demo.txt || fail "no summary: $(cat demo.txt)"
echo ok
