# NVML samples (simulated libnvidia-ml.so.1): every reason appears, and the
# readings equal the known answers: process usage = allocations + contexts
# + memory taken outside the traced calls; device used = that + the other
# processes'.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/nvml-lib.sh"
export SIMCUDA_CAPACITY=4G SIMCUDA_CTX_BYTES=100M SIMCUDA_UNTRACED_BYTES=10M \
	SIMCUDA_NVML_OTHER_BYTES=1G GPUMEMTRACE_FLUSH_MS=20 GPUMEMTRACE_SAMPLE_MS=50
traced "$PROG_DIR/accounting" >out.txt || fail "accounting failed: $(cat out.txt)"

for why in start periodic peak oom end; do
	[ -n "$(samples $why)" ] || fail "no '$why' sample: $(dumped | grep SAMPLE)"
done
expect_eq "start samples" "$(samples start | wc -l)" 1
expect_eq "end samples" "$(samples end | wc -l)" 1
# The END sample is the trace's last: after the last event.
last=$(dumped | grep -E ' (SAMPLE|EVENT) ' | tail -n 1)
[[ $last == *"reason end"* ]] || fail "last reading is not END: $last"

# At the peak and at the OOM: the primary context, 3 x 64 MiB, 10 MiB untraced.
want=$(((100 + 192 + 10) * MiB))
# Under load the sampler may also read a peak on the way up (after the
# first 64 MiB): the highest peak reading is the peak's.
peak_max=$(samples peak | sed -n "s/.* process \([0-9]*\) .*/\1/p" | sort -n | tail -n 1)
expect_eq "process usage at the peak" "$peak_max" $want
expect_eq "process usage at the OOM" "$(sample_field oom process)" $want
expect_eq "device used at the OOM" "$(sample_field oom used)" $((want + 1024 * MiB))
expect_eq "total" "$(sample_field oom total)" $((4096 * MiB))
# At the end nothing is held: the process is no longer listed.
expect_eq "process usage at the end" "$(sample_field end process)" 0
expect_eq "device used at the end" "$(sample_field end used)" $((1024 * MiB))

# The sample's UUID is the DEVICE record's: the CLI matches them.
dev_uuid=$(dumped | grep ' DEVICE 0 ' | sed -n 's/.* uuid \([-0-9a-f]*\) .*/\1/p' | tr -d -)
smp_uuid=$(samples oom | head -n 1 | sed -n 's/.* uuid \([0-9a-f]*\) .*/\1/p')
[ -n "$dev_uuid" ] || fail "no DEVICE uuid: $(dumped | grep DEVICE)"
expect_eq "sample uuid" "$smp_uuid" "$dev_uuid"

# Every process-info layout gives the same answer (strides 24, 24, 16 bytes).
for form in v2 v1; do
	rm -f gpumemtrace.* dump.txt
	SIMCUDA_NVML=$form traced "$PROG_DIR/accounting" >/dev/null || fail "$form run failed"
	expect_eq "process usage at the OOM ($form)" "$(sample_field oom process)" $want
done
echo ok
