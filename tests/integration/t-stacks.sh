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

# Loaded by relative paths (LD_PRELOAD=./lib.so, a relative library path):
# the trace names the files absolutely, and the runtime's frames still get
# their symbols.
rm -f gpumemtrace.*
mkdir rel && cp -r "$SIM_DIR" rel/sim && cp "$GMT_LIB" rel/
asan=""
[[ $preload == *" "* ]] && asan="${preload%% *} " # ASan's runtime first, as traced() does
(cd rel && LD_PRELOAD="$asan./$(basename "$GMT_LIB")" LD_LIBRARY_PATH=sim "$PROG_DIR/life" exit 2)
"$GMT_CLI" dump rel/gpumemtrace.*.gmt >rel.txt
here=$(pwd -P)
grep -q "path \"$here/rel/sim/libcudart.so.13\"" rel.txt || fail "runtime's path not absolute"
grep -q "path \"$here/rel/$(basename "$GMT_LIB")\"" rel.txt || fail "our path not absolute"
grep -q 'file "tests/sim/runtime.c"' rel.txt || fail "no symbol from the runtime"
echo ok
