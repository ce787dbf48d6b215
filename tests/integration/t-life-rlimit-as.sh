# Under a tight RLIMIT_AS (VmSize + 1-16 MB, set by the program before it
# returns), symbolizing at exit crashed inside libdw (dwarf_getsrclines),
# 5 times in 8, and the program's buffered stdout was lost. Now nothing is
# named at exit: by default the reports name the frames, and with
# GPUMEMTRACE_SYMBOLIZE=1 the scanning thread names them while the program
# runs, only with room under the limits (else a NOTE says so). Each run:
# exit 0, its line on stdout, the trace complete, its allocations named by
# the reports.
. "$TESTS_DIR/integration/lib.sh"
[[ ${SANITIZE:-} != *address* ]] || skip "ASan reserves terabytes of shadow: an address-space limit breaks ASan itself"

for run in "1 0" "2 0" "4 0" "8 1" "12 1" "16 1"; do
	read -r mb symbolize <<<"$run"
	rm -f gpumemtrace.* out.txt
	rc=0
	GPUMEMTRACE_SYMBOLIZE=$symbolize traced timeout 60 "$PROG_DIR/harsh" rlimit-as $mb >out.txt || rc=$?
	expect_eq "limit +${mb} MB: exit code" "$rc" 0
	grep -qx "buffered output survives" out.txt || fail "limit +${mb} MB: stdout lost"
	t=$(the_trace)
	"$GMT_CLI" summary --json "$t" >s.json
	expect_eq "limit +${mb} MB: complete" "$(json s.json 'd["complete"]')" True
	"$GMT_CLI" top "$t" >top.txt
	grep -q "deep (tests/progs/harsh.c:" top.txt || fail "limit +${mb} MB: not named: $(cat top.txt)"
done
echo ok
