# _exit called from a signal handler that interrupted malloc: the program
# still ends (no deadlock in the tracer), with its exit code, every time.
. "$TESTS_DIR/integration/lib.sh"
for i in $(seq 1 15); do
	set +e
	timeout 60 env LD_PRELOAD="$GMT_LIB" LD_LIBRARY_PATH="$SIM_DIR" "$PROG_DIR/life" sigexit 4
	rc=$?
	set -e
	[ $rc -eq 124 ] && fail "run $i hung (killed after 60 s)"
	expect_eq "run $i exit code" $rc 0
done
for t in gpumemtrace.*.gmt; do
	"$GMT_CLI" summary --json "$t" >s.json 2>/dev/null || fail "unreadable trace $t"
	expect_eq "$t events" "$(json s.json 'd["events"]')" 7 # 6 + the context retain
done
echo ok
