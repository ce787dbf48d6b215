#!/usr/bin/env bash
# Runs every unit test binary and integration script; the last line is
# "N passed, N failed" (", N skipped" when some skipped).
set -u
here=$(cd "$(dirname "$0")" && pwd)
export BUILD=${BUILD:-$here/../build}
export GMT_LIB=$BUILD/libgpumemtrace.so
export GMT_CLI=$BUILD/gpumemtrace
export SIM_DIR=$BUILD/sim
export PROG_DIR=$BUILD/tests/progs
export TESTS_DIR=$here
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
filter=${1:-}

passed=0 failed=0 skipped=0 failures=()
logdir=$BUILD/tests/logs
mkdir -p "$logdir"

run_one() { # name, command...
	local name=$1; shift
	[ -n "$filter" ] && [[ $name != *$filter* ]] && return
	local log=$logdir/$name.log start=$SECONDS rc
	mkdir -p "$(dirname "$log")"
	( cd "$(mktemp -d "${TMPDIR:-/tmp}/gmt-test.XXXXXX")" && timeout 300 "$@" ) >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1)); echo "ok   $name ($((SECONDS - start))s)"
	elif [ $rc -eq 77 ]; then
		skipped=$((skipped + 1)); echo "skip $name: $(tail -n 1 "$log")"
	else
		failed=$((failed + 1)); failures+=("$name")
		echo "FAIL $name (exit $rc); last lines of $log:"
		tail -n 15 "$log" | sed 's/^/     | /'
	fi
}

for t in "$BUILD"/tests/unit/*; do
	[ -x "$t" ] && [ -f "$t" ] && run_one "unit/$(basename "$t")" "$t"
done
for t in "$here"/integration/t-*.sh; do
	[ -f "$t" ] && run_one "integration/$(basename "$t" .sh)" bash "$t"
done

[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
if [ $skipped -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ $failed -eq 0 ]
