# API: CUDA arrays (cudaMallocArray, cudaMalloc3DArray, cudaFreeArray,
# cuArrayCreate_v2, cuArray3DCreate_v2, cuArrayDestroy): width x height x
# depth x element bytes, counted as arrays, not device bytes.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic array
expect_calls cudaMallocArray=1/0/131072 cudaMalloc3DArray=1/0/65536 cudaFreeArray=2/0/-
expect_call_names cudaMallocArray cudaMalloc3DArray cudaFreeArray
expect_memory arrays 196608
expect_device 0 0

next_run
run_both driver-basic array
expect_calls cuArrayCreate_v2=1/0/131072 cuArray3DCreate_v2=1/0/65536 cuArrayDestroy=2/0/-
expect_call_names cuArrayCreate_v2 cuArray3DCreate_v2 cuArrayDestroy
expect_memory arrays 196608
expect_device 0 0
echo ok
