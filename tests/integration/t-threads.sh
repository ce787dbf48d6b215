# 8 threads x 100k alloc/free pairs: exact counts, nothing lost.
. "$TESTS_DIR/integration/lib.sh"
traced "$PROG_DIR/threads" 8 100000 >/dev/null
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json
expect_eq "events" "$(json s.json 'd["events"]')" 1600001 # + the context retain
expect_eq "lost" "$(json s.json 'd["lost_events"]')" 0
expect_eq "complete" "$(json s.json 'd["complete"]')" True
expect_eq "live at end" "$(json s.json 'sum(x["live_allocations_at_end"] for x in d["devices"])')" 0
echo ok
