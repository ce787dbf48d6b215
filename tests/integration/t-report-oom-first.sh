#!/usr/bin/env bash
# On every trace of the verdict corpus and of the real GPU runs, a run that
# failed (oom's verdict is a case: it ran out of memory and nothing
# recovered it, or oom-hidden) gets that case as explain's first finding,
# and its advice: a user reads the cause before the breakdowns.
. "$(dirname "$0")/lib.sh"
n=0
for t in "$TESTS_DIR"/verdicts/traces/*.gmt "$TESTS_DIR"/real/*/*.gmt; do
	[ -f "$t" ] || continue
	v=$("$GMT_CLI" oom --json "$t" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])') ||
		fail "$t: oom"
	case $v in
	none | caught | recovered-by-retry | not-an-oom) continue ;;
	oom-hidden) want=oom-hidden ;;
	*) want=oom-$v ;;
	esac
	"$GMT_CLI" explain --json "$t" >x.json 2>/dev/null || fail "$t: explain exit $?"
	first=$(json x.json 'd["traces"][0]["findings"][0]["id"]')
	expect_eq "$(basename "$t"): explain's first finding (oom: $v)" "$first" "$want"
	change=$(json x.json 'd["traces"][0]["findings"][0]["change"]')
	[ -n "$change" ] || fail "$t: no advice"
	n=$((n + 1))
done
[ $n -ge 20 ] || fail "only $n failed runs found"
echo "ok: $n failed runs"
