# fork while the sampling thread is inside a slow NVML (which holds a lock of
# its own): the fork waits for the sample, so the child's own sampler and
# NVML calls find that lock free. Without that wait the child's sampler
# hangs in NVML and its trace has no samples. (A child that exits before
# its sampler runs has no START sample, only END: any sample will do.)
. "$TESTS_DIR/integration/lib.sh"
export GPUMEMTRACE_SAMPLE_MS=1 SIMCUDA_NVML_CALL_US=20000
for round in 1 2 3; do
	rm -f gpumemtrace.*
	traced timeout 60 "$PROG_DIR/life" fork-late 4 >out.txt
	grep -q "child exited 0" out.txt || fail "round $round: program output changed: $(cat out.txt)"
	traces=(gpumemtrace.*.gmt)
	[ ${#traces[@]} -eq 2 ] || fail "round $round: expected 2 traces, got: ${traces[*]}"
	for t in "${traces[@]}"; do
		"$GMT_CLI" dump "$t" >"$t.txt"
		grep -q "SAMPLE .* reason \(start\|end\)" "$t.txt" ||
			fail "round $round: $t has no sample (program: $(tr '\n' ' ' <out.txt); notes and samples: $(grep -E 'NOTE|SAMPLE|END' "$t.txt" | head -8 | tr '\n' ' '))"
		! grep -q "did not stop in time" "$t.txt" || fail "round $round: $t: sampler hung"
		"$GMT_CLI" summary --json "$t" >"$t.json"
		expect_eq "$t complete" "$(json "$t.json" 'd["complete"]')" True
	done
done
echo ok
