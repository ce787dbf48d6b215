# API: linear device memory: cudaMalloc, cudaMallocPitch, cudaMalloc3D and
# the driver's cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemFree_v2. Bytes are
# what the caller holds (pitch x rows for pitched memory); the device peak
# is the largest simultaneous sum.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic malloc pitch 3d
grep -q '^pitch = 1024$' traced.out || fail "pitch of a 1000-byte row is not 1024"
expect_calls cudaMalloc=3/0/6294456 cudaMallocPitch=1/0/102400 cudaMalloc3D=1/0/307200 \
	cudaFree=5/0/-
expect_call_names cudaMalloc cudaMallocPitch cudaMalloc3D cudaFree
expect_device 0 6294456
grep -qE 'EVENT .* cudaMallocPitch .* size 102400 .*pitch 1024 width 1000' dump.txt ||
	fail "cudaMallocPitch event lacks size 102400, pitch 1024, width 1000"
grep -qE 'EVENT .* cudaMalloc3D .* size 307200 .*pitch 512 width 300' dump.txt ||
	fail "cudaMalloc3D event lacks size 307200, pitch 512, width 300"
for m in managed pinned_host registered_host arrays; do expect_memory $m 0; done

next_run
run_both driver-basic malloc
expect_calls cuMemAlloc_v2=2/0/1051576 cuMemAllocPitch_v2=1/0/102400 cuMemFree_v2=3/0/-
expect_call_names cuMemAlloc_v2 cuMemAllocPitch_v2 cuMemFree_v2
expect_device 0 1153976
expect_json "device total_bytes" 'd["devices"][0]["total_bytes"]' 17179869184
expect_json "device name" 'd["devices"][0]["name"]' "Simulated GPU 0"
echo ok
