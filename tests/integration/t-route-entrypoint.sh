# Route: driver functions fetched with cudaGetDriverEntryPoint[ByVersion]
# and their _ptsz forms, as PyTorch's expandable segments and NCCL do, then
# called. The program checks every answer equals dlsym of the exported name
# (cuMemAllocAsync with per-thread flags -> cuMemAllocAsync_ptsz).
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both entrypoint-route
expect_calls \
	cuMemAddressReserve=1/0/8388608 cuMemAddressFree=1/0/- \
	cuMemCreate=2/0/4194304 cuMemMap=2/0/- cuMemUnmap=1/0/- cuMemRelease=2/0/- \
	cuMemAllocAsync_ptsz=1/0/1048576 cuMemFreeAsync_ptsz=1/0/-
expect_call_names cuMemAddressReserve cuMemAddressFree cuMemCreate cuMemMap cuMemUnmap \
	cuMemRelease cuMemAllocAsync_ptsz cuMemFreeAsync_ptsz
expect_device 0 4194304
expect_memory reserved_va 8388608
echo ok
