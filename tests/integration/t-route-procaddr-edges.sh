# cuGetProcAddress at the edges (tests/progs/procaddr-edges.c): 12 names
# (versioned ones, _ptsz ones, "cuDoesNotExist", "") x 13 CUDA versions
# (0 to 99000, older and newer than any row of the driver's table) x flags
# 0, 1 (legacy stream), 2 (per-thread), 3 and 4 (invalid), through the
# five-argument form with and without a status and the four-argument form,
# plus NULL symbol and NULL pfn: the program prints the result, the status
# and which exported variant the pointer is (untouched, NULL), and the
# traced run must print exactly the same. Then calls through pointers from
# old and new versions show each wrapper forwards to the variant the driver
# chose.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both procaddr-edges
lines=$(grep -cE '^v[12] ' untraced.out)
expect_eq "lookups compared" "$lines" 2344
expect_calls cuMemAlloc_v2=3/0/6291456 cuMemFree_v2=3/0/- \
	cuMemAllocAsync=1/0/1048576 cuMemFreeAsync=1/0/- \
	cuMemAllocAsync_ptsz=1/0/2097152 cuMemFreeAsync_ptsz=1/0/-
expect_call_names cuMemAlloc_v2 cuMemFree_v2 cuMemAllocAsync cuMemFreeAsync \
	cuMemAllocAsync_ptsz cuMemFreeAsync_ptsz
expect_device 0 6291456
echo ok
