# Route: the static runtime embedded in a shared library, as in cuBLAS,
# cuDNN and NCCL. libfakeblas.so exports only fakeblas_*, needs no
# libcudart and has no undefined cuda* symbol, so its cudaMalloc cannot be
# interposed: the tracer sees the driver call its runtime reaches through
# dlsym -> cuGetProcAddress, recorded as cuMemAlloc_v2, with libfakeblas.so's
# frame on the stack. The reports count it as the cudaMalloc that the
# embedded runtime's frame names (analysis/sites.c, site_api); --raw-sites
# shows the recorded driver names.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

lib=$PROG_DIR/libfakeblas.so
exports=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
[ -z "$(grep -v '^fakeblas_' <<<"$exports")" ] ||
	fail "libfakeblas.so exports more than fakeblas_*: $(grep -v '^fakeblas_' <<<"$exports" | head -3)"
nm -D --undefined-only "$lib" | grep -qE ' (cuda|cu[A-Z])' &&
	fail "libfakeblas.so has undefined CUDA symbols"
readelf -d "$lib" | grep -q 'NEEDED.*libcudart' && fail "libfakeblas.so needs libcudart"

run_both static-runtime
expect_calls cudaMalloc=1/0/4194304 cudaFree=1/0/-
expect_call_names cudaFree cudaMalloc
expect_json "library" 'd["devices"][0]["by_library"][0]["library"]' libfakeblas.so
"$GMT_CLI" summary --json --raw-sites "$TRACE" >s.json || fail "summary --raw-sites"
expect_calls cuMemAlloc_v2=1/0/4194304 cuMemFree_v2=1/0/-
expect_device 0 4194304
stack_of cuMemAlloc_v2 >stack.txt
grep -q '^libfakeblas.so ' stack.txt || { cat stack.txt; fail "no libfakeblas.so frame"; }
grep -q '^static-runtime main$' stack.txt || { cat stack.txt; fail "no frame of main"; }
echo ok
