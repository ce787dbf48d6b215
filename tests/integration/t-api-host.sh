# API: pinned and registered host memory: cudaMallocHost, cudaHostAlloc,
# cudaFreeHost, cudaHostRegister/Unregister and the driver's
# cuMemAllocHost_v2, cuMemHostAlloc, cuMemFreeHost, cuMemHostRegister_v2,
# cuMemHostUnregister. Host memory is never device bytes.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic host register
expect_calls cudaMallocHost=1/0/8192 cudaHostAlloc=1/0/12288 cudaFreeHost=2/0/- \
	cudaHostRegister=1/0/65536 cudaHostUnregister=1/0/-
expect_call_names cudaMallocHost cudaHostAlloc cudaFreeHost cudaHostRegister cudaHostUnregister
expect_memory pinned_host 20480
expect_memory registered_host 65536
expect_device 0 0

next_run
run_both driver-basic host
expect_calls cuMemAllocHost_v2=1/0/8192 cuMemHostAlloc=1/0/12288 cuMemFreeHost=2/0/- \
	cuMemHostRegister_v2=1/0/65536 cuMemHostUnregister=1/0/-
expect_call_names cuMemAllocHost_v2 cuMemHostAlloc cuMemFreeHost cuMemHostRegister_v2 \
	cuMemHostUnregister
expect_memory pinned_host 20480
expect_memory registered_host 65536
expect_device 0 0
echo ok
