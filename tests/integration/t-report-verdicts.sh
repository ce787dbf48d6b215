#!/usr/bin/env bash
# The verdict corpus (tests/verdicts/README.md): every row of verdicts.tsv
# holds on its checked-in trace, the framework emulators' and the real GPUs'
# (an xfail row that now holds fails too: "XPASS: remove xfail"); then the
# emulators run afresh under the tracer and their rows hold on the new
# traces, so a capture regression shows as well as an analysis one; and
# docs/reports.md's table of them is the one check.py makes now.
# Growth's driver-level answers on a trace without iterations rest on wall
# time, which the machine's load moves: those rows are checked on their
# stored traces only (check.py's docstring says why).
. "$TESTS_DIR/integration/lib.sh"
v=$TESTS_DIR/verdicts
python3 "$v/check.py" "$GMT_CLI" >checked.txt 2>&1 || fail "$(cat checked.txt)"
python3 "$v/check.py" "$GMT_CLI" --doc "$TESTS_DIR/../docs/reports.md" --check >doc.txt 2>&1 ||
	fail "$(cat doc.txt)"
"$v/regen.sh" "$PWD/fresh" >regen.txt 2>&1 || fail "regen.sh: $(cat regen.txt)"
python3 "$v/check.py" "$GMT_CLI" --fresh fresh >fresh.txt 2>&1 || fail "fresh traces: $(cat fresh.txt)"
# The rule's edges: a timed verdict the load turned (torch.leak-small's
# leak read on a clean run) is not checked fresh; a ranged trace that lost
# its ranges (torch.clean-ranged read on the clean run) still is.
mkdir moved
for f in fresh/*.gmt; do ln -s "$PWD/$f" moved/; done
ln -sf "$PWD/fresh/torch.clean.gmt" moved/torch.leak-small.gmt
ln -sf "$PWD/fresh/torch.clean.gmt" moved/torch.clean-ranged.gmt
python3 "$v/check.py" "$GMT_CLI" --fresh moved >moved.txt 2>&1 && fail "lost ranges not seen: $(cat moved.txt)"
grep -q "FAIL: verdicts.tsv:$(grep -n 'torch.clean-ranged.gmt	growth	devices.0.iteration_source' "$v/verdicts.tsv" | cut -d: -f1)$" moved.txt ||
	fail "a ranged trace's iteration rows are not checked fresh: $(cat moved.txt)"
! grep -q "torch.leak-small.gmt" moved.txt || fail "a wall-time verdict checked fresh: $(cat moved.txt)"
tail -n 1 checked.txt
tail -n 1 fresh.txt
