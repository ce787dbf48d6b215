#!/usr/bin/env bash
# A stalled disk never stalls the program (issue 29.2). stallwrite holds
# the flush thread's write of the trace until the program lets it go (a
# frozen file system, a hung NFS mount, as the tracer sees one), and does
# each step while it is stuck; nothing here is timed, the timeouts only
# bound a hang. Before: fork waited on flush_lock, held by the flush thread
# inside its write (hung: killed at 15 s); with the ring full every event
# waited GPUMEMTRACE_FULL_WAIT_MS (200,000 pairs: hung); exit waited 10 s.
source "$(dirname "$0")/lib.sh"
P=$PROG_DIR/stallwrite
json_of() { $GMT_CLI summary --json "$1" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["complete"], d["events"], d["lost_events"])'; }

# fork while the write is stuck: it goes on; the child traces itself
rc=0
timeout 60 env LD_PRELOAD="$preload" LD_LIBRARY_PATH="$SIM_DIR:$PROG_DIR" "$P" fork >out.txt 2>err.txt || rc=$?
expect_eq "fork: exit" $rc 0
pairs=$(sed -n 's/^pairs=//p' out.txt)
traces=(gpumemtrace.*.gmt)
expect_eq "fork: traces" ${#traces[@]} 2
for t in "${traces[@]}"; do
	got=$(json_of "$t")
	case $got in
	"True $((2 * pairs + 1)) 0" | "True 10 0") ;; # the child's 5 pairs
	*) fail "fork: $t: complete, events, lost: $got (parent pairs $pairs)" ;;
	esac
done
[ ! -s err.txt ] || fail "fork: $(cat err.txt)"

# the ring full while the write is stuck: the program waits at most
# GPUMEMTRACE_FULL_WAIT_MS in all, then events are counted lost (trailer,
# NOTE, one stderr line) and every event is either in the trace or counted
rm -f gpumemtrace.*.gmt
rc=0
GPUMEMTRACE_FULL_WAIT_MS=200 timeout 120 env LD_PRELOAD="$preload" \
	LD_LIBRARY_PATH="$SIM_DIR:$PROG_DIR" "$P" full 100000 >out.txt 2>err.txt || rc=$?
expect_eq "full: exit" $rc 0
pairs=$(sed -n 's/^pairs=//p' out.txt)
t=$(the_trace)
read -r complete events lost <<<"$(json_of "$t")"
expect_eq "full: complete" "$complete" True
expect_eq "full: events + lost" $((events + lost)) $((2 * pairs + 1))
[ "$lost" -gt 0 ] || fail "full: nothing lost: the program waited for the stuck write"
$GMT_CLI dump "$t" | grep -q "NOTE .*took no write for over 200 ms .*: $lost events were counted as lost" ||
	fail "full: no NOTE: $($GMT_CLI dump "$t" | grep NOTE)"
expect_eq "full: stderr lines" "$(wc -l <err.txt)" 1
grep -q "^gpumemtrace: the trace's file took no write for over 200 ms" err.txt || fail "full: $(cat err.txt)"
$GMT_CLI summary "$t" 2>&1 | head -5 | grep -q "PARTIAL DATA\|lost" || fail "full: summary does not say events were lost"

# exit while the write is stuck: it leaves once the write has been stuck
# GPUMEMTRACE_FULL_WAIT_MS (before: FINAL_WAIT_MS, 10 s); the trace ends at
# its last write, and reads as incomplete
rm -f gpumemtrace.*.gmt
rc=0
GPUMEMTRACE_FULL_WAIT_MS=100 timeout 8 env LD_PRELOAD="$preload" \
	LD_LIBRARY_PATH="$SIM_DIR:$PROG_DIR" "$P" exit >out.txt 2>err.txt || rc=$?
expect_eq "exit: exit" $rc 0
grep -q '^pairs=' out.txt || fail "exit: the program's output was lost"
t=$(the_trace)
$GMT_CLI summary "$t" >/dev/null 2>err.txt || true
grep -q "incomplete" err.txt || fail "exit: the trace does not read as incomplete: $(cat err.txt)"

# a late destructor's events (liblate.so, after the tracer's destructor)
# while the final flush's write is stuck: each waits for it at most
# GPUMEMTRACE_FULL_WAIT_MS in all, then goes unwritten (before: the
# destructor waited for flush_lock, held by the stuck writer, for ever)
rm -f gpumemtrace.*.gmt
rc=0
GPUMEMTRACE_FULL_WAIT_MS=100 GPUMEMTRACE_SAMPLE_MS=0 timeout 30 env LD_PRELOAD="$preload" \
	LD_LIBRARY_PATH="$SIM_DIR:$PROG_DIR" "$P-late" late >out.txt 2>err.txt || rc=$?
expect_eq "late: exit (124: hung)" $rc 0
expect_eq "late: output" "$(cat out.txt)" "pairs=20"
t=$(the_trace)
$GMT_CLI summary "$t" >/dev/null 2>err.txt || true
grep -q "incomplete" err.txt || fail "late: the trace does not read as incomplete: $(cat err.txt)"
echo ok
