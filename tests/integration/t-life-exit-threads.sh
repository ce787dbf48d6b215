# Three threads call exit(7) at once, after allocations of main's and their
# own (undefined behaviour in C, yet untraced it always exits 7), 20 times
# (EXIT_THREADS_RUNS to change). The first exit ends the process: every
# trace complete, with every event, and exit code 7 each time. Before, a
# second thread's exit, finding no handler left, ended the process while
# the first was in our destructor: 20 traces of 20 incomplete, most with
# no event at all.
. "$TESTS_DIR/integration/lib.sh"

runs=${EXIT_THREADS_RUNS:-20}
set +e
untraced timeout 30 "$PROG_DIR/ends" exit-threads 10
rc_u=$?
set -e
expect_eq "untraced exit code" "$rc_u" 7
for i in $(seq "$runs"); do
	rm -f gpumemtrace.*
	set +e
	traced timeout 30 "$PROG_DIR/ends" exit-threads 10
	rc=$?
	set -e
	expect_eq "run $i exit code" "$rc" "$rc_u"
	t=$(the_trace)
	"$GMT_CLI" summary --json "$t" >s.json 2>summary.err || fail "run $i: summary failed"
	expect_eq "run $i complete" "$(json s.json 'd["complete"]')" True
	# 10 + 3 cudaMalloc, 5 cudaFree, the context retain; none lost.
	expect_eq "run $i events" "$(json s.json 'd["events"]')" 19
	expect_eq "run $i lost" "$(json s.json 'd["lost_events"]')" 0
done
echo ok
