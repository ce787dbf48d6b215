# Issue 18, case 9: a process killed with no exit path run (a Pool's workers
# SIGTERMed by terminate(), a kill -9) keeps what it did up to a few ms
# before. The flush thread writes an event within GPUMEMTRACE_FLUSH_MS
# (default 20) and, asleep with the rings empty, is woken by the first one.
. "$TESTS_DIR/integration/lib.sh"

events() { # the trace's event count; the trace is removed
	local t
	t=$(the_trace)
	"$GMT_CLI" summary --json "$t" >s.json 2>err.txt || fail "summary failed: $(cat err.txt)"
	json s.json 'd["events"]'
	rm -f "$t"
}

n=40
traced "$PROG_DIR/killafter" $n 0 0
want=$(events)
[ "$want" -gt $n ] || fail "clean run: $want events"

# The mechanism, timing-free: with a one-minute period, only the wake by
# the first event into the empty rings can write any of the batch before
# the kill, 500 ms later. The wake comes after that event's commit, so the
# drain it starts holds at least it; the rest of the batch may wait a whole
# period (GPUMEMTRACE_FLUSH_MS is the bound), so only the first is asked
# for. No NVML: a sample (a PEAK one follows a cycle) pending when the
# flush thread looks would (rightly) keep its one-minute period.
SIMCUDA_NVML=fail GPUMEMTRACE_FLUSH_MS=60000 GPUMEMTRACE_SAMPLE_MS=0 traced "$PROG_DIR/killafter" 0 0 0
before=$(events) # the first allocation's events, before the nap
for sig in 9 15; do
	rc=0
	SIMCUDA_NVML=fail GPUMEMTRACE_FLUSH_MS=60000 GPUMEMTRACE_SAMPLE_MS=0 traced "$PROG_DIR/killafter" $n 500 $sig || rc=$?
	expect_eq "killed by $sig" "$rc" $((128 + sig))
	got=$(events)
	[ "$got" -gt "$before" ] && [ "$got" -le "$want" ] ||
		fail "events, period 60 s, signal $sig: got $got, want more than the $before before the batch (at most $want)"
done

# The default bound: killed 300 ms after the last event (the bound is
# 20 ms; the margin is for a loaded machine's scheduling), several runs,
# SIGKILL and SIGTERM with its default disposition.
for run in 1 2 3 4; do
	sig=$((run % 2 ? 9 : 15))
	rc=0
	traced "$PROG_DIR/killafter" $n 300 $sig || rc=$?
	expect_eq "run $run killed" "$rc" $((128 + sig))
	expect_eq "events, run $run, signal $sig" "$(events)" "$want"
done
echo ok
