# A child made by _Fork() or a raw clone(SIGCHLD) runs no fork handler: it
# had no flush thread, so once its ring filled every event waited
# GPUMEMTRACE_FULL_WAIT_MS (6,000 pairs: minutes); then it went inert,
# its 12,000 events neither traced nor counted. Now its first event sees
# the new process (a MADV_WIPEONFORK page reads 0) and the child traces
# into a file of its own: it finishes as fast as untraced, its output is
# unchanged, the parent's trace holds exactly the parent's events and the
# child's every one of its own. Default settings.
. "$TESTS_DIR/integration/lib.sh"
for how in _Fork clone; do
	rm -f gpumemtrace.* out.txt
	start=$(date +%s)
	rc=0
	timeout 20 env "LD_PRELOAD=$preload" "LD_LIBRARY_PATH=$SIM_DIR:$PROG_DIR" \
		"$PROG_DIR/forkraw" $how 6000 >out.txt || rc=$?
	took=$(($(date +%s) - start))
	if [ $rc -eq 77 ]; then
		echo "$how: not available here"
		continue
	fi
	[ $rc -eq 0 ] || fail "$how: exit $rc after ${took}s (124: stalled)"
	[ $took -lt 5 ] || fail "$how: took ${took}s, untraced takes ~0s"
	grep -qx "child exited 0" out.txt || fail "$how: output changed: $(cat out.txt)"
	traces=(gpumemtrace.*.gmt)
	expect_eq "$how traces" "${#traces[@]}" 2
	parent=$(sed -n 's/^parent \([0-9]*\)$/\1/p' out.txt)
	for t in "${traces[@]}"; do
		"$GMT_CLI" summary --json "$t" >s.json
		expect_eq "$how $t complete" "$(json s.json 'd["complete"]')" True
		expect_eq "$how $t lost" "$(json s.json 'd["lost_events"]')" 0
		if [ "$t" == "gpumemtrace.$parent.gmt" ]; then
			# the context retain + 2 pairs, none of the child's events
			expect_eq "$how parent events" "$(json s.json 'd["events"]')" 5
		else
			expect_eq "$how child events" "$(json s.json 'd["events"]')" 12000
		fi
	done
	[ -f "gpumemtrace.$parent.gmt" ] || fail "$how: no trace of the parent ($parent)"
done
echo ok
