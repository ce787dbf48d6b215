# Route: a program linked against libcuda.so.1 directly. Every driver family
# once (with the failures of the preinit, oom and errors families): exact
# counts, failures and bytes per exported symbol.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both driver-basic
expect_calls \
	cuMemAlloc_v2=7/4/3148728 cuMemAllocPitch_v2=1/0/102400 cuMemFree_v2=6/1/- \
	cuMemAllocManaged=1/0/10000 \
	cuMemAllocHost_v2=1/0/8192 cuMemHostAlloc=1/0/12288 cuMemFreeHost=3/1/- \
	cuMemHostRegister_v2=1/0/65536 cuMemHostUnregister=1/0/- \
	cuMemAllocAsync=1/0/2097152 cuMemAllocAsync_ptsz=1/0/4194304 \
	cuMemFreeAsync=2/0/- cuMemFreeAsync_ptsz=2/0/- \
	cuMemAllocFromPoolAsync=1/0/1048576 cuMemAllocFromPoolAsync_ptsz=1/0/3145728 \
	cuMemPoolCreate=1/0/- cuMemPoolTrimTo=1/0/- cuMemPoolDestroy=1/0/- \
	cuMemCreate=5/1/10485760 cuMemRelease=6/0/- cuMemMap=2/0/- cuMemUnmap=2/0/- \
	cuMemAddressReserve=1/0/8388608 cuMemAddressFree=1/0/- \
	cuMemRetainAllocationHandle=1/0/- cuMemImportFromShareableHandle=1/0/- \
	cuArrayCreate_v2=1/0/131072 cuArray3DCreate_v2=1/0/65536 cuArrayDestroy=3/1/- \
	cuIpcOpenMemHandle_v2=1/0/- cuIpcCloseMemHandle=1/0/-
expect_call_names cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemFree_v2 cuMemAllocManaged \
	cuMemAllocHost_v2 cuMemHostAlloc cuMemFreeHost cuMemHostRegister_v2 \
	cuMemHostUnregister cuMemAllocAsync cuMemAllocAsync_ptsz cuMemFreeAsync \
	cuMemFreeAsync_ptsz cuMemAllocFromPoolAsync cuMemAllocFromPoolAsync_ptsz \
	cuMemPoolCreate cuMemPoolTrimTo cuMemPoolDestroy cuMemCreate cuMemRelease cuMemMap \
	cuMemUnmap cuMemAddressReserve cuMemAddressFree cuMemRetainAllocationHandle \
	cuMemImportFromShareableHandle cuArrayCreate_v2 cuArray3DCreate_v2 cuArrayDestroy \
	cuIpcOpenMemHandle_v2 cuIpcCloseMemHandle
# The largest moment: VMM's 4 MiB handle, released but still mapped, + 2 MiB.
expect_device 0 6291456
stack_of cuMemAlloc_v2 >stack.txt
head -n 1 stack.txt | grep -q '^driver-basic fam_preinit$' ||
	{ cat stack.txt; fail "cuMemAlloc_v2's innermost frame is not fam_preinit"; }
echo ok
