#!/usr/bin/env bash
# The reports of each real-GPU trace (tests/real/RUN/) in docs/validation/RUN/reports/:
#   scripts/validation-reports.sh CLI TRACE   # the reports of one trace, on stdout
#   scripts/validation-reports.sh --regen     # rewrite NAME.reports.txt of every kept trace
# scripts/gpu-check.sh writes them at the run with the first form; --regen
# rewrites them with the current build (build/gpumemtrace), from the
# repository's root, so they show what the CLI says now and no build
# machine's paths. A scenario whose trace is not kept keeps its run's output.
set -u
reports() {
	local cli=$1 trace=$2
	for cmd in summary accounting growth "top --by library" "top --by stack -n 5" leaks explain; do
		echo "\$ gpumemtrace $cmd"
		# shellcheck disable=SC2086
		"$cli" $cmd "$trace" 2>&1
		echo
	done
}
if [ "${1:-}" != --regen ]; then
	reports "$1" "$2"
	exit
fi
cd "$(dirname "$0")/.." || exit 1
cli=build/gpumemtrace
[ -x "$cli" ] || { echo "validation-reports.sh: build $cli first (make all)" >&2; exit 1; }
for t in tests/real/*/*.gmt; do
	run=${t%/*} name=${t##*/}
	dir=docs/validation/${run##*/}
	name=${name%.gmt}
	name=${name%.*} # torch-async.837 -> torch-async
	out=$dir/reports/$name.reports.txt
	[ -f "$out" ] || continue
	reports "$cli" "$t" >"$out"
	echo "wrote $out"
done
