#!/usr/bin/env bash
# The verdict corpus (tests/verdicts/README.md): every row of verdicts.tsv
# holds on its checked-in trace, the framework emulators' and the real GPUs'
# (an xfail row that now holds fails too: "XPASS: remove xfail"); then the
# emulators run afresh under the tracer and their rows hold on the new
# traces, so a capture regression shows as well as an analysis one; and
# docs/reports.md's table of them is the one check.py makes now.
. "$TESTS_DIR/integration/lib.sh"
v=$TESTS_DIR/verdicts
python3 "$v/check.py" "$GMT_CLI" >checked.txt 2>&1 || fail "$(cat checked.txt)"
python3 "$v/check.py" "$GMT_CLI" --doc "$TESTS_DIR/../docs/reports.md" --check >doc.txt 2>&1 ||
	fail "$(cat doc.txt)"
"$v/regen.sh" "$PWD/fresh" >regen.txt 2>&1 || fail "regen.sh: $(cat regen.txt)"
python3 "$v/check.py" "$GMT_CLI" --fresh fresh >fresh.txt 2>&1 || fail "fresh traces: $(cat fresh.txt)"
tail -n 1 checked.txt
tail -n 1 fresh.txt
