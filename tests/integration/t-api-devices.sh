# API: two devices (SIMCUDA_DEVICES=2). cudaSetDevice switches where the
# runtime allocates; each device has its own peak and total, and a failed
# cudaSetDevice to a third device is not an allocation event.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

export SIMCUDA_DEVICES=2 SIMCUDA_CAPACITY=1G
run_both runtime-basic multi
expect_calls cudaMalloc=2/0/4194304 cudaMallocAsync=1/0/2097152 cudaFree=2/0/- \
	cudaFreeAsync=1/0/-
expect_call_names cudaMalloc cudaMallocAsync cudaFree cudaFreeAsync
expect_json "devices" 'len(d["devices"])' 2 \
	"device 1 total_bytes" 'd["devices"][1]["total_bytes"]' 1073741824 \
	"device 1 name" 'd["devices"][1]["name"]' "Simulated GPU 1"
expect_device 0 1048576
expect_device 1 5242880
echo ok
