#!/usr/bin/env bash
# At COLUMNS=80 (piped, no terminal) every line of every text report fits
# 80 columns: each report command on every trace the project keeps (the
# real H100 traces, the verdict corpus, the goldens), two traces at once,
# diff and explain A B, top/leaks by each grouping, replay and whatif on
# every history and pickle. No exception for tables: a table too wide
# puts its site or path under its figures. (summary's device table was
# 101 columns, explain's framework line 137, fragmentation's prose 154.)
# The same pass reads each report for the jargon a PyTorch user would not
# know ("VMM physical", "reserved VA", "a route the hooks missed").
. "$(dirname "$0")/lib.sh"
out=$PWD/out
cd "$TESTS_DIR/.."
traces=$(ls tests/real/*/*.gmt tests/verdicts/traces/*.gmt tests/golden/*.gmt)
[ -n "$traces" ] || fail "no traces"
bad=0
# one report: every line within 80 columns (UTF-8 characters, not bytes)
fits() {
	COLUMNS=80 "$GMT_CLI" "$@" </dev/null 2>/dev/null | cat >"$out" || true
	[ -s "$out" ] || return 0
	LC_ALL=C sed -i 's/[\x80-\xbf]//g' "$out"
	# and in the user's words (27.8): the driver's terms only in parentheses
	if grep -E 'VMM physical|reserved VA|hooks missed|no hook sees|VMM on host|cuMem \(VMM\)' "$out"; then
		echo "$*: jargon (above)"
		bad=1
	fi
	awk -v c="$*" 'length > 80 {
		printf "%s: %d columns: %s\n", substr(c, 1, 90), length, $0
		bad = 1
	} END { exit bad }' "$out" || bad=1
}
for t in $traces; do
	for c in summary top leaks oom fragmentation accounting explain growth; do
		fits "$c" "$t"
	done
	fits check --max-peak 1MiB --fail-on-oom "$t"
done
for by in function library range api; do
	for t in tests/real/*/*.gmt tests/golden/*.gmt; do
		fits top --by "$by" "$t"
		fits leaks --by "$by" "$t"
	done
done
a=tests/real/2026-11-22-h100/plain-shared.596.gmt
b=tests/real/2026-11-23-h100/nccl.1021.gmt
for pair in "$a $b" "tests/golden/rank0.gmt tests/golden/rank1.gmt" \
	"tests/verdicts/traces/torch.clean.gmt tests/verdicts/traces/torch.leak-mid.gmt" \
	"tests/real/2026-11-23-h100/plain-shared.643.gmt tests/real/2026-11-23-h100/plain-static.718.gmt"; do
	# shellcheck disable=SC2086
	for c in summary top leaks growth fragmentation diff explain; do fits $c $pair; done
	# shellcheck disable=SC2086
	fits check --max-peak 1MiB $pair
done
for t in tests/verdicts/traces/*history*.gmt tests/fuzz/seeds/*.pickle; do
	fits replay "$t"
	fits whatif "$t"
	fits whatif --set expandable_segments:True --device-size 1GiB "$t"
	fits top --tensors "$t"
	fits fragmentation --blocks "$t"
done
[ "$bad" -eq 0 ] || fail "lines past 80 columns at COLUMNS=80 (see above)"
echo ok
