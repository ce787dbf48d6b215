# Colour only on a terminal, never with NO_COLOR; --help with examples and
# --version everywhere.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/eco-trace.sh"
eco_trace tr.gmt
esc=$(printf '\033')
"$GMT_CLI" check --max-peak 1GiB tr.gmt >pipe.txt || true
grep -q "$esc" pipe.txt && fail "colour on a pipe"
command -v script >/dev/null || skip "script(1) not installed: no pseudo-terminal"
script -qc "'$GMT_CLI' check --max-peak 1GiB tr.gmt" /dev/null >tty.txt || true
grep -q "${esc}\[1;31mFAIL" tty.txt || fail "no colour on a terminal: $(cat -v tty.txt)"
NO_COLOR=1 script -qc "'$GMT_CLI' check --max-peak 1GiB tr.gmt" /dev/null >nc.txt || true
grep -q "$esc" nc.txt && fail "colour despite NO_COLOR"
grep -q "FAIL" nc.txt || fail "no output under NO_COLOR"
for c in run summary top growth fragmentation oom leaks diff check plot flamegraph export dump; do
	"$GMT_CLI" "$c" --help >h.txt || fail "$c --help"
	grep -q "^usage: gpumemtrace $c" h.txt || fail "$c --help has no usage line"
done
for c in run plot flamegraph export; do
	"$GMT_CLI" "$c" --help | grep -q "^examples:" || fail "$c --help has no examples"
done
"$GMT_CLI" --version | grep -q "^gpumemtrace " || fail "--version"
echo ok
