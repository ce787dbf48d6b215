# Context events carry what the context cost the device, measured by NVML
# just before and after the call: size = SIMCUDA_CTX_BYTES, aux/aux2 = the
# process's usage before/after. Every route: linked, cuGetProcAddress (_v3,
# _v4), and the runtime's own retain inside the first cudaMalloc.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/nvml-lib.sh"
export SIMCUDA_CAPACITY=4G SIMCUDA_CTX_BYTES=100M ACCOUNTING_PAUSE_MS=0
ctx=$((100 * MiB)) held=$((192 * MiB))
traced "$PROG_DIR/accounting" >out.txt || fail "accounting failed: $(cat out.txt)"

expect_eq "retain size" "$(event_field cuDevicePrimaryCtxRetain 1 size)" $ctx
expect_eq "retain before" "$(event_field cuDevicePrimaryCtxRetain 1 aux)" 0
expect_eq "retain after" "$(event_field cuDevicePrimaryCtxRetain 1 aux2)" $ctx
for api in cuCtxCreate_v2 cuCtxCreate_v4 cuCtxCreate_v3; do
	expect_eq "$api size" "$(event_field $api 1 size)" $ctx
	expect_eq "$api before" "$(event_field $api 1 aux)" $((ctx + held))
	expect_eq "$api after" "$(event_field $api 1 aux2)" $((2 * ctx + held))
done
expect_eq "destroys" "$(dumped | grep -c ' cuCtxDestroy_v2 .* size '$ctx' .* ok$')" 3
expect_eq "release size" "$(event_field cuDevicePrimaryCtxRelease_v2 1 size)" $ctx
expect_eq "release after" "$(event_field cuDevicePrimaryCtxRelease_v2 1 aux2)" 0
# The second retain creates the context again; the reset destroys it.
expect_eq "second retain" "$(event_field cuDevicePrimaryCtxRetain 2 size)" $ctx
expect_eq "reset size" "$(event_field cuDevicePrimaryCtxReset_v2 1 size)" $ctx

# The runtime retains the primary context inside the first cudaMalloc: the
# event is recorded although it is nested, with its cost.
rm -f gpumemtrace.* dump.txt
traced "$PROG_DIR/runtime-basic" >/dev/null || fail "runtime-basic failed"
expect_eq "runtime's retain" "$(event_field cuDevicePrimaryCtxRetain 1 size)" $ctx
echo ok
