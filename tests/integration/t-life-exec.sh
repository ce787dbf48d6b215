# exec: the old image's trace ends with a trailer; the new image traces
# itself into a new file (same pid, so the name gets a .1); a failed exec
# keeps tracing in the same file.
. "$TESTS_DIR/integration/lib.sh"
traced "$PROG_DIR/life" exec 4
pid_files=(gpumemtrace.*.gmt)
[ ${#pid_files[@]} -eq 2 ] || fail "expected 2 traces, got: ${pid_files[*]}"
first=$(ls gpumemtrace.*.gmt | grep -v '\.1\.gmt$')
second=${first%.gmt}.1.gmt
[ -f "$second" ] || fail "no $second"
"$GMT_CLI" summary --json "$first" >a.json
"$GMT_CLI" summary --json "$second" >b.json
expect_eq "pre-exec events" "$(json a.json 'd["events"]')" 7 # + the context retain
expect_eq "pre-exec complete" "$(json a.json 'd["complete"]')" True
expect_eq "post-exec events" "$(json b.json 'd["events"]')" 19 # + the context retain
expect_eq "same pid" "$(json b.json 'd["process"]["pid"]')" "$(json a.json 'd["process"]["pid"]')"
"$GMT_CLI" dump "$first" | grep -qi "exec" || fail "trailer does not say exec"

# execl with 74 arguments (more than the hook keeps on the stack): a failed
# one keeps errno, then the new image has every argument.
rm -f gpumemtrace.* ./*.json
traced "$PROG_DIR/life" exec-long 4
second=$(ls gpumemtrace.*.1.gmt) || fail "exec-long: no second trace"
"$GMT_CLI" summary --json "$second" >g.json
expect_eq "exec-long: post-exec events" "$(json g.json 'd["events"]')" 19
"$GMT_CLI" dump "$second" | grep -q 'argv\[73\] \[.*"exit", "12", "x", .*"x", "x"\]' || fail "exec-long: argv not whole"

rm -f gpumemtrace.* ./*.json
traced "$PROG_DIR/life" exec-fail 4 2>/dev/null
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >c.json
expect_eq "exec-fail events" "$(json c.json 'd["events"]')" 13 # + the context retain
expect_eq "exec-fail complete" "$(json c.json 'd["complete"]')" True

# After a failed exec the flush thread writes again: killed later, the trace
# still holds what came after the exec (the exec's trailer is superseded).
rm -f gpumemtrace.* ./*.json
GPUMEMTRACE_FLUSH_MS=20 traced "$PROG_DIR/life" exec-fail-kill 4 2>/dev/null && fail "not killed"
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >d.json 2>/dev/null
expect_eq "exec-fail-kill events" "$(json d.json 'd["events"]')" 13
expect_eq "exec-fail-kill complete" "$(json d.json 'd["complete"]')" False

# While an exec is under way (a slow one here, 300 ms of 5 ms flush and
# sample periods) nothing follows its trailer: the trace it leaves is
# complete, whatever the flush thread had to write meanwhile.
rm -f gpumemtrace.* ./*.json
LD_PRELOAD="$preload $PROG_DIR/libslowexec.so" LD_LIBRARY_PATH=$SIM_DIR:$PROG_DIR \
	GPUMEMTRACE_FLUSH_MS=5 GPUMEMTRACE_SAMPLE_MS=5 "$PROG_DIR/life" exec 4
snaps=(gpumemtrace.*.gmt.at-exec)
[ ${#snaps[@]} -eq 1 ] && [ -f "${snaps[0]}" ] || fail "expected one snapshot: ${snaps[*]}"
"$GMT_CLI" summary --json "${snaps[0]}" >e.json
expect_eq "mid-exec complete" "$(json e.json 'd["complete"]')" True
expect_eq "mid-exec events" "$(json e.json 'd["events"]')" 7
"$GMT_CLI" summary --json "${snaps[0]%.at-exec}" >f.json
expect_eq "after-exec complete" "$(json f.json 'd["complete"]')" True
echo ok
