#!/usr/bin/env bash
# Tracer memory per allocating thread (issue 29.7): 2,000 threads alive at
# once, 50 allocation pairs each, stacks on (the default depth). The
# tracer may add at most 32 KiB of RSS per thread over the untraced run.
# Before: libunwind's fast trace made a 256 KiB cache in every thread that
# unwound, 559-576 MB against 18 MB untraced (279 KiB a thread); a
# thread's first 32 misses now take unw_step, which keeps none, and the
# run adds 23 KiB a thread (preload/stackcache.c). RSS, not time: load
# does not move it. The trace is checked too (every event, none lost).
. "$TESTS_DIR/integration/lib.sh"
[[ ${SANITIZE:-} != *address* ]] || skip "ASan's shadow memory is not the tracer's"
N=2000 M=50
rc=0
u=$(untraced "$PROG_DIR/manythreads" $N $M 2>err.txt) || rc=$?
[ $rc -ne 3 ] || skip "cannot make $N threads here: $(cat err.txt)"
expect_eq "untraced exit" $rc 0
t=$(traced "$PROG_DIR/manythreads" $N $M) || fail "traced exit $?"
ukb=${u##*rss_kb=} tkb=${t##*rss_kb=}
per=$(((tkb - ukb) / N))
echo "untraced $ukb kB, traced $tkb kB: $per kB per thread"
[ "$per" -le 32 ] || fail "$per kB of tracer memory per thread (at most 32): untraced $ukb kB, traced $tkb kB"
$GMT_CLI summary --json "$(the_trace)" >s.json || fail "summary"
# every pair, and main's retain of the primary context
expect_eq "events, lost" "$(json s.json "d['events'], d['lost_events']")" "($((2 * N * M + 1)), 0)"
echo ok
