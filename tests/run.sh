#!/usr/bin/env bash
# Runs every unit test binary and integration script, JOBS at a time
# (default: the CPU count), each in its own temporary directory under a
# 300 s timeout; the tests marked serial run afterwards, one at a time.
# Prints a line per test as it ends; the last line is "N passed, N failed"
# (", N skipped" when some skipped). tests/README.md has the conventions.
#
#   tests/run.sh [FILTER]     FILTER: a substring of the names ("unit/", "t-cli-")
#   JOBS=1 tests/run.sh       one at a time (make check J=1)
set -u
here=$(cd "$(dirname "$0")" && pwd)
# Absolute: each test runs in its own directory.
BUILD=$(cd "${BUILD:-$here/../build}" && pwd) || {
	echo "run.sh: no build directory ${BUILD:-$here/../build} (make check builds it)" >&2
	exit 2
}
export BUILD
export GMT_LIB=$BUILD/libgpumemtrace.so
export GMT_CLI=$BUILD/gpumemtrace
export SIM_DIR=$BUILD/sim
export PROG_DIR=$BUILD/tests/progs
export TESTS_DIR=$here
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
filter=${1:-}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 1)}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || {
	echo "run.sh: JOBS must be a positive number, not '$jobs'" >&2
	exit 2
}

# Unit tests that must run alone (integration scripts say so themselves,
# with a line "# serial: why" of their own).
serial_units=""

logdir=$BUILD/tests/logs
times=$BUILD/tests/durations # "seconds name" of the last run: the longest start first
mkdir -p "$logdir"
res=$(mktemp -d "${TMPDIR:-/tmp}/gmt-run.XXXXXX")

names=() cmds=() parallel=() serial=()
add() { # name serial(0/1) command...
	local name=$1 alone=$2
	shift 2
	[ -n "$filter" ] && [[ $name != *$filter* ]] && return
	names+=("$name")
	cmds+=("$(printf '%q ' "$@")")
	if [ "$alone" = 1 ]; then serial+=($((${#names[@]} - 1))); else parallel+=($((${#names[@]} - 1))); fi
}
# A unit test is a source in tests/unit; a binary left in the build from a
# source since removed or renamed is not run.
for src in "$here"/unit/test-*.c; do
	n=$(basename "$src" .c) t=$BUILD/tests/unit/$(basename "$src" .c)
	[ -x "$t" ] || { add "unit/$n" 0 sh -c "echo 'not built: $t (make unit-tests)'; exit 1"; continue; }
	add "unit/$n" "$([[ " $serial_units " == *" $n "* ]] && echo 1 || echo 0)" "$t"
done
for t in "$here"/integration/t-*.sh; do
	[ -f "$t" ] || continue
	add "integration/$(basename "$t" .sh)" "$(grep -qE '^# serial($|:)' "$t" && echo 1 || echo 0)" bash "$t"
done
if [ ${#names[@]} -eq 0 ]; then
	echo "no test matches '$filter'"
	echo "0 passed, 1 failed"
	exit 1
fi

# Longest first (by the last run's times; new tests count as long), so a
# long test does not start last and run on alone.
declare -A last=()
if [ -f "$times" ]; then
	while read -r s n; do last[$n]=$s; done <"$times"
fi
if [ ${#parallel[@]} -gt 1 ]; then
	mapfile -t parallel < <(for i in "${parallel[@]}"; do
		echo "${last[${names[$i]}]:-999} $i"
	done | sort -s -k1,1rn | cut -d' ' -f2)
fi

# Runs test i in the background: its log in $logdir, "exit seconds dir" in
# $res/i. The directory of a failed test is kept for a look.
declare -A running=() # index -> pid
start_test() {
	local i=$1
	(
		log=$logdir/${names[$i]}.log start=$SECONDS
		mkdir -p "$(dirname "$log")"
		dir=$(mktemp -d "${TMPDIR:-/tmp}/gmt-test.XXXXXX")
		# timeout runs the test in a process group of its own: pass a
		# TERM on, so an interrupted run leaves nothing behind.
		trap 'kill -TERM $pid 2>/dev/null' TERM
		eval "cd \"\$dir\" && exec timeout -k 10 300 ${cmds[$i]}" </dev/null >"$log" 2>&1 &
		pid=$!
		while :; do
			wait $pid
			rc=$?
			kill -0 $pid 2>/dev/null || break # else a trapped signal ended the wait
		done
		if [ $rc -eq 0 ] || [ $rc -eq 77 ]; then rm -rf "$dir"; fi
		echo "$rc $((SECONDS - start)) $dir" >"$res/$i.tmp" && mv "$res/$i.tmp" "$res/$i"
	) &
	running[$i]=$!
}

passed=0 failed=0 skipped=0 failures=()
declare -A took=()
report() { # i: the line of finished test i
	local i=$1 name=${names[$1]} rc secs dir log
	read -r rc secs dir <"$res/$i" || rc=125 secs=0 dir=?
	log=$logdir/$name.log
	took[$name]=$secs
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		echo "ok   $name (${secs}s)"
	elif [ "$rc" -eq 77 ]; then
		skipped=$((skipped + 1))
		echo "skip $name: $(tail -n 1 "$log")"
	else
		failed=$((failed + 1))
		failures+=("$i")
		[ "$rc" -eq 124 ] && rc="$rc: timed out after 300 s"
		echo "FAIL $name (exit $rc, ${secs}s, its directory $dir); last lines of $log:"
		tail -n 15 "$log" | sed 's/^/     | /'
	fi
}

# Waits until a running test has ended, and reports those that have.
reap() {
	local i gone
	while :; do
		gone=0
		for i in "${!running[@]}"; do
			if [ ! -f "$res/$i" ] && kill -0 "${running[$i]}" 2>/dev/null; then
				continue
			fi
			wait "${running[$i]}" 2>/dev/null
			unset "running[$i]"
			report "$i"
			gone=1
		done
		[ $gone = 1 ] || [ ${#running[@]} = 0 ] && return
		wait -n 2>/dev/null
	done
}

interrupted() {
	trap - INT TERM
	local i
	for i in "${!running[@]}"; do kill -TERM "${running[$i]}" 2>/dev/null; done
	wait
	rm -rf "$res"
	echo "interrupted"
	exit 130
}
trap interrupted INT TERM

for i in "${parallel[@]}"; do
	while [ ${#running[@]} -ge "$jobs" ]; do reap; done
	start_test "$i"
done
while [ ${#running[@]} -gt 0 ]; do reap; done
for i in "${serial[@]}"; do
	start_test "$i"
	while [ ${#running[@]} -gt 0 ]; do reap; done
done
rm -rf "$res"

# Keep the times of tests that did not run this time.
for n in "${!took[@]}"; do last[$n]=${took[$n]}; done
for n in "${!last[@]}"; do echo "${last[$n]} $n"; done | sort -k2 >"$times.tmp" && mv "$times.tmp" "$times"

if [ ${#failures[@]} -gt 0 ]; then
	mapfile -t failures < <(printf '%s\n' "${failures[@]}" | sort -n)
	echo "failed: $(for i in "${failures[@]}"; do printf '%s ' "${names[$i]}"; done | sed 's/ $//')"
fi
if [ $skipped -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ $failed -eq 0 ]
