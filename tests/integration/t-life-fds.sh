# The trace's descriptor never meets the program's: it sits high and
# close-on-exec, never on 0-2 (stdout or stderr closed: the program's
# output fails as untraced, and never lands in the trace), and a descriptor
# the program closed or reused is never written (one line on stderr,
# tracing stops, the program's file is untouched).
. "$TESTS_DIR/integration/lib.sh"
P=$PROG_DIR/fdclash

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
# the common 1024: the daemon closes it too; tracing stops, saying so once
daemon 1024
if [ -s err.txt ]; then
	expect_eq "daemon 1024: stderr lines" "$(wc -l <err.txt)" 1
	grep -q "no longer the trace.*tracing stops here" err.txt || fail "daemon 1024: $(cat err.txt)"
fi

# reuse LOG: the program dup2()s its log onto the trace's own number.
rm -f app.log gpumemtrace.*.gmt
traced "$P" reuse app.log 2>err.txt || fail "reuse: exit $?"
expect_eq "reuse: log" "$(cat app.log)" "$want"
expect_eq "reuse: stderr lines" "$(wc -l <err.txt)" 1
grep -q "descriptor [0-9]* is no longer the trace" err.txt || fail "reuse: $(cat err.txt)"
t=$(the_trace)
$GMT_CLI dump "$t" >/dev/null 2>&1 || fail "reuse: the trace up to the reuse is unreadable"

# RLIMIT_NOFILE=4: 0-2 and one more. The trace needs that one (documented
# in docs/reliability.md): the program opens one file fewer, and runs on.
rm -f gpumemtrace.*.gmt
u=$(untraced "$P" nofile)
t=$(traced "$P" nofile)
expect_eq "nofile untraced" "$u" "opened 1"
expect_eq "nofile traced" "$t" "opened 0"
echo ok
