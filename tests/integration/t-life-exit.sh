# _exit (os._exit, multiprocessing workers) flushes and closes like exit;
# the exit code is the program's.
. "$TESTS_DIR/integration/lib.sh"
set +e
traced "$PROG_DIR/life" _exit 6
rc=$?
set -e
expect_eq "exit code" "$rc" 3
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json
expect_eq "events" "$(json s.json 'd["events"]')" 10 # 9 + the context retain
expect_eq "complete" "$(json s.json 'd["complete"]')" True
"$GMT_CLI" dump "$t" | grep -qi "_exit" || fail "trailer does not say _exit"
echo ok
