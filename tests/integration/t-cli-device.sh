#!/usr/bin/env bash
# --device N for a device the trace does not have: exit 2 with one line
# naming it, and nothing on stdout, in every command that takes --device
# (found from each command's --help, so a new one is covered). growth
# printed a device 5 that was never there, with exit 0. --device 0, which the
# trace has, works.
. "$(dirname "$0")/lib.sh"
T=$TESTS_DIR/golden/train.gmt
# replay and whatif read a PyTorch allocator history: one on device 0
"$BUILD/tests/unit-tools/mktrace" hist.gmt <<H
header start_mono=1000000000 pid=51
process pid=51 ppid=1 exe=/bin/prog arg=prog
device ord=0 name=sim total=0x40000000
fwsnap seq=1 t=1000500000 tid=1 reason=exit
fwtrace seq=1 dev=0
fwe action=segment_alloc addr=0x2000 size=2097152 us=7000
fwe action=alloc addr=0x2000 size=512 us=7001
trailer t=1001000000
H
cmds=$("$GMT_CLI" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$cmds" ] || fail "no commands in gpumemtrace --help"
tested=""
for c in $cmds; do
	"$GMT_CLI" "$c" --help | grep -q -- '--device N' || continue
	extra=()
	[ "$c" = check ] && extra=(--max-peak 1TiB)
	[ "$c" = whatif ] && extra=(--alloc-conf expandable_segments:True)
	t=$T
	[ "$c" = replay ] || [ "$c" = whatif ] && t=hist.gmt
	rc=0
	"$GMT_CLI" "$c" "${extra[@]}" --device 5 "$t" >out 2>err || rc=$?
	[ "$rc" -eq 2 ] || fail "$c --device 5: exit $rc, want 2: $(head -3 out err)"
	[ ! -s out ] || fail "$c --device 5 printed: $(head -3 out)"
	[ "$(wc -l <err)" -eq 1 ] || fail "$c --device 5: not one line: $(cat err)"
	grep -q "device 5" err || fail "$c --device 5: the line does not name it: $(cat err)"
	rc=0
	"$GMT_CLI" "$c" "${extra[@]}" --device 0 "$t" >out 2>err || rc=$?
	[ "$rc" -eq 0 ] || fail "$c --device 0: exit $rc: $(cat err)"
	tested="$tested $c"
done
expect_eq commands "$tested" " explain growth fragmentation check accounting plot watch replay whatif"
# several traces: one lacking the device is enough to refuse
rc=0
"$GMT_CLI" growth --device 1 "$T" "$TESTS_DIR/golden/rank1.gmt" >out 2>err || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] || fail "growth --device 1, two traces: exit $rc: $(cat err)"
