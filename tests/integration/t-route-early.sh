# Route: CUDA calls before main, from a library constructor that may run
# before the tracer's own: a driver call before cuInit (fails with
# CUDA_ERROR_NOT_INITIALIZED, recorded as failed), then cudaMalloc/cudaFree;
# main allocates again. Nothing is lost or counted twice.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both early-calls
expect_calls cudaMalloc=2/0/3145728 cudaFree=2/0/- cuMemAlloc_v2=1/1/0
expect_call_names cudaMalloc cudaFree cuMemAlloc_v2
expect_json "failure result" 'd["failures"][0]["result"]' 3
expect_device 0 2097152
stack_of cudaMalloc >stack.txt
grep -q '^libearly.so early_init$' stack.txt || { cat stack.txt; fail "no early_init frame"; }
echo ok
