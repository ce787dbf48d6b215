# GPUMEMTRACE_OUTPUT: %p %h %r %%; never overwrite, never follow a symlink;
# an unwritable place is one warning and an untouched program.
. "$TESTS_DIR/integration/lib.sh"
mkdir out
RANK=3 GPUMEMTRACE_OUTPUT='out/t-%h-%p-%r-%%.gmt' traced "$PROG_DIR/life" exit 2
f=(out/t-*.gmt)
[ ${#f[@]} -eq 1 ] || fail "expected one file in out/: ${f[*]}"
host=$(hostname)
[[ ${f[0]} =~ ^out/t-$host-[0-9]+-3-%\.gmt$ ]] || fail "bad name ${f[0]}"

# An existing file is never overwritten: the new trace takes a .N name.
echo precious >out/fixed.gmt
GPUMEMTRACE_OUTPUT=out/fixed.gmt traced "$PROG_DIR/life" exit 2
expect_eq "existing file" "$(cat out/fixed.gmt)" precious
[ -f out/fixed.1.gmt ] || fail "no out/fixed.1.gmt"
"$GMT_CLI" summary --json out/fixed.1.gmt >/dev/null

# A symlink where the trace would go is not followed.
echo target >victim
ln -s ../victim out/link.gmt
GPUMEMTRACE_OUTPUT=out/link.gmt traced "$PROG_DIR/life" exit 2
expect_eq "symlink target" "$(cat victim)" target
[ -L out/link.gmt ] || fail "symlink replaced"
[ -f out/link.1.gmt ] || fail "no out/link.1.gmt"

# Unwritable: one warning, same output and exit code.
untraced "$PROG_DIR/life" exit 2 >plain.out 2>plain.err
GPUMEMTRACE_OUTPUT=/nonexistent/dir/x.gmt traced "$PROG_DIR/life" exit 2 >t.out 2>t.err
cmp plain.out t.out || fail "stdout changed"
expect_eq "warning lines" "$(grep -c '^gpumemtrace: ' t.err)" 1
grep -q "tracing is off" t.err || fail "warning does not say tracing is off: $(cat t.err)"
echo ok
