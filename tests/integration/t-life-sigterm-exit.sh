# A SIGTERM handler that calls exit(3) while main loops on malloc/free:
# the signal often lands inside malloc, its arena lock held. Before, our
# destructor symbolized on that thread (calloc) and hung about 6 times in
# 10. Now the exiting thread only asks the flush thread and waits, bounded:
# 50 tries (SIGTERM_EXIT_RUNS), 10 at a time, each must exit 3 within
# 8 s with a complete trace whose allocation is named.
. "$TESTS_DIR/integration/lib.sh"
# ASan's own exit path takes its allocator's locks: the program hangs there
# untraced too (6 of 30 with libasan alone, 2026-11-26).
[[ ${SANITIZE:-} != *address* ]] || skip "exit() from a signal handler hangs under ASan itself"

runs=${SIGTERM_EXIT_RUNS:-50}
one() { # dir
	mkdir -p "$1" && cd "$1"
	env "LD_PRELOAD=$preload" "LD_LIBRARY_PATH=$SIM_DIR:$PROG_DIR" \
		"$PROG_DIR/harsh" sigterm >out.txt &
	local p=$! n=0 rc=0
	until grep -q ready out.txt 2>/dev/null; do # in its loop, the trace under way
		sleep 0.05
		n=$((n + 1))
		[ $n -lt 400 ] || { kill -KILL $p; echo never-ready >rc; return; }
	done
	sleep "0.$((RANDOM % 3 + 1))"
	kill -TERM $p
	(sleep 8 && kill -KILL $p 2>/dev/null) &
	local dog=$!
	wait $p || rc=$?
	kill $dog 2>/dev/null || true
	echo $rc >rc
}
for i in $(seq "$runs"); do
	one "run$i" &
	[ $((i % 10)) -ne 0 ] || wait
done
wait
hangs=0
for i in $(seq "$runs"); do
	rc=$(cat "run$i/rc")
	[ "$rc" != 137 ] || hangs=$((hangs + 1))
done
[ $hangs -eq 0 ] || fail "$hangs of $runs runs hung (killed 8 s after the SIGTERM)"
for i in $(seq "$runs"); do
	expect_eq "run $i exit code" "$(cat "run$i/rc")" 3
	(
		cd "run$i"
		t=$(the_trace)
		"$GMT_CLI" summary --json "$t" >s.json 2>summary.err || fail "run $i: summary failed"
		expect_eq "run $i complete" "$(json s.json 'd["complete"]')" True
		# the context retain and the one cudaMalloc
		expect_eq "run $i events" "$(json s.json 'd["events"]')" 2
		"$GMT_CLI" leaks "$t" >leaks.txt
		grep -q "main (tests/progs/harsh.c:" leaks.txt || fail "run $i: the allocation is not named: $(cat leaks.txt)"
		"$GMT_CLI" dump "$t" | grep -c " SYMBOL " >>../named-in-process || true
	)
done
echo "runs whose trace names its frames itself: $(grep -vcx 0 named-in-process) of $runs"
echo ok
