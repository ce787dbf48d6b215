# Route: a program linked against libcudart.so.13 (versioned symbols, like
# NVIDIA's). Every runtime family once: each symbol is recorded under its
# runtime name with exact counts, failures and bytes, and no driver call the
# runtime makes underneath is recorded as well.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic
expect_calls \
	cudaMalloc=4/0/8391608 cudaFree=9/1/- \
	cudaMallocPitch=1/0/102400 cudaMalloc3D=1/0/307200 \
	cudaMallocManaged=2/0/14096 \
	cudaMallocHost=1/0/8192 cudaHostAlloc=1/0/12288 cudaFreeHost=3/1/- \
	cudaHostRegister=3/1/73728 cudaHostUnregister=3/1/- \
	cudaMallocAsync=2/0/2098152 cudaMallocAsync_ptsz=1/0/4194304 \
	cudaFreeAsync=3/0/- cudaFreeAsync_ptsz=2/0/- \
	cudaMemPoolCreate=1/0/- cudaMemPoolTrimTo=1/0/- cudaMemPoolDestroy=1/0/- \
	cudaMallocFromPoolAsync=1/0/1048576 cudaMallocFromPoolAsync_ptsz=1/0/3145728 \
	cudaMallocArray=1/0/131072 cudaMalloc3DArray=1/0/65536 cudaFreeArray=2/0/- \
	cudaIpcOpenMemHandle=1/0/- cudaIpcCloseMemHandle=1/0/-
expect_call_names cudaMalloc cudaFree cudaMallocPitch cudaMalloc3D cudaMallocManaged \
	cudaMallocHost cudaHostAlloc cudaFreeHost cudaHostRegister cudaHostUnregister \
	cudaMallocAsync cudaMallocAsync_ptsz cudaFreeAsync cudaFreeAsync_ptsz \
	cudaMemPoolCreate cudaMemPoolTrimTo cudaMemPoolDestroy cudaMallocFromPoolAsync \
	cudaMallocFromPoolAsync_ptsz cudaMallocArray cudaMalloc3DArray cudaFreeArray \
	cudaIpcOpenMemHandle cudaIpcCloseMemHandle
# The largest moment: the malloc family's 1 MiB + 3000 B + 5 MiB.
expect_device 0 6294456
expect_memory device 6294456
# The allocation is attributed to the program's code, not the runtime's.
stack_of cudaMalloc >stack.txt
head -n 1 stack.txt | grep -q '^runtime-basic fam_malloc$' ||
	{ cat stack.txt; fail "cudaMalloc's innermost frame is not fam_malloc"; }
echo ok
