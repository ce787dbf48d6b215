#!/usr/bin/env bash
# --device N for a device the trace does not have: exit 2 with one line
# naming it, and nothing on stdout, in every command that takes --device
# (found from each command's --help, so a new one is covered). growth
# printed a device 5 that was never there, with exit 0. --device 0, which the
# trace has, works.
. "$(dirname "$0")/lib.sh"
T=$TESTS_DIR/golden/train.gmt
cmds=$("$GMT_CLI" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$cmds" ] || fail "no commands in gpumemtrace --help"
tested=""
for c in $cmds; do
	"$GMT_CLI" "$c" --help | grep -q -- '--device N' || continue
	extra=()
	[ "$c" = check ] && extra=(--max-peak 1TiB)
	rc=0
	"$GMT_CLI" "$c" "${extra[@]}" --device 5 "$T" >out 2>err || rc=$?
	[ "$rc" -eq 2 ] || fail "$c --device 5: exit $rc, want 2: $(head -3 out err)"
	[ ! -s out ] || fail "$c --device 5 printed: $(head -3 out)"
	[ "$(wc -l <err)" -eq 1 ] || fail "$c --device 5: not one line: $(cat err)"
	grep -q "device 5" err || fail "$c --device 5: the line does not name it: $(cat err)"
	rc=0
	"$GMT_CLI" "$c" "${extra[@]}" --device 0 "$T" >out 2>err || rc=$?
	[ "$rc" -eq 0 ] || fail "$c --device 0: exit $rc: $(cat err)"
	tested="$tested $c"
done
expect_eq commands "$tested" " explain growth fragmentation check accounting plot watch"
# several traces: one lacking the device is enough to refuse
rc=0
"$GMT_CLI" growth --device 1 "$T" "$TESTS_DIR/golden/rank1.gmt" >out 2>err || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] || fail "growth --device 1, two traces: exit $rc: $(cat err)"
