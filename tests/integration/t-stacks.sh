# Stacks are captured, interned once, and named when read, from the files
# the MODULE records name (function and file:line), so the reports name the
# allocating function. The library names nothing by default.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"
traced "$PROG_DIR/life" exit 6
t=$(the_trace)
"$GMT_CLI" dump "$t" >dump.txt
if grep -q " SYMBOL " dump.txt; then fail "frames named in the process by default"; fi
"$GMT_CLI" export --format csv "$t" >rows.csv
grep -q ",allocs,tests/progs/life.c," rows.csv || fail "allocs() at life.c not named: $(head -3 rows.csv)"
"$GMT_CLI" summary "$t" >summary.txt
grep -q "allocs" summary.txt || fail "summary does not name allocs(): $(cat summary.txt)"

# Loaded by relative paths (LD_PRELOAD=./lib.so, a relative library path),
# with the working directory moved before the first call and again before a
# library loads: the trace names each file once, absolutely, and the
# runtime's frames can still be named from it.
rm -f gpumemtrace.*
mkdir rel elsewhere && cp -r "$SIM_DIR" rel/sim && cp "$GMT_LIB" rel/
cp "$PROG_DIR/libnextcheck2.so" elsewhere/libextra.so
here=$(pwd -P)
asan=""
[[ $preload == *" "* ]] && asan="${preload%% *} " # ASan's runtime first, as traced() does
# The runtime loads at start, by the relative entry; the driver, which it
# opens at its first call, after the move, by the absolute one.
(cd rel && LD_PRELOAD="$asan./$(basename "$GMT_LIB")" LD_LIBRARY_PATH="sim:$here/rel/sim" \
	GPUMEMTRACE_OUTPUT="$here/rel.gmt" "$PROG_DIR/life" chdir 2 "$here/elsewhere" ./libextra.so)
"$GMT_CLI" dump rel.gmt >rel.txt
grep -q "path \"$here/elsewhere/libextra.so\"" rel.txt || fail "the library loaded by ./libextra.so not named absolutely"
expect_eq "modules named twice" "$(grep ' MODULE ' rel.txt | sed 's/.*\[\(0x[0-9a-f]*\),.*/\1/' | sort | uniq -d)" ""
expect_eq "relative module paths" "$(grep ' MODULE ' rel.txt | grep -v 'path "/' | grep -vc 'linux-vdso')" 0
grep -q "path \"$here/rel/sim/libcudart.so.13\"" rel.txt || fail "runtime's path not absolute"
grep -q "path \"$here/rel/$(basename "$GMT_LIB")\"" rel.txt || fail "our path not absolute"
cp rel.txt dump.txt
stack_of cuDevicePrimaryCtxRetain >ctx.txt
grep -qx 'libcudart.so.13 primary_of' ctx.txt || fail "the runtime's frames not named from its absolute path: $(cat ctx.txt)"
echo ok
