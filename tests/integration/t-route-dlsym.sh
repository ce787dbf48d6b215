# Route: dlopen("libcuda.so.1") + dlsym/dlvsym, as XLA and Numba find the
# driver. Exact ELF names (cuMemAlloc_v2, cuMemAllocAsync_ptsz), Numba's
# "_v2 then plain" probing, dlvsym on libcudart, and the legacy 32-bit
# "cuMemAlloc"/"cuMemFree", which must keep working (the program checks a
# canary next to its 32-bit pointer) and must not be recorded at all.
# libnextcheck.so's dlsym(RTLD_NEXT) must still find libnextcheck2.so.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both dlsym-route
grep -q '^nc_next_value() = 2$' traced.out || fail "RTLD_NEXT resolved from the wrong object"
expect_calls \
	cuMemAlloc_v2=2/0/4194304 cuMemFree_v2=3/0/- \
	cuMemAllocAsync_ptsz=1/0/2097152 cuMemFreeAsync_ptsz=1/0/- \
	cuMemHostAlloc=1/0/4096 cuMemFreeHost=1/0/- cuMemAllocManaged=1/0/8192 \
	cudaMalloc=1/0/5242880 cudaFree=1/0/-
# No "cuMemAlloc"/"cuMemFree" (the legacy calls), no cuMemAlloc_v2 for cudaMalloc.
expect_call_names cuMemAlloc_v2 cuMemFree_v2 cuMemAllocAsync_ptsz cuMemFreeAsync_ptsz \
	cuMemHostAlloc cuMemFreeHost cuMemAllocManaged cudaMalloc cudaFree
expect_eq "events of 65536 bytes (the legacy allocation)" \
	"$(grep -cE 'EVENT .* size 65536 ' dump.txt || true)" 0
expect_device 0 5242880
echo ok
