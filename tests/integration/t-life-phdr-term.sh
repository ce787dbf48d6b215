# A SIGTERM handler calls exit(3) or _exit(3) while the main thread is
# inside a dl_iterate_phdr callback, the loader's lock held, as an unwinder
# or a profiler would be (issue 29). Before, the flush thread and the
# sampler waited for that lock at exit (scanning modules, naming frames):
# 10-12 s instead of 0.00 s, and the trace incomplete (9 in 10 with exit,
# 5 in 5 with _exit). Now exit takes no loader lock: it writes records and
# the trailer, the end's module scan is the scanning thread's, left after
# 20 ms asleep, with a NOTE. Each run must exit 3 as untraced and leave a
# complete trace; nothing here measures time (a watchdog only turns a hang
# into a failure, 30 s after the signal).
. "$TESTS_DIR/integration/lib.sh"
one() { # how traced|untraced
	rm -f gpumemtrace.* out.txt
	if [ "$2" = traced ]; then
		env "LD_PRELOAD=$preload" "LD_LIBRARY_PATH=$SIM_DIR:$PROG_DIR" \
			"$PROG_DIR/harsh" phdr-term "$1" >out.txt &
	else
		env "LD_LIBRARY_PATH=$SIM_DIR:$PROG_DIR" "$PROG_DIR/harsh" phdr-term "$1" >out.txt &
	fi
	local p=$! n=0 rc=0
	until grep -q inside out.txt 2>/dev/null; do
		sleep 0.05
		n=$((n + 1))
		[ $n -lt 600 ] || { kill -KILL $p; fail "$1 $2: never inside dl_iterate_phdr"; }
	done
	kill -TERM $p
	(sleep 30 && kill -KILL $p 2>/dev/null) &
	local dog=$!
	wait $p || rc=$?
	kill $dog 2>/dev/null || true
	expect_eq "$1 $2: exit code (137: hung, killed)" "$rc" 3
}
for how in exit _exit; do
	# ASan's own exit path takes its allocator's locks from the handler
	# (t-life-sigterm-exit): only _exit there.
	[[ $how == exit && ${SANITIZE:-} == *address* ]] && continue
	one $how untraced
	for round in 1 2 3; do
		one $how traced
		t=$(the_trace)
		"$GMT_CLI" summary --json "$t" >s.json
		expect_eq "$how round $round: complete" "$(json s.json 'd["complete"]')" True
		expect_eq "$how round $round: events" "$(json s.json 'd["events"]')" 3 # + the context retain
	done
done
echo ok
