#!/usr/bin/env bash
# Regenerates the parts of the docs made from the CLI's option tables and
# the framework table: share/completion/gpumemtrace.bash whole, the man
# pages' version (the CLI's, from the Makefile's VERSION), and in
# share/man/gpumemtrace.1, docs/cli.md, docs/reports.md and docs/settings.md each region
# between a "gen:begin KIND [COMMAND]" line and a "gen:end" line, from
# `gpumemtrace --gen KIND [COMMAND]`. The rest of those files is
# hand-written and kept.
#   scripts/gen-docs.sh CLI           rewrite the files (make gen-docs)
#   scripts/gen-docs.sh CLI --check   exit 1, with a diff, if any differs
set -euo pipefail
cli=$1
check=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A marker line: '.\" gen:begin KIND [COMMAND]' (roff) or
# '<!-- gen:begin KIND [COMMAND] -->' (Markdown); then 'gen:end' alike.
begin_re='^(\.\\" |<!-- )gen:begin ([a-z-]+( [a-z]+)?)( -->)?$'
end_re='^(\.\\" |<!-- )gen:end( -->)?$'

# splice FILE OUT: FILE with each generated region made anew.
splice() {
	local line rest
	local skipping=0
	while IFS= read -r line || [ -n "$line" ]; do
		if [[ $line =~ $end_re ]]; then
			skipping=0
		elif [ $skipping = 1 ]; then
			continue
		fi
		printf '%s\n' "$line"
		if [[ $line =~ $begin_re ]]; then
			rest=${BASH_REMATCH[2]}
			# shellcheck disable=SC2086 # KIND [COMMAND]
			"$cli" --gen $rest
			skipping=1
		fi
	done <"$1" >"$2"
	[ $skipping = 0 ] || { echo "$1: gen:begin without gen:end" >&2; exit 1; }
}

# The version on the man pages' title lines is the CLI's (the Makefile's VERSION).
version=$("$cli" --version | awk '{print $2}')
th() { sed -E "s/^(\.TH .*)\"gpumemtrace [^\"]*\"/\1\"gpumemtrace $version\"/"; }

"$cli" --gen completion >"$tmp/completion"
splice "$root/share/man/gpumemtrace.1" "$tmp/man.raw"
th <"$tmp/man.raw" >"$tmp/man"
th <"$root/share/man/gpumemtrace.7" >"$tmp/man7"
splice "$root/docs/cli.md" "$tmp/cli.md"
splice "$root/docs/reports.md" "$tmp/reports.md"
splice "$root/docs/settings.md" "$tmp/settings.md"
status=0
for pair in completion:share/completion/gpumemtrace.bash man:share/man/gpumemtrace.1 \
	man7:share/man/gpumemtrace.7 cli.md:docs/cli.md reports.md:docs/reports.md \
	settings.md:docs/settings.md; do
	new=$tmp/${pair%%:*} old=$root/${pair#*:}
	if [ "$check" = --check ]; then
		if ! diff -u "$old" "$new"; then
			echo "${pair#*:} differs from the option or framework tables or VERSION: run 'make gen-docs'" >&2
			status=1
		fi
	elif ! cmp -s "$old" "$new"; then
		cp "$new" "$old"
		echo "updated ${pair#*:}"
	fi
done
exit $status
