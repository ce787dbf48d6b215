# Route: one allocation, one event. cudaMalloc reaches the driver's
# cuMemAlloc_v2 through a pointer the runtime fetched with cuGetProcAddress
# (and the tracer answers those lookups with its own wrappers): the call is
# recorded once, as cudaMalloc. Then over every runtime family: only cuda*
# names, and as many events as calls.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic malloc
expect_call_names cudaMalloc cudaFree
expect_calls cudaMalloc=3/0/6294456 cudaFree=3/0/-
expect_json "events" 'd["events"]' 7 # 6 + the runtime's context retain
expect_eq "cudaMalloc events in the dump" "$(event_count cudaMalloc)" 3
expect_eq "cuMemAlloc_v2 events in the dump" "$(event_count cuMemAlloc_v2)" 0

next_run
run_both runtime-basic
# The runtime's primary-context retain is its own event (t-nvml-context).
expect_json "driver symbols recorded" \
	'[n for n in d["calls"] if not n.startswith(("cuda", "cuDevicePrimaryCtxRetain"))]' "[]"
expect_json "events = calls" 'd["events"] == sum(c["count"] for c in d["calls"].values())' True
echo ok
