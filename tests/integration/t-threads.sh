# 8 threads x 100k alloc/free pairs: exact counts, nothing lost; then the
# same against the driver without books that the throughput bench uses.
. "$TESTS_DIR/integration/lib.sh"
traced "$PROG_DIR/threads" 8 100000 >/dev/null
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json
expect_eq "events" "$(json s.json 'd["events"]')" 1600001 # + the context retain
expect_eq "lost" "$(json s.json 'd["lost_events"]')" 0
expect_eq "complete" "$(json s.json 'd["complete"]')" True
expect_eq "live at end" "$(json s.json 'sum(x["live_allocations_at_end"] for x in d["devices"])')" 0

# SIMCUDA_BOOKS=0 charges no capacity: with less capacity than one
# allocation, every call succeeds only if the mode took effect.
rm -f "$t"
SIMCUDA_BOOKS=0 SIMCUDA_CAPACITY=2K traced "$PROG_DIR/threads" 8 20000 >nb.txt
grep -Eq "failures=0( |$)" nb.txt || fail "without books: $(cat nb.txt)"
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >nb.json
expect_eq "events without books" "$(json nb.json 'd["events"]')" 320001
expect_eq "lost without books" "$(json nb.json 'd["lost_events"]')" 0
expect_eq "live at end without books" \
	"$(json nb.json 'sum(x["live_allocations_at_end"] for x in d["devices"])')" 0
SIMCUDA_CAPACITY=2K untraced "$PROG_DIR/threads" 1 10 >books.txt || true # exits 1 on failures
grep -Eq "failures=10( |$)" books.txt || fail "with books, a 2 KiB device failed $(cat books.txt)"
echo ok
