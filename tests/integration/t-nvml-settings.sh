# GPUMEMTRACE_SAMPLE_MS: 0 turns periodic samples off (the others stay); a
# bad value gets one warning and the default. A program that never calls
# CUDA leaves no trace, starts no thread and never loads NVML.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/nvml-lib.sh"
export ACCOUNTING_PAUSE_MS=300 GPUMEMTRACE_FLUSH_MS=20

GPUMEMTRACE_SAMPLE_MS=0 traced "$PROG_DIR/accounting" >/dev/null || fail "run failed"
expect_eq "periodic samples with 0" "$(samples periodic | wc -l)" 0
for why in start peak oom end; do
	[ -n "$(samples $why)" ] || fail "SAMPLE_MS=0 lost the '$why' sample"
done

rm -f gpumemtrace.* dump.txt
GPUMEMTRACE_SAMPLE_MS=often traced "$PROG_DIR/accounting" >/dev/null 2>err.txt ||
	fail "run failed"
expect_eq "warnings" "$(grep -c '^gpumemtrace: ignoring' err.txt)" 1
grep -q "GPUMEMTRACE_SAMPLE_MS='often'" err.txt || fail "$(cat err.txt)"
[ -n "$(samples periodic)" ] || fail "the default period took no samples"

rm -f gpumemtrace.* dump.txt
out=$(traced python3 -c "import os; print(len(os.listdir('/proc/self/task')),
	'libnvidia-ml' in open('/proc/self/maps').read())")
expect_eq "threads, NVML loaded" "$out" "1 False"
[ -z "$(ls gpumemtrace.* 2>/dev/null)" ] || fail "files left: $(ls gpumemtrace.*)"
echo ok
