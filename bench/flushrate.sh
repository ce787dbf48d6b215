#!/bin/bash
# The flush's lossless rate (issue 30.6; docs/performance.md, "The flush
# under an 8-thread burst"): bench/burst.c's THREADS (8) threads make
# cuMemAlloc/cuMemFree pairs paced to RATE events a second in all, for
# BURST_S (0.5) seconds, on the simulated driver without its books (SIMCUDA_BOOKS=0:
# no lock, the tracer's own capacity), default ring, stacks on:
#   untraced               the rate the program reaches by itself
#   FULL_WAIT_MS=0         threads never wait for ring space: a full ring
#                          loses the event
#   default (1000)         a full ring makes the thread wait for the flush
# for each RATE of RATES, ROUNDS (3) times alternating: the rate reached
# (events / the program's wall time) and the events lost (from the trace),
# medians. The lossless rate of a setting: the highest rate reached by a
# RATE whose rounds all lost nothing. Results: printed, and
# bench/results/flushrate.txt.
set -u
BUILD=${BUILD:-$(pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
THREADS=${THREADS:-8}
BURST_S=${BURST_S:-0.5}
ROUNDS=${ROUNDS:-3}
RATES=${RATES:-"1000000 2000000 3000000 4000000 5000000 6000000 8000000"}
CLI=$BUILD/gpumemtrace
LIB=$BUILD/libgpumemtrace.so
P=$BUILD/bench/burst
W=$BUILD/bench/flushrate
OUT=$ROOT/bench/results/flushrate.txt
export LD_LIBRARY_PATH=$BUILD/sim SIMCUDA_BOOKS=0
[ -x "$P" ] || { echo "bench-flushrate: $P missing (make bench-progs)"; exit 1; }
mkdir -p "$W" "$ROOT/bench/results"
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
rate_of() { sed -n 's/.* rate=\([0-9]*\).*/\1/p'; }
# one traced run: "RATE_REACHED LOST"
traced() { # FULL_WAIT_MS RATE
	rm -f "$W/t.gmt"
	local r
	r=$(GPUMEMTRACE_FULL_WAIT_MS=$1 GPUMEMTRACE_OUTPUT="$W/t.gmt" LD_PRELOAD=$LIB \
		"$P" "$THREADS" "$2" "$BURST_S" 2>/dev/null | rate_of)
	local lost
	lost=$("$CLI" summary --json "$W/t.gmt" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["lost_events"])' 2>/dev/null)
	echo "${r:-0} ${lost:-?}"
}
{
	echo "flushrate: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)," \
		"commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), THREADS=$THREADS" \
		"BURST_S=$BURST_S ROUNDS=$ROUNDS"
	printf "%10s | %10s | %10s %10s %6s | %10s %10s %6s\n" target untraced "wait=0" lost "all0" \
		"default" lost "all0"
} | tee "$OUT"
best0=0
bestd=0
for rate in $RATES; do
	: >"$W/u" && : >"$W/a" && : >"$W/b"
	for r in $(seq "$ROUNDS"); do
		"$P" "$THREADS" "$rate" "$BURST_S" | rate_of >>"$W/u"
		traced 0 "$rate" >>"$W/a"
		traced 1000 "$rate" >>"$W/b"
	done
	u=$(median <"$W/u")
	ar=$(cut -d' ' -f1 "$W/a" | median) al=$(cut -d' ' -f2 "$W/a" | median)
	br=$(cut -d' ' -f1 "$W/b" | median) bl=$(cut -d' ' -f2 "$W/b" | median)
	a0=$(awk '$2 != 0 {n++} END {print n ? "no" : "yes"}' "$W/a")
	b0=$(awk '$2 != 0 {n++} END {print n ? "no" : "yes"}' "$W/b")
	[ "$a0" = yes ] && [ "${ar%.*}" -gt "$best0" ] && best0=${ar%.*}
	[ "$b0" = yes ] && [ "${br%.*}" -gt "$bestd" ] && bestd=${br%.*}
	printf "%10s | %10s | %10s %10s %6s | %10s %10s %6s\n" "$rate" "$u" "$ar" "$al" "$a0" "$br" "$bl" \
		"$b0" | tee -a "$OUT"
done
echo "lossless rate, events/s: FULL_WAIT_MS=0 $best0, default $bestd (load now" \
	"$(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUT"
rm -f "$W/t.gmt"
