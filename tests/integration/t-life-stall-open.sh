#!/usr/bin/env bash
# A trace file on a hung network mount (issue 29.2: "the program never
# waits more than a bounded, documented time"). stallopen's open() of a
# .gmt file never returns. The program waits for the creation at most
# GPUMEMTRACE_FULL_WAIT_MS (100 ms at least), then runs on untraced with
# one line on stderr; a fork meanwhile (it waits for the creation's lock)
# is bounded the same. Before: the first event waited for ever, and so did
# a fork from another thread (hung: killed at 60 s). Nothing timed: the
# timeouts bound a hang.
source "$(dirname "$0")/lib.sh"
P=$PROG_DIR/stallopen
for mode in first fork; do
	untraced "$P" $mode >plain.$mode 2>&1 || fail "$mode untraced: $(cat plain.$mode)"
	rc=0
	timeout 60 env GPUMEMTRACE_FULL_WAIT_MS=200 LD_PRELOAD="$preload" \
		LD_LIBRARY_PATH="$SIM_DIR:$PROG_DIR" "$P" $mode >out.$mode 2>err.$mode || rc=$?
	expect_eq "$mode: exit status (untraced 0; 124: hung)" $rc 0
	diff plain.$mode out.$mode || fail "$mode: the program's output changed"
	expect_eq "$mode: stderr lines" "$(wc -l <err.$mode)" 1
	grep -q "^gpumemtrace: creating the trace file from .* took no step for 200 ms (a hung file system?); tracing is off, the program runs on$" err.$mode ||
		fail "$mode: stderr: $(cat err.$mode)"
	[ -z "$(ls ./*.gmt 2>/dev/null)" ] || fail "$mode: a trace file was left: $(ls ./*.gmt)"
done
echo ok
