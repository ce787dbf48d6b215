#!/bin/bash
# The per-process cost of tracing (issue 30.5; docs/performance.md, "The
# per-process cost"): a program that makes one allocation and its free
# (bench/oneshot.c, on the simulated CUDA) started N times by one shell,
# as `gpumemtrace run -- pytest` or a launcher starts many short processes:
#   untraced      sh -c 'for ...; do oneshot; done'
#   traced        the same under LD_PRELOAD (default settings; every
#                 process, the shell too, loads the library)
#   run           gpumemtrace run --no-symbolize -- sh -c '...'
#   run+names     gpumemtrace run -- sh -c '...' (names the N traces' frames
#                 after the command, outside the traced processes)
#   base          (when BASE=old-lib.so is given) traced with that library
# ROUNDS times, alternating, medians; wall ms per process added over
# untraced, and the ratio traced/untraced. Max RSS of one process (GNU
# time, KB), untraced against traced. Knobs: N (200), ROUNDS (5), BASE.
# Results: printed, and bench/results/proccost.txt.
set -u
BUILD=${BUILD:-$(pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-200}
ROUNDS=${ROUNDS:-5}
BASE=${BASE:-}
CLI=$BUILD/gpumemtrace
LIB=$BUILD/libgpumemtrace.so
P=$BUILD/bench/oneshot
W=$BUILD/bench/proccost
OUT=$ROOT/bench/results/proccost.txt
export LD_LIBRARY_PATH=$BUILD/sim
command -v /usr/bin/time >/dev/null || { echo "bench-proccost: needs GNU time (apt-get install time)"; exit 1; }
[ -x "$P" ] || { echo "bench-proccost: $P missing (make bench-progs)"; exit 1; }
mkdir -p "$W" "$ROOT/bench/results"
loop="for i in \$(seq $N); do '$P' || exit 1; done"
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
# wall seconds of a command, appended to $W/$1.t; a failing command stops the bench
timed() {
	local k=$1
	shift
	rm -rf "$W/t" && mkdir -p "$W/t"
	/usr/bin/time -f "%e" -o "$W/time" "$@" >/dev/null 2>"$W/err" || {
		echo "bench-proccost: $k failed:" >&2
		cat "$W/err" >&2
		exit 1
	}
	cat "$W/time" >>"$W/$k.t"
}
rss() { # max RSS in KB of one process, appended to $W/$1.m
	local k=$1
	shift
	rm -rf "$W/t" && mkdir -p "$W/t"
	/usr/bin/time -f "%M" -o "$W/time" "$@" >/dev/null 2>&1
	cat "$W/time" >>"$W/$k.m"
}
kinds="plain traced run names"
[ -n "$BASE" ] && kinds="$kinds base"
for k in $kinds; do : >"$W/$k.t"; done
: >"$W/plain.m"
: >"$W/traced.m"
for r in $(seq "$ROUNDS"); do
	timed plain sh -c "$loop"
	GPUMEMTRACE_OUTPUT="$W/t/%p.gmt" LD_PRELOAD=$LIB timed traced sh -c "$loop"
	timed run "$CLI" run -q --no-symbolize -o "$W/t/%p.gmt" -- sh -c "$loop"
	timed names "$CLI" run -q -o "$W/t/%p.gmt" -- sh -c "$loop"
	[ -n "$BASE" ] && GPUMEMTRACE_OUTPUT="$W/t/%p.gmt" LD_PRELOAD=$BASE timed base sh -c "$loop"
	rss plain "$P"
	GPUMEMTRACE_OUTPUT="$W/t/%p.gmt" LD_PRELOAD=$LIB rss traced "$P"
done
rm -rf "$W/t"
m() { median <"$W/$1.t"; }
per() { echo "$(m "$1") $(m plain) $N" | awk '{printf "%.2f", ($1 - $2) * 1000 / $3}'; }
ratio() { echo "$(m "$1") $(m plain)" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "-" }'; }
{
	echo "proccost: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)," \
		"commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), N=$N ROUNDS=$ROUNDS"
	printf "%-10s %10s %14s %8s\n" kind "wall_s" "added_ms/proc" "x_untraced"
	for k in $kinds; do
		printf "%-10s %10s %14s %8s\n" "$k" "$(m "$k")" "$(per "$k")" "$(ratio "$k")"
	done
	echo "max RSS of one process, KB (median of $ROUNDS): untraced $(median <"$W/plain.m")," \
		"traced $(median <"$W/traced.m")"
} | tee "$OUT"
