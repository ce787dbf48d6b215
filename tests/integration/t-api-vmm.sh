# API: virtual memory management. cuMemCreate handles on the device are
# device bytes, host-located ones (vmm_host) are not; physical memory stays
# held until both its last cuMemRelease and its last cuMemUnmap (the program
# releases a 4 MiB handle while mapped, then creates 2 MiB: peak 6 MiB);
# cuMemRetainAllocationHandle adds a reference to the same handle;
# reservations are reserved_va; an imported handle is another's memory.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both driver-basic vmm
expect_calls cuMemCreate=4/0/10485760 cuMemRelease=6/0/- cuMemMap=2/0/- cuMemUnmap=2/0/- \
	cuMemAddressReserve=1/0/8388608 cuMemAddressFree=1/0/- \
	cuMemRetainAllocationHandle=1/0/- cuMemImportFromShareableHandle=1/0/-
expect_call_names cuMemCreate cuMemRelease cuMemMap cuMemUnmap cuMemAddressReserve \
	cuMemAddressFree cuMemRetainAllocationHandle cuMemImportFromShareableHandle
expect_device 0 6291456
expect_memory device 6291456
expect_memory vmm_host 2097152
expect_memory reserved_va 8388608
expect_json "unmatched frees" 'd["unmatched_frees"]' 0
echo ok
