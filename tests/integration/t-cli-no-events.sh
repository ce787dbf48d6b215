#!/usr/bin/env bash
# A trace killed before its first flush: a header, the process and the
# devices, no event and no trailer. The text reports agree with --json: the
# duration is 0 and they say there is no event (they printed the machine's
# uptime, the trace's time zero, as the duration).
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

# What the library leaves when SIGKILL comes before the flush thread wrote an
# event; time zero as on a machine up for 2672.67 s.
"$MKTRACE" killed.gmt <<'T'
header start_mono=2672670000000 pid=42
process pid=42 ppid=1 host=box exe=/usr/bin/app arg=app
device ord=0 name=G total=17179869184
chunk
T

"$GMT_CLI" summary --json killed.gmt >s.json 2>/dev/null || fail "summary --json failed"
expect_eq "json duration" "$(json s.json 'd["duration_ns"]')" 0
expect_eq "json events" "$(json s.json 'd["events"]')" 0
"$GMT_CLI" summary killed.gmt >s.txt 2>err.txt || fail "summary failed: $(cat err.txt)"
grep -q "incomplete trace" err.txt || fail "no warning: $(cat err.txt)"
line=$(grep '^duration' s.txt)
expect_eq "text duration" "$line" "duration  0.000000000 s (no event was written), 0 events, 0 lost"
"$GMT_CLI" leaks killed.gmt >l.txt 2>/dev/null || fail "leaks failed"
grep -q '^INCOMPLETE TRACE: killed.gmt (no trailer): .* live at its last flush (no event was written), not at exit$' l.txt ||
	fail "leaks: $(grep INCOMPLETE l.txt)"
"$GMT_CLI" leaks --json killed.gmt >l.json 2>/dev/null || fail "leaks --json failed"
grep -q '"end_time_ns": 0,' l.json || fail "leaks --json: $(cat l.json)"
# No report shows the uptime as a time.
for f in s.txt l.txt; do
	! grep -Eq '2672|44m3' $f || fail "$f shows the uptime: $(grep -E '2672|44m3' $f)"
done
echo ok
