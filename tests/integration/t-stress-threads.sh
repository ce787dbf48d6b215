# 16 threads, random sizes, random free order: every event is in the trace
# or counted as lost (events + lost == expected), and the program's output
# and exit code are those of an untraced run. STRESS=full: 1M events each.
. "$TESTS_DIR/integration/lib.sh"
per=100000
[ "${STRESS:-}" = full ] && per=1000000
untraced "$PROG_DIR/stress" threads 16 $per >want.txt || fail "untraced run failed"
traced "$PROG_DIR/stress" threads 16 $per >got.txt || fail "traced run failed: $(cat got.txt)"
cmp -s want.txt got.txt || fail "output changed: $(cat got.txt)"
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json
events=$(json s.json 'd["events"]') lost=$(json s.json 'd["lost_events"]')
expect_eq "events + lost" $((events + lost)) $((16 * per + 1)) # + the context retain
expect_eq "complete" "$(json s.json 'd["complete"]')" True
# Frees are timed before their call, allocations after theirs: an address
# one thread frees and another gets back is replayed in that order.
expect_eq "unmatched frees" "$(json s.json 'd["unmatched_frees"]')" 0
echo "events=$events lost=$lost"
echo ok
