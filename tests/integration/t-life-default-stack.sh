# A program that lowers the default thread stack (pthread_setattr_default_np
# to 16 KiB, or ulimit -s 56) gave that stack to our threads too; naming
# frames at exit then overflowed it inside libdw: SIGSEGV, exit 139, the
# program's buffered stdout lost (5 in 5 at 32-56 KiB, issue 29). Now
# every thread we make has a stack of our choosing, and nothing is named
# at exit. With GPUMEMTRACE_SYMBOLIZE=1 the scanning thread names frames
# while the program runs: the program waits (on stdin) until the trace
# holds SYMBOL records, so the naming surely ran on our stack. Each run:
# exit 0, its buffered line on stdout, a complete trace.
. "$TESTS_DIR/integration/lib.sh"
run() { # kib symbolize [ulimit-s]
	rm -f gpumemtrace.* out.txt in.fifo
	mkfifo in.fifo
	(
		[ -z "${3:-}" ] || ulimit -s "$3"
		GPUMEMTRACE_SYMBOLIZE=$2 traced "$PROG_DIR/harsh" default-stack "$1" <in.fifo >out.txt
	) &
	local p=$! n=0 rc=0
	exec 7>in.fifo
	if [ "$2" = 1 ]; then # until the naming has written names, 30 s at most
		until [ -n "$(ls gpumemtrace.*.gmt 2>/dev/null)" ] &&
			"$GMT_CLI" dump gpumemtrace.*.gmt 2>/dev/null | grep -q 'SYMBOL .* function "deep"'; do
			sleep 0.1
			n=$((n + 1))
			[ $n -lt 300 ] || break
		done
	fi
	echo go >&7
	exec 7>&-
	wait $p || rc=$?
	local what="stack ${1} KiB, SYMBOLIZE=$2${3:+, ulimit -s $3}"
	expect_eq "$what: exit code" "$rc" 0
	grep -qx "buffered output survives" out.txt || fail "$what: stdout lost"
	t=$(the_trace)
	"$GMT_CLI" summary --json "$t" >s.json
	expect_eq "$what: complete" "$(json s.json 'd["complete"]')" True
	if [ "$2" = 1 ]; then
		"$GMT_CLI" dump "$t" | grep -q 'SYMBOL .* function "deep"' ||
			fail "$what: the process named no frame"
	fi
	"$GMT_CLI" leaks "$t" >leaks.txt
	grep -q "deep (tests/progs/harsh.c:" leaks.txt || "$GMT_CLI" top "$t" | grep -q "deep (tests/progs/harsh.c:" ||
		fail "$what: frames not named by the reports"
}
run 16 0
run 16 1
run 0 0 56
run 0 1 56
echo ok
