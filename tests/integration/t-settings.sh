# Bad GPUMEMTRACE_* values: one warning each, defaults used, program runs.
. "$TESTS_DIR/integration/lib.sh"
GPUMEMTRACE_STACK_DEPTH=lots GPUMEMTRACE_FLUSH_MS=-5 traced "$PROG_DIR/life" exit 2 2>err.txt
expect_eq "warnings" "$(grep -c '^gpumemtrace: ignoring' err.txt)" 2
grep -q "GPUMEMTRACE_STACK_DEPTH='lots'" err.txt || fail "$(cat err.txt)"
t=$(the_trace)
"$GMT_CLI" dump "$t" | grep -q "STACK" || fail "default depth should record stacks"
rm -f gpumemtrace.*

# Depth 0: no stacks at all.
GPUMEMTRACE_STACK_DEPTH=0 traced "$PROG_DIR/life" exit 2
t=$(the_trace)
if "$GMT_CLI" dump "$t" | grep -q "^STACK"; then fail "depth 0 recorded stacks"; fi
echo ok
