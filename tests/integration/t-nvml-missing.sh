# Without NVML (no libnvidia-ml.so.1, or nvmlInit failing): exactly one
# NOTE that names NVML, no SAMPLE, context events without NVML figures, and
# the program's output and exit status unchanged.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/nvml-lib.sh"
export ACCOUNTING_PAUSE_MS=50 GPUMEMTRACE_SAMPLE_MS=10
untraced "$PROG_DIR/accounting" >want.txt 2>&1
echo "exit $?" >>want.txt

check_no_nvml() { # what
	expect_eq "$1: NVML notes" "$(dumped | grep ' NOTE ' | grep -c 'NVML' || true)" 1
	expect_eq "$1: samples" "$(dumped | grep -c ' SAMPLE ' || true)" 0
	expect_eq "$1: retain size" "$(event_field cuDevicePrimaryCtxRetain 1 size)" 0
	dumped | grep ' cuDevicePrimaryCtxRetain ' | grep -q ' aux ' &&
		fail "$1: a context event has NVML figures without NVML"
	return 0
}

# 1. The library is not there: the simulated CUDA alone in a directory.
mkdir lonely
cp -P "$SIM_DIR"/libcuda.so* "$SIM_DIR"/libcudart.so* lonely/
LD_PRELOAD=$GMT_LIB LD_LIBRARY_PATH=$PWD/lonely "$PROG_DIR/accounting" >got.txt 2>&1
echo "exit $?" >>got.txt
diff want.txt got.txt || fail "output changed without NVML"
check_no_nvml missing
dumped | grep ' NOTE ' | grep -q 'libnvidia-ml.so.1' || fail "the note does not say why"

# 2. NVML is there but nvmlInit fails.
rm -f gpumemtrace.* dump.txt
SIMCUDA_NVML=fail traced "$PROG_DIR/accounting" >got.txt 2>&1
echo "exit $?" >>got.txt
diff want.txt got.txt || fail "output changed with NVML failing"
check_no_nvml fail
dumped | grep ' NOTE ' | grep -q 'Driver Not Loaded' || fail "the note does not say why"

# 3. NVML lists this process under another pid (a container): samples say
# the process usage is unknown, contexts fall back on the device's usage.
rm -f gpumemtrace.* dump.txt
SIMCUDA_NVML=otherpid SIMCUDA_CTX_BYTES=100M traced "$PROG_DIR/accounting" >/dev/null
expect_eq "pid notes" "$(dumped | grep ' NOTE ' | grep -c 'pid namespace' || true)" 1
expect_eq "retain size (device)" "$(event_field cuDevicePrimaryCtxRetain 1 size)" $((100 * MiB))
expect_eq "samples with a process figure after the note" \
	"$(samples oom | grep -c ' process [0-9]' || true)" 0
expect_eq "unknown process figures" "$(samples oom | grep -c ' process unknown ' || true)" 1
echo ok
