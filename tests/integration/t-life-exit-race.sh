# Threads allocating in a tight loop while main calls exit(), 30 times
# (EXIT_RACE_RUNS to change): never a crash or a hang (each run under a
# 60 s timeout), output and exit code as untraced, the trace readable. What
# is checked about the count: an atexit handler of the program, which runs
# before the tracer's final flush, writes how many calls the threads had
# completed (returned from the tracer) by then; each of those is in the
# trace or counted lost, so cudaMalloc + cudaFree events + lost >= that
# count. Calls made after it, through the rest of exit, may be recorded or
# cut off by the kernel when exit ends the threads mid-call: no exact
# figure exists for them, and a trace cut mid-write reads as incomplete.
. "$TESTS_DIR/integration/lib.sh"

runs=${EXIT_RACE_RUNS:-30}
set +e
untraced timeout 60 "$PROG_DIR/edges" exit-race 4 20 counts >untraced.out 2>untraced.err
rc_u=$?
set -e
expect_eq "untraced exit code" "$rc_u" 0
for i in $(seq "$runs"); do
	mkdir "run$i"
	cd "run$i"
	set +e
	traced timeout 60 "$PROG_DIR/edges" exit-race 4 20 counts >out 2>err
	rc=$?
	set -e
	expect_eq "run $i exit code" "$rc" "$rc_u"
	diff -u ../untraced.out out || fail "run $i: output differs"
	diff -u ../untraced.err err || fail "run $i: stderr differs"
	t=$(the_trace)
	"$GMT_CLI" summary --json "$t" >s.json 2>summary.err || fail "run $i: summary failed"
	python3 - s.json "$(cat counts)" "$i" <<'PY' || fail "run $i: events missing"
import json, sys
d = json.load(open(sys.argv[1]))
completed, run = int(sys.argv[2]), sys.argv[3]
calls = d["calls"]
got = sum(calls.get(n, {}).get("count", 0) for n in ("cudaMalloc", "cudaFree"))
print("run %s: %d calls completed before the final flush; %d events, %d lost, complete %s"
      % (run, completed, got, d["lost_events"], d["complete"]))
sys.exit(0 if got + d["lost_events"] >= completed else 1)
PY
	cd ..
done
echo ok
