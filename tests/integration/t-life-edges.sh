# Calls at the edges of life (tests/progs/edges.c, liblate.c): a linked
# library's constructor allocates before the tracer's constructor has run,
# an atexit handler registered by main allocates before the final flush, the
# library's destructor and an atexit handler registered before main runs
# (it runs after every destructor) allocate and free after it. All of them
# are in the trace, written with fresh trailers; output and exit code are
# the untraced ones.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both edges atexit
expect_calls cudaMalloc=6/0/22020096 cudaFree=6/0/-
expect_json "events" 'd["events"]' 13 "live at end" 'd["devices"][0]["live_allocations_at_end"]' 0
# The constructor's allocation came first, before main's.
first=$(grep -m1 -E 'EVENT #[0-9]+ .* cudaMalloc ' dump.txt)
[[ $first == *"size 1048576 "* ]] || fail "first cudaMalloc is not the constructor's: $first"
grep -qx 'liblate.so late_init' <<<"$(stack_of cudaMalloc)" || fail "no late_init frame" # no pipe: grep -q must not break stack_of's
# The final flush (first trailer) came before the destructor's and the late
# atexit handler's 7 events; each later batch got its own trailer.
first_trailer=$(grep -m1 -oE 'TRAILER .* events [0-9]+' dump.txt | grep -oE '[0-9]+$')
expect_eq "events before the final flush" "$first_trailer" 6
last_trailer=$(grep -oE 'TRAILER .* events [0-9]+' dump.txt | tail -n1 | grep -oE '[0-9]+$')
expect_eq "events in the last trailer" "$last_trailer" 13
after=$(sed -n '/TRAILER/,$p' dump.txt | grep -cE 'EVENT #[0-9]+ .* size (6291456|3145728) ' || true)
expect_eq "6 MiB and 3 MiB allocations after the final flush" "$after" 2
echo ok
