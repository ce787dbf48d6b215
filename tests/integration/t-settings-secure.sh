# AT_SECURE: a setuid program is left alone. The loader ignores LD_PRELOAD
# and LD_LIBRARY_PATH when AT_SECURE is set, so this tests the library's own
# check: tests/progs/secure.c loads the simulated driver and the tracer by
# absolute path and allocates through the tracer's exported wrappers. Run
# as user nobody (setpriv), a setuid-root copy (AT_SECURE 1) must write no
# trace and no stderr line, and print what it prints without the tracer; a
# plain copy (AT_SECURE 0) run the same way must write a trace, so the test
# fails if the tracer stops working in this set-up instead of passing idly.
# Needs root, setpriv and a filesystem without nosuid for the setuid copy.
. "$TESTS_DIR/integration/lib.sh"

[[ ${SANITIZE:-} != *address* ]] || skip "setuid with ASan: not tested"
[ "$(id -u)" = 0 ] || skip "needs root to make a setuid-root copy"
command -v setpriv >/dev/null || skip "needs setpriv"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# Our temp dir is private (mode 700): nobody needs a world-readable one.
dir=$(mktemp -d /tmp/gmt-secure.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
cp "$PROG_DIR/secure" "$dir/plain"
cp "$PROG_DIR/secure" "$dir/setuid"
cp "$GMT_LIB" "$dir/libgpumemtrace.so"
cp "$SIM_DIR/libcuda.so.1" "$dir/libcuda.so.1"
chmod 755 "$dir"/*
chmod u+s "$dir/setuid"
mkdir -m 1777 "$dir/out"
cd "$dir/out"

as_nobody "$dir/setuid" "$dir/libcuda.so.1" - >untraced.out 2>untraced.err ||
	fail "setuid copy failed without the tracer: $(cat untraced.out untraced.err)"
grep -qx 'AT_SECURE 1' untraced.out || skip "a setuid copy in /tmp does not get AT_SECURE here (nosuid?)"

as_nobody "$dir/setuid" "$dir/libcuda.so.1" "$dir/libgpumemtrace.so" >traced.out 2>traced.err ||
	fail "setuid copy failed with the tracer: $(cat traced.out traced.err)"
diff -u untraced.out traced.out || fail "output differs with the tracer"
[ ! -s traced.err ] || fail "stderr under AT_SECURE: $(cat traced.err)"
! compgen -G 'gpumemtrace.*.gmt' >/dev/null || fail "a trace was written under AT_SECURE"

as_nobody "$dir/plain" "$dir/libcuda.so.1" "$dir/libgpumemtrace.so" >plain.out 2>plain.err ||
	fail "plain copy failed: $(cat plain.out plain.err)"
grep -qx 'AT_SECURE 0' plain.out || fail "plain copy: $(head -n1 plain.out)"
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json
expect_eq "cuMemAlloc_v2 without AT_SECURE" "$(json s.json 'd["calls"]["cuMemAlloc_v2"]["count"]')" 1
echo ok
