#!/bin/bash
# The cost of `run --framework-counters` (issue 21), on the torch stand-in
# of the tests (tests/python/standins) over the simulated CUDA: not a real
# framework, whose memory_stats() costs what it costs (the first table
# separates it out).
# 1. One reading: us per helper reading (memory_stats + the write through
#    gpumemtrace_counters_v1), traced.
# 2. A CPU-bound Python loop of LOOP_S seconds of its own CPU time, traced with and
#    without the flag, at GPUMEMTRACE_SAMPLE_MS 100 (the default) and 10:
#    iterations done (median of ROUNDS interleaved rounds) and the loss
#    against no flag (noisy on a loaded machine), and the helper thread's
#    own CPU time per second of the run (from its schedstat: precise).
# Knobs: ROUNDS (5), LOOP_S (2), N (20000 readings), BUILD (build).
set -u
BUILD=$(cd "${BUILD:-build}" && pwd)
ROUNDS=${ROUNDS:-5} LOOP_S=${LOOP_S:-2} N=${N:-20000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export LD_LIBRARY_PATH=$BUILD/sim PYTHONPATH=$ROOT/tests/python/standins SIMCUDA_CAPACITY=4G
TMP=$(mktemp -d /tmp/gmt-counters.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 2
py=$(command -v python3)

echo "== one reading (torch stand-in, traced)"
LD_PRELOAD=$BUILD/libgpumemtrace.so GPUMEMTRACE_OUTPUT=$TMP/r.%p.gmt "$py" "$ROOT/bench/counters-bench.py" reading "$N"

echo "== CPU-bound loop, $LOOP_S s of its CPU time, $ROUNDS rounds (iterations x1000, median)"
declare -A got cpu
for r in $(seq "$ROUNDS"); do
	for v in noflag flag100 flag10; do
		case $v in
		noflag) args=() ms=100 ;;
		flag100) args=(--framework-counters) ms=100 ;;
		flag10) args=(--framework-counters) ms=10 ;;
		esac
		out=$(GPUMEMTRACE_SAMPLE_MS=$ms "$BUILD/gpumemtrace" run -q "${args[@]}" -o "$TMP/l.%p.gmt" -- \
			"$py" "$ROOT/bench/counters-bench.py" loop "$LOOP_S" 2>/dev/null)
		got[$v]="${got[$v]:-} ${out% *}"
		cpu[$v]="${cpu[$v]:-} ${out#* }"
		rm -f "$TMP"/l.*.gmt
	done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${got[noflag]}" | median)
for v in noflag flag100 flag10; do
	m=$(echo "${got[$v]}" | median)
	c=$(echo "${cpu[$v]}" | median)
	printf '%-8s %12d %8.2f%%  helper CPU %6d us/s   rounds:%s\n' "$v" $((m / 1000)) \
		"$(echo "($base - $m) * 100 / $base" | bc -l)" "$c" "${got[$v]}"
done
