# The exit's wake-up is never lost (issue 30.2): an exit, _exit or return
# whose final-flush request comes while the flush thread is inside a cycle
# (its check of the request already made) must not leave the flush thread
# asleep with the request pending. exitwake forces that order (its write
# holds the flush thread's cycle until the request came) and says so
# ("ordered"); a sleep on the pending request prints "LOST WAKE-UP". No
# time is measured: the order is forced, the lost wake-up seen directly.
# Before the fix: 1 s stalls by default, 10 s and no trailer with
# GPUMEMTRACE_SAMPLE_MS=0.
. "$TESTS_DIR/integration/lib.sh"
for sample in 100 0; do
	for mode in exit _exit return; do
		for round in 1 2 3; do
			rm -f gpumemtrace.*.gmt
			set +e
			GPUMEMTRACE_SAMPLE_MS=$sample traced "$PROG_DIR/exitwake" "$mode" 2>err.txt
			rc=$?
			set -e
			what="$mode, SAMPLE_MS=$sample, round $round"
			expect_eq "$what: exit code" "$rc" 0
			grep -q "exitwake: ordered" err.txt || { cat err.txt >&2; fail "$what: the order was not forced"; }
			! grep -q "LOST WAKE-UP" err.txt || fail "$what: $(grep LOST err.txt)"
			"$GMT_CLI" summary --json "$(the_trace)" >s.json
			expect_eq "$what: complete" "$(json s.json 'd["complete"]')" True
			expect_eq "$what: events" "$(json s.json 'd["events"]')" 4 # 3 + the context retain
		done
	done
done
# And exits at whatever moment they come, without forcing: each trace ends
# with its trailer.
for sample in 100 0; do
	for round in 1 2 3 4 5; do
		rm -f gpumemtrace.*.gmt
		GPUMEMTRACE_SAMPLE_MS=$sample traced "$PROG_DIR/life" exit 4 >/dev/null
		"$GMT_CLI" summary --json "$(the_trace)" >s.json
		expect_eq "plain exit, SAMPLE_MS=$sample, round $round: complete" \
			"$(json s.json 'd["complete"]')" True
	done
done
echo ok
