# NVTX through the injection path: tests/progs/nvtx-client does what the
# NVTX loader does (NVTX_INJECTION64_PATH, InitializeInjectionNvtx2, the
# callback tables) and calls push/pop, start/end and marks with ASCII, wide
# and registered messages, in a domain and not, from two threads. Every
# call is a RANGE record, in order per thread, with the worker ending a
# range the main thread started. With tracing off the injection declines.
. "$TESTS_DIR/integration/lib.sh"

# RANGE records as "thread op id source text", main thread first.
ranges() { # trace
	local pid
	pid=$("$GMT_CLI" dump "$1" | sed -n 's/.* PROCESS pid \([0-9]*\) .*/\1/p')
	"$GMT_CLI" dump "$1" | sed -n -E 's/^@[0-9]+ +RANGE [^ ]+ tid ([0-9]+) (.*)/\1 \2/p' |
		awk -v pid="$pid" '{ $1 = ($1 == pid ? "main" : "worker"); print }' >ranges.all
	grep '^main' ranges.all
	grep '^worker' ranges.all || true
}

NVTX_INJECTION64_PATH=$GMT_LIB traced "$PROG_DIR/nvtx-client" >out.txt || fail "client: $(cat out.txt)"
grep -q "injection initialized: yes" out.txt || fail "$(cat out.txt)"
t=$(the_trace)
ranges "$t" >got.txt
cat >want.txt <<'W'
main push id 0 source nvtx text "outer"
main push id 0 source nvtx text "inner é"
main pop id 0 source nvtx text ""
main pop id 0 source nvtx text ""
main mark id 0 source nvtx text "checkpoint"
main mark id 0 source nvtx text "ex mark"
main start id 1 source nvtx text "load"
main start id 2 source nvtx text "wide start"
main start id 3 source nvtx text "registered start"
main end id 3 source nvtx text ""
main end id 2 source nvtx text ""
main push id 0 source nvtx text "mydomain: step 1"
main pop id 0 source nvtx text ""
main mark id 0 source nvtx text "mydomain: wide ✓"
main start id 4 source nvtx text "mydomain: dom range"
main end id 4 source nvtx text ""
main mark id 0 source nvtx text "mydomain: wide registered"
main mark id 0 source nvtx text ""
main mark id 0 source nvtx text ""
main mark id 0 source nvtx text ""
main push id 0 source nvtx text ""
main pop id 0 source nvtx text ""
main pop id 0 source nvtx text ""
worker push id 0 source nvtx text "worker"
worker end id 1 source nvtx text ""
worker pop id 0 source nvtx text ""
W
diff want.txt got.txt || fail "RANGE records differ (< expected, > got)"
# The allocations are still there, between the ranges.
expect_eq "cudaMalloc calls" "$("$GMT_CLI" dump "$t" | grep -c 'cudaMalloc ')" 3
rm -f gpumemtrace.*

# Tracing off: the injection declines, NVTX calls become the loader's no-ops.
GPUMEMTRACE_DISABLE=1 NVTX_INJECTION64_PATH=$GMT_LIB traced "$PROG_DIR/nvtx-client" >out.txt ||
	fail "client with tracing off: $(cat out.txt)"
grep -q "injection initialized: no" out.txt || fail "injection accepted with tracing off"
[ -z "$(ls gpumemtrace.* 2>/dev/null)" ] || fail "a trace with tracing off"
echo ok
