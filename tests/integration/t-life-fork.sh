# fork: the child writes its own trace under its own pid; the parent's trace
# holds exactly the parent's events.
. "$TESTS_DIR/integration/lib.sh"
traced "$PROG_DIR/life" fork 6 >out.txt
grep -q "child exited 0" out.txt || fail "program output changed: $(cat out.txt)"
traces=(gpumemtrace.*.gmt)
[ ${#traces[@]} -eq 2 ] || fail "expected 2 traces, got: ${traces[*]}"
parent="" child=""
for t in "${traces[@]}"; do
	"$GMT_CLI" summary --json "$t" >"$t.json"
	pid=$(json "$t.json" 'd["process"]["pid"]')
	[ "$t" = "gpumemtrace.$pid.gmt" ] || fail "$t holds pid $pid"
done
# The child is the trace whose ppid is the other one's pid.
a=${traces[0]} b=${traces[1]}
if [ "$(json "$b.json" 'd["process"]["ppid"]')" = "$(json "$a.json" 'd["process"]["pid"]')" ]; then
	parent=$a child=$b
else
	parent=$b child=$a
fi
[ -n "$parent" ] && [ -n "$child" ] || fail "cannot tell parent from child"
# parent: 2 x allocs(6) = 12 mallocs + 6 frees; child: allocs(12) = 12 mallocs + 6 frees of 2 MiB
expect_eq "parent events" "$(json "$parent.json" 'd["events"]')" 19 # + the context retain
expect_eq "parent complete" "$(json "$parent.json" 'd["complete"]')" True
expect_eq "child events" "$(json "$child.json" 'd["events"]')" 18
expect_eq "child bytes" "$(json "$child.json" 'd["calls"]["cudaMalloc"]["bytes"]')" $((12 * 2 * 1048576))
expect_eq "child complete" "$(json "$child.json" 'd["complete"]')" True
expect_eq "child ppid" "$(json "$child.json" 'd["process"]["ppid"]')" "$(json "$parent.json" 'd["process"]["pid"]')"
expect_eq "parent bytes" "$(json "$parent.json" 'd["calls"]["cudaMalloc"]["bytes"]')" $((12 * 1048576))

# A child that makes no CUDA call leaves no file.
rm -f gpumemtrace.*
traced "$PROG_DIR/life" fork-nocuda 2
traces=(gpumemtrace.*.gmt)
[ ${#traces[@]} -eq 1 ] || fail "fork-nocuda: expected 1 trace, got ${traces[*]}"
echo ok
