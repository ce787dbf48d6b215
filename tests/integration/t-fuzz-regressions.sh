# Every input the fuzzer ever crashed on (tests/fuzz/regressions/), through
# every command: an exit code from the documented set, never a signal. Under
# SANITIZE=address,undefined this also catches what used to be undefined.
. "$TESTS_DIR/integration/lib.sh"
n=0
for f in "$TESTS_DIR"/fuzz/regressions/*; do
	[ -f "$f" ] || fail "no regression inputs in $TESTS_DIR/fuzz/regressions"
	for cmd in dump "summary --json" summary top growth fragmentation oom leaks \
		"check --max-peak 1GiB" accounting "top --by range" "plot -o p.svg" \
		"flamegraph --folded" "export --format csv" "export --format pprof -o p.gz"; do
		rc=0
		"$GMT_CLI" $cmd "$f" >/dev/null 2>err.txt || rc=$?
		[ $rc -le 4 ] || fail "$cmd $(basename "$f"): exit $rc: $(tail -3 err.txt)"
		n=$((n + 1))
	done
	rc=0
	"$GMT_CLI" diff "$f" "$f" >/dev/null 2>err.txt || rc=$?
	[ $rc -le 4 ] || fail "diff $(basename "$f"): exit $rc: $(tail -3 err.txt)"
done
echo "$n runs ok"
