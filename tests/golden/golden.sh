#!/usr/bin/env bash
# golden.sh traces: records the golden traces from the workloads.
# golden.sh expect: writes each command's expected output for them.
# golden.sh check:  compares (what tests/integration/t-golden.sh runs).
# Run from anywhere; paths in the outputs are relative to tests/golden.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$here/../../build}
cli=$BUILD/gpumemtrace
cd "$here"

record() { # name mode [n] [env...]
	local name=$1 mode=$2 n=$3
	shift 3
	rm -f "$name.gmt"
	env "$@" GPUMEMTRACE_OUTPUT="$here/$name.gmt" LD_PRELOAD="$BUILD/libgpumemtrace.so" \
		LD_LIBRARY_PATH="$BUILD/sim" "$BUILD/tests/progs/golden-workload" "$mode" "$n" >/dev/null
}

# Each line: an output file name, then the command (run in tests/golden).
commands() {
	for t in train leak holes oom; do
		echo "$t.summary.txt summary $t.gmt"
		echo "$t.summary.json summary --json $t.gmt"
		echo "$t.top.txt top $t.gmt"
		echo "$t.top.json top --json $t.gmt"
		echo "$t.growth.txt growth $t.gmt"
		echo "$t.growth.json growth --json $t.gmt"
		echo "$t.fragmentation.txt fragmentation $t.gmt"
		echo "$t.fragmentation.json fragmentation --json $t.gmt"
		echo "$t.oom.txt oom $t.gmt"
		echo "$t.oom.json oom --json $t.gmt"
		echo "$t.leaks.txt leaks $t.gmt"
		echo "$t.leaks.json leaks --json $t.gmt"
	done
	echo "train.dump.txt dump train.gmt"
	echo "ranks.dump.txt dump rank0.gmt rank1.gmt"
	echo "diff.txt diff train.gmt leak.gmt"
	echo "diff.json diff --json train.gmt leak.gmt"
	echo "check-pass.txt check --max-peak 200MiB train.gmt"
	echo "check-fail.txt check --max-peak 100MiB --max-live-at-end 1MiB leak.gmt"
	echo "check.json check --json --baseline train.gmt --max-increase 5 leak.gmt"
	echo "ranks.summary.txt summary rank0.gmt rank1.gmt"
	echo "ranks.top.txt top rank0.gmt rank1.gmt"
}

run_one() { # command... ; prints stdout, then the exit code
	local rc=0
	"$cli" "$@" 2>/dev/null || rc=$?
	echo "[exit $rc]"
}

case "${1:-check}" in
traces)
	record train train 20
	record leak leak 20 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
	record holes holes 0
	record oom oom 0 SIMCUDA_CAPACITY=$((256 << 20))
	record rank0 train 10 RANK=0
	record rank1 leak 10 RANK=1
	ls -l ./*.gmt
	;;
expect)
	mkdir -p expected
	commands | while read -r out cmd; do
		# shellcheck disable=SC2086
		run_one $cmd >"expected/$out"
	done
	echo "wrote $(ls expected | wc -l) expected outputs"
	;;
check)
	fails=0
	while read -r out cmd; do
		# shellcheck disable=SC2086
		if ! run_one $cmd | diff -u "expected/$out" - >"$BUILD/golden-$out.diff"; then
			echo "differs: gpumemtrace $cmd (see $BUILD/golden-$out.diff)"
			head -20 "$BUILD/golden-$out.diff"
			fails=$((fails + 1))
		fi
	done < <(commands)
	[ $fails -eq 0 ] && echo "all golden outputs match"
	exit $((fails > 0))
	;;
esac
