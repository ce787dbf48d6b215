# The marker API: include/gpumemtrace/gpumemtrace.h (tests/progs/marker.c)
# and python/gpumemtrace (the package's marker API) record RANGE records with source "api" when
# traced, and are no-ops, with the same output, when not.
. "$TESTS_DIR/integration/lib.sh"

ranges() { # trace -> "op source text", main thread first
	local pid
	pid=$("$GMT_CLI" dump "$1" | sed -n 's/.* PROCESS pid \([0-9]*\) .*/\1/p')
	"$GMT_CLI" dump "$1" |
		sed -n -E 's/^@[0-9]+ +RANGE [^ ]+ tid ([0-9]+) ([a-z]+) id [0-9]+ source ([a-z]+) (text .*)/\1 \2 \3 \4/p' |
		awk -v pid="$pid" '{ $1 = ($1 == pid ? "main" : "worker"); print }' >all.txt
	grep '^main' all.txt
	grep '^worker' all.txt || true
}

traced "$PROG_DIR/marker" >traced.txt || fail "traced: $(cat traced.txt)"
ranges "$(the_trace)" >got.txt
cat >want.txt <<'W'
main push api text "epoch 1"
main mark api text "checkpoint"
main push api text "inner"
main pop api text ""
main pop api text ""
main push api text ""
main pop api text ""
worker push api text "worker"
worker pop api text ""
W
diff want.txt got.txt || fail "C marker API: RANGE records differ (< expected, > got)"
"$GMT_CLI" dump "$(the_trace)" | grep -A2 ' COUNTERS ' >c.txt
grep -q 'reason periodic source "demo" device "cuda:0" ordinal 0 count 2' c.txt &&
	grep -q '"allocated" 1048576' c.txt && grep -q '"num" 2$' c.txt ||
	fail "C marker API: no COUNTERS record: $(cat c.txt)"
rm -f gpumemtrace.*
untraced "$PROG_DIR/marker" >plain.txt || fail "untraced: $(cat plain.txt)"
diff plain.txt traced.txt || fail "output differs when traced"
[ -z "$(ls gpumemtrace.* 2>/dev/null)" ] || fail "a trace without the tracer"

command -v python3 >/dev/null || skip "python3 not installed: python/gpumemtrace (the package's marker API) not tested"
py=$(python3 -c 'import sys; print(sys.executable)')
traced "$py" "$TESTS_DIR/python/phases.py" >traced.txt || fail "traced python: $(cat traced.txt)"
grep -q "active True" traced.txt || fail "python helper inactive under the tracer"
ranges "$(the_trace)" >got.txt
cat >want.txt <<'W'
main push api text "epoch 1"
main mark api text "checkpoint ✓"
main pop api text ""
main push api text "bytes text"
main pop api text ""
W
diff want.txt got.txt || fail "python marker API: RANGE records differ (< expected, > got)"
"$GMT_CLI" dump "$(the_trace)" | grep -A1 ' COUNTERS ' >c.txt
grep -q 'source "cupy" device "cuda:0" ordinal 0 count 1' c.txt && grep -q '"used_bytes" 1048576' c.txt ||
	fail "python marker API: no COUNTERS record: $(cat c.txt)"
rm -f gpumemtrace.*
untraced "$py" "$TESTS_DIR/python/phases.py" >plain.txt || fail "untraced python: $(cat plain.txt)"
grep -q "active False" plain.txt || fail "python helper active without the tracer"
echo ok
