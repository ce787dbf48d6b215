#!/bin/bash
# What tracing adds to a process's end (issue 29.1's target: exit and _exit
# add at most 50 ms to the untraced time): wall ms of programs whose run
# is mostly start-up and exit, untraced and traced (default settings),
# ROUNDS times alternating, medians, and the difference. Cases:
#   exit     tests/progs/life exit 20: 20 events, then exit()
#   sigexit  tests/progs/exitmalloc 100: exit(3) from a SIGTERM handler
#            that interrupted malloc, another thread's malloc waiting for
#            good (the final flush must need none)
# Knobs: ROUNDS (9). Results: printed, and bench/results/exitcost.txt.
set -u
BUILD=${BUILD:-$(pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-9}
LIB=$BUILD/libgpumemtrace.so
OUT=$ROOT/bench/results/exitcost.txt
W=$(mktemp -d "${TMPDIR:-/tmp}/gmt-exitcost.XXXXXX")
trap 'rm -rf "$W"' EXIT
export LD_LIBRARY_PATH=$BUILD/sim
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
ms() { # command...: wall ms (exit status ignored: exitmalloc exits 3)
	local t0 t1
	t0=$(date +%s%N)
	(cd "$W" && "$@" >/dev/null 2>&1)
	t1=$(date +%s%N)
	rm -f "$W"/*.gmt
	echo $(((t1 - t0) / 1000))
}
{
	echo "exitcost: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%RZ), commit $(git -C "$ROOT" rev-parse --short HEAD), ROUNDS=$ROUNDS"
	printf '%-8s %12s %12s %10s\n' case untraced_ms traced_ms added_ms
	for c in exit sigexit; do
		case $c in
		exit) cmd=("$BUILD/tests/progs/life" exit 20) ;;
		sigexit) cmd=("$BUILD/tests/progs/exitmalloc" 100) ;;
		esac
		: >"$W/u" && : >"$W/t"
		for _ in $(seq "$ROUNDS"); do
			ms "${cmd[@]}" >>"$W/u"
			ms env LD_PRELOAD="$LIB" "${cmd[@]}" >>"$W/t"
		done
		u=$(median <"$W/u") t=$(median <"$W/t")
		awk -v c=$c -v u="$u" -v t="$t" 'BEGIN {printf "%-8s %12.1f %12.1f %10.1f\n", c, u / 1000, t / 1000, (t - u) / 1000}'
	done
} | tee "$OUT"
