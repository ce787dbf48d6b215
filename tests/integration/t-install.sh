# make install PREFIX=... puts the library, the CLI and the headers in
# place, and the installed pieces work together.
. "$TESTS_DIR/integration/lib.sh"
root=$(cd "$TESTS_DIR/.." && pwd)
make -s -C "$root" BUILD="$BUILD" install PREFIX="$PWD/inst" >make.log 2>&1 || fail "$(tail make.log)"
for f in lib/libgpumemtrace.so bin/gpumemtrace include/gpumemtrace/format.h; do
	[ -f "inst/$f" ] || fail "missing inst/$f"
done
LD_PRELOAD=$PWD/inst/lib/libgpumemtrace.so LD_LIBRARY_PATH=$SIM_DIR "$PROG_DIR/life" exit 4
inst/bin/gpumemtrace summary --json "$(the_trace)" >s.json
expect_eq "events" "$(json s.json 'd["events"]')" 7 # 6 + the runtime's context retain
echo ok
