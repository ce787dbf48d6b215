# Thousands of short-lived threads: a thread's events survive its exit.
. "$TESTS_DIR/integration/lib.sh"
n=2000
[ "${STRESS:-}" = full ] && n=20000
traced "$PROG_DIR/stress" churn $n >got.txt || fail "traced run failed: $(cat got.txt)"
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json
expect_eq "events" "$(json s.json 'd["events"]')" $((4 * n + 1)) # + the context retain
expect_eq "lost" "$(json s.json 'd["lost_events"]')" 0
expect_eq "complete" "$(json s.json 'd["complete"]')" True
expect_eq "live at end" "$(json s.json 'sum(x["live_allocations_at_end"] for x in d["devices"])')" 0
echo ok
