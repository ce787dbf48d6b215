# kill -9 after a flush: the trace reads up to the last flush and says it is
# incomplete.
. "$TESTS_DIR/integration/lib.sh"
set +e
GPUMEMTRACE_FLUSH_MS=20 traced "$PROG_DIR/life" kill 8
rc=$?
set -e
expect_eq "killed" "$rc" 137
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json 2>err.txt || fail "summary failed on a killed trace: $(cat err.txt)"
expect_eq "events" "$(json s.json 'd["events"]')" 13 # 12 + the context retain
expect_eq "complete" "$(json s.json 'd["complete"]')" False
# A truncated tail (a write torn by the kill) still reads up to the last chunk.
size=$(stat -c %s "$t")
head -c $((size - 3)) "$t" >torn.gmt
"$GMT_CLI" summary --json torn.gmt >torn.json 2>/dev/null || fail "summary failed on a torn trace"
expect_eq "torn complete" "$(json torn.json 'd["complete"]')" False
echo ok
