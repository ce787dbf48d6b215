#!/usr/bin/env bash
# Partial data is never silent (issues 29.5, 30.7): on a trace that lost
# 500 events and on one with no trailer (killed), every command and every
# export format says so in its first lines (text: one of its first five
# lines; JSON: "lost_events" and "complete"; SVG: a text element; Perfetto
# JSON: otherData and a global marker; CSV: a '#' line first; pprof: a
# comment; folded stacks: a warning on stderr); `check` gives no verdict
# (exit 3, one line) unless --allow-lost. Events lost only by untraced
# children (_Fork) are not this process's: no PARTIAL line, check passes.
# The traces hold a small PyTorch allocator history, for replay and whatif.
# Before: top, leaks, check, flamegraph (SVG and folded) and the three
# exports said nothing; check printed PASS, exit 0; leaks listed the
# allocations whose frees were lost as leaks.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/cli-commands.sh"
cli_commands_cover
MKTRACE=$BUILD/tests/unit-tools/mktrace
S=1000000000
body="header start_mono=$S pid=51
process pid=51 ppid=1 exe=/bin/prog arg=prog
device ord=0 name=sim total=0x40000000
events tid=1
ev api=cudaMalloc t=$((S + 5000000)) ptr=0x1000 size=4096 dev=0
ev api=cudaMalloc t=$((S + 7000000)) ptr=0x2000 size=8192 dev=0
ev api=cudaFree t=$((S + 8000000)) ptr=0x1000
fwsnap seq=1 t=$((S + 8500000)) tid=1 reason=exit
fwtrace seq=1 dev=0
fwe action=segment_alloc addr=0x2000 size=8192 us=7000
fwe action=alloc addr=0x2000 size=512 us=7001
fwseg seq=1 addr=0x2000 total=8192
fwblk addr=0x2000 size=512 state=active_allocated
fwblk addr=0x2200 size=7680 state=inactive"
"$MKTRACE" lost.gmt <<<"$body
lost tid=1 count=500 t=$((S + 9000000))
trailer t=$((S + 10000000)) lost=500"
"$MKTRACE" cut.gmt <<<"$body"
"$MKTRACE" child.gmt <<<"$body
lost tid=0 count=500 t=$((S + 9000000))
trailer t=$((S + 10000000)) lost=500"
"$MKTRACE" whole.gmt <<<"$body
trailer t=$((S + 10000000))"

said() { # what file: the first lines say it
	head -n "${3:-5}" "$2" | grep -qE 'PARTIAL DATA|LOST|INCOMPLETE|[0-9]+ (events )?lost|incomplete' ||
		fail "$1: silent in its first lines: $(head -n "${3:-5}" "$2")"
}
json_says() { # what file: a key somewhere says lost_events 500 / complete false
	python3 - "$1" "$2" "$3" <<'PY' || fail "$1: the JSON does not say it"
import json, sys
what, path, kind = sys.argv[1:]
d = json.load(open(path))
def walk(o):
    if isinstance(o, dict):
        if kind == "lost" and o.get("lost_events") == 500:
            return True
        if kind == "cut" and o.get("complete") is False:
            return True
        return any(walk(v) for v in o.values())
    if isinstance(o, list):
        return any(walk(v) for v in o)
    return False
sys.exit(0 if walk(d) else 1)
PY
}

for kind in lost cut; do
	T=$kind.gmt
	for cmd in "${cli_commands[@]}"; do
		args=("$T")
		[ "$cmd" = diff ] && args=("$T" "$T")
		rm -f p.svg f.svg p.pb.gz
		rc=0
		$GMT_CLI $cmd "${args[@]}" >out 2>err || rc=$?
		c=${cmd%% *}
		case "$cmd" in
		check*)
			expect_eq "$kind: check exit" $rc 3
			expect_eq "$kind: check's lines on stderr" "$(grep -c 'partial data, no verdict' err)" 1
			;;
		*) [ $rc -eq 0 ] || fail "$kind: $cmd: exit $rc: $(cat err)" ;;
		esac
		case "$cmd" in
		dump) grep -q "^end: .*\(incomplete\|lost\|LOST\)\|LOST tid" out || grep -q "no trailer" out ||
			fail "$kind: dump: $(tail -2 out)" ;;
		"plot -o p.svg") grep -q 'id="partial".*PARTIAL DATA' p.svg || fail "$kind: plot" ;;
		"flamegraph -o f.svg") grep -q 'id="partial".*PARTIAL DATA' f.svg || fail "$kind: flamegraph" ;;
		"flamegraph --folded") grep -qE "^gpumemtrace flamegraph: warning: $T: (PARTIAL DATA|incomplete trace)" err ||
			fail "$kind: folded: $(cat err)" ;;
		"export --format perfetto") # the marker: an instant event's name, in the first packets
			head -c 600 out | grep -aq 'PARTIAL DATA' || fail "$kind: perfetto marker" ;;
		"export --format chrome-json") json_says "$kind: chrome-json" out "$kind"
			head -c 600 out | grep -q '"name":"PARTIAL DATA' || fail "$kind: chrome-json marker" ;;
		"export --format csv") head -1 out | grep -q '^# PARTIAL DATA: ' || fail "$kind: csv: $(head -1 out)" ;;
		"export --format pprof -o p.pb.gz")
			python3 -c 'import gzip,sys; sys.exit(b"PARTIAL DATA" not in gzip.open("p.pb.gz").read())' ||
				fail "$kind: pprof has no comment" ;;
		*--json) json_says "$kind: $cmd" out "$kind" ;;
		*) said "$kind: $cmd" out ;;
		esac
		# --json where the command has it
		if [[ $cmd != *--json* ]] && $GMT_CLI "$c" --help | grep -q -- '--json'; then
			rc=0
			$GMT_CLI $cmd --json "${args[@]}" >out.json 2>err || rc=$?
			json_says "$kind: $cmd --json" out.json "$kind"
		fi
	done
	rc=0
	$GMT_CLI check --allow-lost --max-peak 1GiB "$T" >out 2>err || rc=$?
	expect_eq "$kind: check --allow-lost" $rc 0
	grep -q "partial data judged (--allow-lost)" out || fail "$kind: --allow-lost: $(cat out)"
done

# leaks: the allocation live at the end may be a lost free
$GMT_CLI leaks lost.gmt >out
grep -q "a free that was lost is not a leak: the allocation below may have been freed (500 events lost)" out ||
	fail "leaks: $(cat out)"
$GMT_CLI leaks --json lost.gmt >out.json
expect_eq "leaks maybe_freed" "$(json out.json "d['traces'][0]['maybe_freed_allocations']")" 1
# JUnit: a failed test case says why
rc=0
$GMT_CLI check --max-peak 1GiB --junit j.xml lost.gmt >/dev/null 2>&1 || rc=$?
expect_eq "junit exit" $rc 3
grep -q '<testcase classname="lost.gmt" name="complete-data">' j.xml || fail "junit: $(cat j.xml)"
grep -q 'failures="1"' j.xml || fail "junit failures: $(cat j.xml)"

# Lost only in untraced children, and a whole trace: nothing partial.
for T in child.gmt whole.gmt; do
	for cmd in top leaks "flamegraph -o f.svg" "export --format csv"; do
		$GMT_CLI $cmd "$T" >out 2>err || fail "$T: $cmd: exit $?"
		! grep -q "PARTIAL DATA" out err f.svg 2>/dev/null || fail "$T: $cmd: PARTIAL DATA"
	done
	$GMT_CLI check --max-peak 1GiB "$T" >out 2>err || fail "$T: check exit $?: $(cat err)"
done
echo ok
