# API: stream-ordered allocation, the per-thread (_ptsz) forms and memory
# pools: cudaMallocAsync[_ptsz], cudaMallocFromPoolAsync[_ptsz],
# cudaFreeAsync[_ptsz], cudaMemPoolCreate/TrimTo/Destroy and the driver's
# counterparts. Each _ptsz call is recorded under its own name; stream-
# ordered bytes are device bytes.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic async pool
expect_calls \
	cudaMallocAsync=2/0/2098152 cudaMallocAsync_ptsz=1/0/4194304 \
	cudaFreeAsync=3/0/- cudaFreeAsync_ptsz=2/0/- \
	cudaMemPoolCreate=1/0/- cudaMemPoolTrimTo=1/0/- cudaMemPoolDestroy=1/0/- \
	cudaMallocFromPoolAsync=1/0/1048576 cudaMallocFromPoolAsync_ptsz=1/0/3145728
expect_call_names cudaMallocAsync cudaMallocAsync_ptsz cudaFreeAsync cudaFreeAsync_ptsz \
	cudaMemPoolCreate cudaMemPoolTrimTo cudaMemPoolDestroy cudaMallocFromPoolAsync \
	cudaMallocFromPoolAsync_ptsz
# 2 MiB + 4 MiB + 1000 B live at once in the async family.
expect_device 0 6292456
expect_memory pools 0
grep -qE 'EVENT .* cudaMallocAsync .* size 1000 .*stream 0x2' dump.txt ||
	fail "the cudaStreamPerThread allocation lacks its stream"
grep -qE 'EVENT .* cudaMallocFromPoolAsync_ptsz .* pool 0x' dump.txt ||
	fail "cudaMallocFromPoolAsync_ptsz lacks its pool"

next_run
run_both driver-basic async pool
expect_calls \
	cuMemAllocAsync=1/0/2097152 cuMemAllocAsync_ptsz=1/0/4194304 \
	cuMemFreeAsync=2/0/- cuMemFreeAsync_ptsz=2/0/- \
	cuMemPoolCreate=1/0/- cuMemPoolTrimTo=1/0/- cuMemPoolDestroy=1/0/- \
	cuMemAllocFromPoolAsync=1/0/1048576 cuMemAllocFromPoolAsync_ptsz=1/0/3145728
expect_call_names cuMemAllocAsync cuMemAllocAsync_ptsz cuMemFreeAsync cuMemFreeAsync_ptsz \
	cuMemPoolCreate cuMemPoolTrimTo cuMemPoolDestroy cuMemAllocFromPoolAsync \
	cuMemAllocFromPoolAsync_ptsz
expect_device 0 6291456
echo ok
