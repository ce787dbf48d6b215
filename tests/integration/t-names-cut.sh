# Naming cut short by its bound (GPUMEMTRACE_NAME_SECONDS, per trace) is
# never silent: a report says so in one line on stderr, and symbolize adds
# a warning NOTE to the trace, which summary shows; the frames not looked
# up stay module+offset. A bound that is not a number is said, and the
# default used.
. "$TESTS_DIR/integration/lib.sh"
GPUMEMTRACE_SYMBOLIZE=0 traced "$PROG_DIR/life" exit 6
t=$(the_trace)
expect_eq "SYMBOL records" "$("$GMT_CLI" dump "$t" | grep -c ' SYMBOL ' || true)" 0

GPUMEMTRACE_NAME_SECONDS=0 "$GMT_CLI" top "$t" >top.txt 2>err.txt
grep -q "top: warning: $t: naming stopped at its 0 s bound (GPUMEMTRACE_NAME_SECONDS): [1-9][0-9]* of [1-9][0-9]* frames looked up were left as module+offset" err.txt ||
	fail "no line says naming was cut short: $(cat err.txt)"
grep -q "allocs (" top.txt && fail "named after the bound: $(cat top.txt)"
grep -q "life+0x" top.txt || fail "not module+offset: $(cat top.txt)"

"$GMT_CLI" top "$t" >top.txt 2>err.txt
expect_eq "stderr without a bound passed" "$(cat err.txt)" ""
grep -q "allocs (tests/progs/life.c:" top.txt || fail "not named: $(cat top.txt)"

GPUMEMTRACE_NAME_SECONDS=soon "$GMT_CLI" top "$t" >top.txt 2>err.txt
grep -q "warning: GPUMEMTRACE_NAME_SECONDS=soon is not a number of seconds; 120 used" err.txt ||
	fail "a bad bound is not said: $(cat err.txt)"
grep -q "allocs (tests/progs/life.c:" top.txt || fail "not named with the default bound"

cp "$t" cut.gmt
GPUMEMTRACE_NAME_SECONDS=0 "$GMT_CLI" symbolize cut.gmt >out.txt
grep -q "naming stopped at its 0 s bound (GPUMEMTRACE_NAME_SECONDS): [1-9][0-9]* frames not looked up" out.txt ||
	fail "symbolize does not say it was cut short: $(cat out.txt)"
"$GMT_CLI" dump cut.gmt | grep -q 'NOTE warning "naming after the run stopped at its 0 s bound' ||
	fail "no NOTE in the trace"
"$GMT_CLI" summary cut.gmt >s.txt
grep -q "naming after the run stopped at its 0 s bound" s.txt || fail "summary does not show the NOTE"
"$GMT_CLI" dump cut.gmt | tail -1 | grep -q ', complete$' || fail "the trace is no longer complete"
echo ok
