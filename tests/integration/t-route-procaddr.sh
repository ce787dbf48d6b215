# Route: cuGetProcAddress, called directly (5-argument cuGetProcAddress_v2
# and the 4-argument CUDA 11 form, both found with dlsym). Lookups by base
# name and version, flags 0 and 2 (_ptsz), version 3010 (the legacy 32-bit
# cuMemAlloc, which must work and stay unrecorded), misses (NOT_FOUND and the
# same status as untraced), and the runtime's self-lookup of
# "cuGetProcAddress" at 11030 and 12000 followed by lookups through the
# returned pointers. The program itself checks every answer equals dlsym of
# the exported name it stands for.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both procaddr-route
expect_calls \
	cuMemAlloc_v2=4/0/8912896 cuMemFree_v2=4/0/- \
	cuMemAllocAsync=1/0/1048576 cuMemFreeAsync=1/0/- \
	cuMemAllocAsync_ptsz=1/0/2097152 cuMemFreeAsync_ptsz=1/0/-
expect_call_names cuMemAlloc_v2 cuMemFree_v2 cuMemAllocAsync cuMemFreeAsync \
	cuMemAllocAsync_ptsz cuMemFreeAsync_ptsz
expect_eq "events of 65536 bytes (the legacy allocation)" \
	"$(grep -cE 'EVENT .* size 65536 ' dump.txt || true)" 0
expect_device 0 4194304
echo ok
