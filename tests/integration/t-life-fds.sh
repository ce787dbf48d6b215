# The trace's descriptor never meets the program's: it sits high and
# close-on-exec, never on 0-2 (stdout or stderr closed: the program's
# output fails as untraced, and never lands in the trace), and a descriptor
# the program closed or reused is never written: the trace is opened again
# by its path, and goes on (issue 29.3: a daemon that closes every
# descriptor and opens its own files at 0-2 left a trace of 0 events,
# and our line in its data file). Our own lines go only to the stderr the
# program started with: counted in the trace, never written elsewhere.
. "$TESTS_DIR/integration/lib.sh"
P=$PROG_DIR/fdclash
EV=20021 # 10 + 5 x 2,000 cudaMalloc/cudaFree pairs, and the context's retain

for s in stdout stderr; do
	rc=0
	if [ $s = stdout ]; then untraced "$P" $s >&- || rc=$?; else untraced "$P" $s 2>&- || rc=$?; fi
	expect_eq "$s closed, untraced: exit" $rc 3
	rc=0
	if [ $s = stdout ]; then traced "$P" $s >&- 2>err.txt || rc=$?; else traced "$P" $s 2>&- || rc=$?; fi
	expect_eq "$s closed, traced: exit" $rc 3
	t=$(the_trace)
	$GMT_CLI summary "$t" >s.txt 2>err.txt || fail "$s closed: summary: $(cat err.txt)"
	head -1 s.txt | grep -q "complete)" || fail "$s closed: $(head -1 s.txt)"
	! grep -aq "hello from the program" "$t" || fail "$s closed: the program's output is in the trace"
	rm -f "$t"
done

# daemon LOG: closes 3-1023 after its first call, opens LOG (fd 3), writes
# 5 lines between allocations. The log holds exactly those lines.
want=$'log line 0\nlog line 1\nlog line 2\nlog line 3\nlog line 4'
daemon() { # soft-limit
	rm -f app.log gpumemtrace.*.gmt
	local rc=0
	(ulimit -S -n "$1" && traced "$P" daemon app.log) 2>err.txt || rc=$?
	expect_eq "daemon (nofile $1): exit" $rc 0
	expect_eq "daemon (nofile $1): log" "$(cat app.log)" "$want"
}
# a limit with room above 1023: the trace's descriptor outlives the closing
if (ulimit -S -n 4096) 2>/dev/null; then
	daemon 4096
	[ ! -s err.txt ] || fail "daemon 4096: $(cat err.txt)"
	t=$(the_trace)
	$GMT_CLI summary "$t" 2>&1 | head -1 | grep -q "complete)" || fail "daemon 4096: not complete"
fi
# libunwind's own pipe (made at 3 and 4 by its first check of an address,
# then closed by the daemon): with its numbers reused by the log, libunwind
# read from it, closed it and made its pipe there (the log's lines lost,
# exit 2, 4 runs in 6 of a program without unwind tables). Now it is made
# high, like the trace's descriptor. (ASan's own pipe2 comes first.)
if [[ ${SANITIZE:-} != *address* ]] && (ulimit -S -n 4096) 2>/dev/null; then
	for i in 1 2 3 4 5; do
		rm -f app.log gpumemtrace.*.gmt
		rc=0
		(ulimit -S -n 4096 && traced "$PROG_DIR/fdclash-noeh" daemon app.log) 2>err.txt || rc=$?
		expect_eq "daemon, no unwind tables, run $i: exit" $rc 0
		expect_eq "daemon, no unwind tables, run $i: log" "$(cat app.log)" "$want"
	done
fi
# the common 1024: the daemon closes it too; the trace is reopened by path
daemon 1024
[ ! -s err.txt ] || fail "daemon 1024: $(cat err.txt)"
t=$(the_trace)
$GMT_CLI summary --json "$t" >s.json 2>err.txt || fail "daemon 1024: $(cat err.txt)"
expect_eq "daemon 1024: complete, events, lost" \
	"$(json s.json "d['complete'], d['events'], d['lost_events']")" "(True, $EV, 0)"

# reuse LOG: the program dup2()s its log onto the trace's own number: the
# log is the program's; the trace goes on at another number.
rm -f app.log gpumemtrace.*.gmt
traced "$P" reuse app.log 2>err.txt || fail "reuse: exit $?"
expect_eq "reuse: log" "$(cat app.log)" "$want"
[ ! -s err.txt ] || fail "reuse: $(cat err.txt)"
t=$(the_trace)
$GMT_CLI summary --json "$t" >s.json 2>err.txt || fail "reuse: $(cat err.txt)"
expect_eq "reuse: complete, events, lost" \
	"$(json s.json "d['complete'], d['events'], d['lost_events']")" "(True, $EV, 0)"
$GMT_CLI dump "$t" | grep -q 'NOTE .*reused the trace.s descriptor (1 times)' ||
	fail "reuse: no note of the reopening"

# closeall DIR: every descriptor closed (close_range), files opened at 0-2,
# lines written to 1 and 2 between allocations: each file holds exactly the
# program's lines, the trace every event.
rm -rf d gpumemtrace.*.gmt && mkdir d
rc=0
traced "$P" closeall d || rc=$?
expect_eq "closeall: exit" $rc 0
expect_eq "closeall: stdin file" "$(cat d/0)" ""
expect_eq "closeall: stdout file" "$(cat d/1)" "$(printf 'out line %d\n' 0 1 2 3 4)"
expect_eq "closeall: stderr file" "$(cat d/2)" "$(printf 'err line %d\n' 0 1 2 3 4)"
t=$(the_trace)
$GMT_CLI summary --json "$t" >s.json 2>err.txt || fail "closeall: $(cat err.txt)"
expect_eq "closeall: complete, events, lost" \
	"$(json s.json "d['complete'], d['events'], d['lost_events']")" "(True, $EV, 0)"
# ... and with the trace deleted meanwhile: the tracer's line about it
# ("was deleted under us") goes nowhere, never into the program's file 2.
rm -rf d gpumemtrace.*.gmt && mkdir d
traced "$P" closeall d unlink || fail "closeall unlink: exit $?"
expect_eq "closeall unlink: stderr file" "$(cat d/2)" "$(printf 'err line %d\n' 0 1 2 3 4)"

# stderr-swap LOG: stderr closed and LOG opened there before the first
# CUDA call; GPUMEMTRACE_TRACE_LIST names no file, which the tracer warns
# of as the trace is made: not in LOG, but counted in the trace.
rm -f app.log gpumemtrace.*.gmt
GPUMEMTRACE_TRACE_LIST=$PWD/no/such/list traced "$P" stderr-swap app.log || fail "stderr-swap: exit $?"
expect_eq "stderr-swap: log" "$(cat app.log)" "the program's line"
$GMT_CLI dump "$(the_trace)" | grep -q "NOTE .*1 line of the tracer not printed: descriptor 2 was no longer the stderr the program started with" ||
	fail "stderr-swap: no note: $($GMT_CLI dump "$(the_trace)" | grep NOTE)"

# crowd DIR 1024: every descriptor from 3 closed, then files opened until
# one sits at 1023: the program holds the numbers the trace and libunwind's
# pipe had (768 and up). Without unwind tables libunwind checks addresses
# through that pipe: it read, wrote and closed the program's files (exit 2,
# 3 runs in 3). Now it is told the addresses are bad (a NOTE says stacks
# may end early) and the files stay the program's; the trace is reopened
# on a free number, or, with none left, stops with one line.
if [[ ${SANITIZE:-} != *address* ]] && (ulimit -S -n 1024) 2>/dev/null; then
	for p in fdclash fdclash-noeh; do
		rm -rf d gpumemtrace.*.gmt && mkdir d
		rc=0
		(ulimit -S -n 1024 && traced "$PROG_DIR/$p" crowd "$PWD/d" 1024) 2>err.txt || rc=$?
		expect_eq "crowd ($p): exit" $rc 0
		[ "$(wc -l <err.txt)" -le 1 ] || fail "crowd ($p): $(cat err.txt)"
		$GMT_CLI dump "$(the_trace)" >/dev/null 2>err.txt || fail "crowd ($p): $(cat err.txt)"
	done
fi

# RLIMIT_NOFILE=4: 0-2 and one more. The trace needs that one (documented
# in docs/reliability.md): the program opens one file fewer, and runs on.
rm -f gpumemtrace.*.gmt
u=$(untraced "$P" nofile)
t=$(traced "$P" nofile)
expect_eq "nofile untraced" "$u" "opened 1"
expect_eq "nofile traced" "$t" "opened 0"

# The descriptor table is grown to hold the trace's number at load, before
# the program's first line (then one thread: cheap), never at the first
# event, when the program may have threads (the kernel then waits for an
# RCU grace period: 10-28 ms per process, issue 30.5). The kernel's table
# size (FDSize) seen by the program's first read, before any event.
for lim in 4096 512; do
	(ulimit -S -n $lim) 2>/dev/null || continue
	want=$((lim >= 2048 ? 1024 : lim - lim / 4))
	fds=$( (ulimit -S -n $lim && traced awk '/^FDSize/ { print $2 }' /proc/self/status))
	[ "${fds:-0}" -gt $want ] || fail "nofile $lim: the table at load holds $fds, not past $want"
done
echo ok
