# A fork storm (children end by exit and _exit in turn) and an exec chain:
# one complete trace per process image, each with exactly its own events.
. "$TESTS_DIR/integration/lib.sh"
n=16 depth=6
[ "${STRESS:-}" = full ] && n=200 depth=50

# Prints "events lost complete" for every trace given, one line each.
per_trace() {
	for t in "$@"; do "$GMT_CLI" summary --json "$t" >"$t.json" || fail "$t unreadable"; done
	python3 -c 'import json,sys
for p in sys.argv[1:]:
    d = json.load(open(p + ".json"))
    print(d["events"], d["lost_events"], d["complete"])' "$@"
}

traced "$PROG_DIR/stress" forks $n >got.txt || fail "fork storm failed: $(cat got.txt)"
traces=(gpumemtrace.*.gmt)
expect_eq "traces" ${#traces[@]} $((n + 1))
per_trace "${traces[@]}" | sort | uniq -c | sed 's/^ *//' >counts.txt
expect_eq "per-trace counts" "$(cat counts.txt)" "$n 10 0 True
1 $((2 * n + 1)) 0 True" # the parent: + its context retain

rm -f gpumemtrace.*
traced "$PROG_DIR/stress" exec $depth >got.txt || fail "exec chain failed"
expect_eq "exec output lines" "$(grep -c 'failures=0' got.txt)" $((depth + 1))
traces=(gpumemtrace.*.gmt)
expect_eq "exec traces" ${#traces[@]} $((depth + 1))
expect_eq "exec counts" "$(per_trace "${traces[@]}" | sort | uniq -c | sed 's/^ *//')" "$((depth + 1)) 3 0 True" # 2 + each image's context retain
echo ok
