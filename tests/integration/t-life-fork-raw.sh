# A child made by _Fork() or a raw clone(SIGCHLD) runs no fork handler: it
# has no flush thread, so once its ring filled every event waited
# GPUMEMTRACE_FULL_WAIT_MS (6,000 pairs: minutes). It now goes inert: it
# finishes as fast as untraced, its output is unchanged, the parent's trace
# holds exactly the parent's events, and the child's 12,000 events are
# counted as lost there (the parent waits for the child before its
# trailer), with a NOTE that says where they came from. Default settings.
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
	t=$(the_trace)
	"$GMT_CLI" summary --json "$t" >s.json
	# the context retain + 2 pairs, none of the child's 12,000 events
	expect_eq "$how parent events" "$(json s.json 'd["events"]')" 5
	expect_eq "$how parent complete" "$(json s.json 'd["complete"]')" True
	expect_eq "$how parent pid" "$t" "gpumemtrace.$(json s.json 'd["process"]["pid"]').gmt"
	expect_eq "$how child's events lost" "$(json s.json 'd["lost_events"]')" 12000
	expect_eq "$how lost in trailer" "$(json s.json 'd["lost_in_trailer"]')" 12000
	expect_eq "$how note" "$(json s.json '[n for n in d["notes"] if "without fork handlers" in n][0][:15]')" \
		"12000 events of"
	"$GMT_CLI" summary "$t" | grep -q "lost events: 12000, all of child processes made without fork" ||
		fail "$how: summary does not say the lost events are the children's"
done

# A child made by fork() (traced, its handler ran) that raw-clones a
# grandchild: the grandchild's events are counted in the child's trace
# (its own counter), not twice, nor in the top parent's.
rm -f gpumemtrace.* out.txt
timeout 20 env "LD_PRELOAD=$preload" "LD_LIBRARY_PATH=$SIM_DIR:$PROG_DIR" \
	"$PROG_DIR/forkraw" fork+clone 3000 >out.txt || fail "fork+clone: exit $?"
expect_eq "fork+clone output" "$(cat out.txt)" "$(printf 'child exited 0\nchild exited 0')"
for t in gpumemtrace.*.gmt; do
	"$GMT_CLI" summary --json "$t" >s.json
	json s.json 'd["lost_events"]'
done | sort -n >lost.txt
expect_eq "fork+clone: lost per trace" "$(tr '\n' ' ' <lost.txt)" "0 6000 "
echo ok
