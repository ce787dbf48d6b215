# _exit while another thread records after the final trailer (as the NVML
# sampler's late sample did): each late write carries its records and a
# fresh trailer in one chunk, so the process may end at any moment and the
# trace still reads as complete. Before the fix, about 1 run in 3 ended
# with a chunk after the last trailer ("incomplete trace").
. "$TESTS_DIR/integration/lib.sh"
for i in $(seq 20); do
	mkdir "r$i"
	(cd "r$i" && traced "$PROG_DIR/exitbusy") || fail "run $i: exit code $?"
	t=(r$i/gpumemtrace.*.gmt)
	[ ${#t[@]} -eq 1 ] && [ -f "${t[0]}" ] || fail "run $i: expected one trace, found: ${t[*]}"
	"$GMT_CLI" summary --json "${t[0]}" >"r$i/s.json" 2>"r$i/err" || fail "run $i: summary failed"
	expect_eq "run $i complete" "$(json "r$i/s.json" 'd["complete"]')" True
done
echo ok
