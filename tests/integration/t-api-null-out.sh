# NULL out-parameters (tests/progs/null-out.c): cuMemAlloc_v2, cudaMalloc,
# cudaMallocHost, cuMemCreate, cuMemAddressReserve, cuMemGetInfo_v2,
# cuGetProcAddress (both forms), cuDevicePrimaryCtxRetain and cuCtxCreate_v2
# with NULL where the result goes: the program sees the driver's
# CUDA_ERROR_INVALID_VALUE (the runtime's cudaErrorInvalidValue) traced as
# untraced, nothing crashes, and each recorded API has a failed event with
# pointer 0. cuMemGetInfo_v2 and cuGetProcAddress are forwarded, not
# recorded (they allocate nothing).
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both null-out
# cuDevicePrimaryCtxRetain: the NULL call, the program's good call and the
# runtime's own retain inside its first call.
expect_calls cuMemAlloc_v2=1/1/0 cuMemCreate=1/1/0 cuMemAddressReserve=1/1/0 \
	cuCtxCreate_v2=1/1/- cuDevicePrimaryCtxRetain=3/1/- cudaMalloc=2/1/1048576 \
	cudaMallocHost=1/1/0 cudaFree=1/0/-
expect_call_names cuMemAlloc_v2 cuMemCreate cuMemAddressReserve cudaMalloc cudaMallocHost \
	cudaFree
for api in cuMemAlloc_v2 cuMemCreate cuMemAddressReserve cuCtxCreate_v2 cudaMallocHost; do
	line=$(grep -m1 -E "EVENT #[0-9]+ .* $api " dump.txt)
	[[ $line == *" ptr 0x0 "*FAILED\ 1\ * ]] || fail "$api: not a failed event with ptr 0: $line"
done
expect_device 0 1048576
echo ok
