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

rm -f gpumemtrace.* ./*.json
traced "$PROG_DIR/life" exec-fail 4 2>/dev/null
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >c.json
expect_eq "exec-fail events" "$(json c.json 'd["events"]')" 13 # + the context retain
expect_eq "exec-fail complete" "$(json c.json 'd["complete"]')" True
echo ok
