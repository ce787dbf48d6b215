# API: out of memory. On a 64 MiB simulated device, 8 MiB cudaMallocs
# succeed 8 times, the 9th fails with cudaErrorMemoryAllocation (recorded as
# failed, its bytes not counted), all are freed and one more succeeds. The
# driver's cuMemAlloc_v2 of capacity + 1 fails with CUDA_ERROR_OUT_OF_MEMORY.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

export SIMCUDA_CAPACITY=64M
run_both oom
grep -q '^allocated 8 blocks of 8 MiB, then error 2 ' traced.out || fail "not 8 blocks then error 2"
expect_calls cudaMalloc=10/1/75497472 cudaFree=9/0/-
expect_call_names cudaMalloc cudaFree
expect_device 0 67108864
expect_json "device total_bytes" 'd["devices"][0]["total_bytes"]' 67108864
expect_json "failures" '[(f["api"], f["result"], f["size"]) for f in d["failures"]]' \
	"[('cudaMalloc', 2, 8388608)]"

next_run
run_both driver-basic oom
expect_calls cuMemAlloc_v2=1/1/0
expect_call_names cuMemAlloc_v2
expect_json "failures" '[(f["api"], f["result"], f["size"]) for f in d["failures"]]' \
	"[('cuMemAlloc_v2', 2, 67108865)]"
expect_device 0 0
echo ok
