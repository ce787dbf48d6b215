# A free from an atexit handler that runs after the tracer's final flush is
# still written, with a fresh trailer after it.
. "$TESTS_DIR/integration/lib.sh"
traced "$PROG_DIR/life" late 4
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json
expect_eq "events" "$(json s.json 'd["events"]')" 9 # 8 + the context retain
expect_eq "complete" "$(json s.json 'd["complete"]')" True
expect_eq "frees" "$(json s.json 'd["calls"]["cudaFree"]["count"]')" 3
expect_eq "live at end" "$(json s.json 'd["devices"][0]["live_allocations_at_end"]')" 2
echo ok
