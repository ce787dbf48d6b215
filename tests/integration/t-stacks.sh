# Stacks are captured, interned once, and symbolized at exit with function
# and file:line, so the summary names the allocating function.
. "$TESTS_DIR/integration/lib.sh"
traced "$PROG_DIR/life" exit 6
t=$(the_trace)
"$GMT_CLI" dump "$t" >dump.txt
grep -q "allocs" dump.txt || fail "no symbol for allocs() in the dump"
grep -q "life.c" dump.txt || fail "no file name life.c in the dump"
"$GMT_CLI" summary "$t" >summary.txt
grep -q "allocs" summary.txt || fail "summary does not name allocs(): $(cat summary.txt)"
echo ok
