# API: managed memory (cudaMallocManaged, cuMemAllocManaged): real host
# pages the program writes to; counted as managed, never as device bytes;
# freed by cudaFree / cuMemFree_v2.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic managed
expect_calls cudaMallocManaged=2/0/14096 cudaFree=2/0/-
expect_call_names cudaMallocManaged cudaFree
expect_memory managed 14096
expect_device 0 0
grep -qE 'EVENT .* cudaMallocManaged .* size 4096 .*flags 0x2' dump.txt ||
	fail "the cudaMemAttachHost allocation lacks its flags"

next_run
run_both driver-basic managed
expect_calls cuMemAllocManaged=1/0/10000 cuMemFree_v2=1/0/-
expect_call_names cuMemAllocManaged cuMemFree_v2
expect_memory managed 10000
expect_device 0 0
echo ok
