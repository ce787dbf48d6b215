#!/usr/bin/env bash
# Runs every emulator scenario of scenarios.tsv under the tracer and writes
# its trace as OUTDIR/NAME.gmt (default: tests/verdicts/traces, the checked-in
# copies) and what the program printed as OUTDIR/NAME.txt: its "EMU" lines
# are the framework's own counters, the ground truth. t-report-verdicts runs it into a temporary directory to check that
# fresh traces still get the verdicts of verdicts.tsv.
#
#   tests/verdicts/regen.sh [OUTDIR [NAME-SUBSTRING]]
#
# BUILD (default: build) holds gpumemtrace, the library, build/sim and the
# emulators (make emu-progs). Stacks are kept short (8 frames) and NVML is
# sampled every 20 ms, so each trace stays small and has samples.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${BUILD:-$root/build}" && pwd)
out=${1:-$here/traces}
filter=${2:-}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cli=$build/gpumemtrace
[ -x "$cli" ] && [ -x "$build/tests/emu/emu-torch" ] || {
	echo "regen.sh: build first (make all emu-progs)" >&2
	exit 2
}
status=0
while IFS=$'\t' read -r name prog scenario envs; do
	[[ -z $name || $name == \#* ]] && continue
	[[ -n $filter && $name != *"$filter"* ]] && continue
	rm -f "$out/$name.gmt"
	# shellcheck disable=SC2086 # envs is a list of VAR=VALUE words
	(cd "$out" && env -u NVTX_INJECTION64_PATH LD_LIBRARY_PATH="$build/sim" \
		GPUMEMTRACE_SAMPLE_MS=20 $envs \
		"$cli" run -q --no-follow -o "$out/$name.gmt" --stack-depth 8 -- \
		"$build/tests/emu/$prog" "$scenario" >"$out/$name.txt" 2>"$out/$name.log") || true
	if [ ! -s "$out/$name.gmt" ]; then
		echo "regen.sh: $name: no trace ($(tail -n 1 "$out/$name.log"))" >&2
		status=1
	fi
	rm -f "$out/$name.log"
done <"$here/scenarios.tsv"
exit $status
