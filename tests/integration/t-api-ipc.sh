# API: CUDA IPC (cudaIpcOpenMemHandle/CloseMemHandle, cuIpcOpenMemHandle_v2,
# cuIpcCloseMemHandle). An opened handle maps another allocation's memory:
# it is not device memory of this process, so the device peak is the 2 MiB
# exported allocation alone.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic ipc
expect_calls cudaMalloc=1/0/2097152 cudaFree=1/0/- \
	cudaIpcOpenMemHandle=1/0/- cudaIpcCloseMemHandle=1/0/-
expect_call_names cudaMalloc cudaFree cudaIpcOpenMemHandle cudaIpcCloseMemHandle
expect_device 0 2097152
expect_json "ipc mappings live at end" 'd["memory"]["ipc"]["live_allocations_at_end"]' 0

next_run
run_both driver-basic ipc
expect_calls cuMemAlloc_v2=1/0/2097152 cuMemFree_v2=1/0/- \
	cuIpcOpenMemHandle_v2=1/0/- cuIpcCloseMemHandle=1/0/-
expect_call_names cuMemAlloc_v2 cuMemFree_v2 cuIpcOpenMemHandle_v2 cuIpcCloseMemHandle
expect_device 0 2097152
echo ok
