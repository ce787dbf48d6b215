#!/bin/bash
# Naming frames after the run (make bench-naming; docs/performance.md,
# "Naming frames"). Programs from bench/naming-gen.py, traced without names
# (GPUMEMTRACE_SYMBOLIZE=0, as a killed process leaves them):
#   10k    10,000 distinct frames in one compile unit (flat 1000 10)
#   100k   100,000 distinct frames in one compile unit (flat 1000 100)
#   paths  1,022 functions, 10,000 distinct stacks 5 deep (paths 1022)
#   tiny   4 events (flat 1 2): the fixed cost
# For each: `gpumemtrace symbolize` on a copy (the naming itself: every
# frame; wall and user CPU), then `summary` and `top` on the nameless trace and on the named
# copy, ROUNDS times alternating, medians of wall and user CPU, each with
# the ratio nameless/named (the target: <= 2; GNU time's 10 ms resolution
# makes the tiny trace's CPU ratio meaningless). And the per-process cost
# on tiny: untraced, traced, SYMBOLIZE=1, `run` naming after the command.
# Knobs: ROUNDS (3). Results: printed, and bench/results/naming.txt.
set -u
BUILD=${BUILD:-$(pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
CLI=$BUILD/gpumemtrace
LIB=$BUILD/libgpumemtrace.so
W=$BUILD/bench/naming
mkdir -p "$W" "$ROOT/bench/results"
OUT=$ROOT/bench/results/naming.txt
export LD_LIBRARY_PATH=$BUILD/sim
command -v /usr/bin/time >/dev/null || { echo "bench-naming: needs GNU time (apt-get install time)"; exit 1; }

build() { # name gen-args...
	local name=$1
	shift
	if [ ! -x "$W/$name" ] || [ "$ROOT/bench/naming-gen.py" -nt "$W/$name" ]; then
		echo "building $name ($*): a large compile unit, this takes a while" >&2
		python3 "$ROOT/bench/naming-gen.py" "$@" >"$W/$name.c"
		cc -std=gnu11 -O1 -g -I"$ROOT" -I"$ROOT/include" -I"$ROOT/tests/sim" "$W/$name.c" \
			-o "$W/$name" -L"$BUILD/sim" -l:libcuda.so.1 || exit 1
	fi
}
# "WALL USER" seconds of a command, its output dropped
timed() { /usr/bin/time -f "%e %U" -o "$W/time" "$@" >/dev/null 2>&1; cat "$W/time"; }
ratio() { echo "$1 $2" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "-" }'; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }

build 10k flat 1000 10
build 100k flat 1000 100
build paths paths 1022
build tiny flat 1 2
{
	echo "naming: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)," \
		"commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), ROUNDS=$ROUNDS"
	printf "%-6s %8s %8s %8s | %-7s %9s %9s %6s | %9s %9s %6s\n" trace frames name_s name_cpu report \
		nameless_s named_s ratio cpu_less cpu_named ratio
} | tee "$OUT"
for name in 10k 100k paths tiny; do
	args=()
	[ $name = paths ] && args=(10000 5)
	rm -f "$W/$name.gmt"
	GPUMEMTRACE_SYMBOLIZE=0 GPUMEMTRACE_OUTPUT="$W/$name.gmt" LD_PRELOAD=$LIB "$W/$name" "${args[@]}"
	: >"$W/name.t"
	for r in $(seq "$ROUNDS"); do
		cp "$W/$name.gmt" "$W/$name.named.gmt"
		timed "$CLI" symbolize "$W/$name.named.gmt" >>"$W/name.t"
	done
	frames=$("$CLI" dump "$W/$name.named.gmt" | grep -c ' SYMBOL ')
	name_s=$(cut -d' ' -f1 "$W/name.t" | median)
	name_cpu=$(cut -d' ' -f2 "$W/name.t" | median)
	for report in summary top; do
		: >"$W/a.t"
		: >"$W/b.t"
		for r in $(seq "$ROUNDS"); do
			timed "$CLI" $report "$W/$name.gmt" >>"$W/a.t"
			timed "$CLI" $report "$W/$name.named.gmt" >>"$W/b.t"
		done
		a=$(cut -d' ' -f1 "$W/a.t" | median) b=$(cut -d' ' -f1 "$W/b.t" | median)
		ac=$(cut -d' ' -f2 "$W/a.t" | median) bc=$(cut -d' ' -f2 "$W/b.t" | median)
		printf "%-6s %8s %8s %8s | %-7s %9s %9s %6s | %9s %9s %6s\n" $name "$frames" "$name_s" "$name_cpu" \
			$report "$a" "$b" "$(ratio "$a" "$b")" "$ac" "$bc" "$(ratio "$ac" "$bc")" |
			tee -a "$OUT"
	done
done
# Many processes (run -- pytest, a job's ranks): 8 tiny traces named by one
# symbolize (each module file read once) against 8 symbolize processes.
for i in 1 2 3 4 5 6 7 8; do
	GPUMEMTRACE_SYMBOLIZE=0 GPUMEMTRACE_OUTPUT="$W/r$i.gmt" LD_PRELOAD=$LIB "$W/tiny"
done
: >"$W/one.t"
: >"$W/each.t"
for r in $(seq "$ROUNDS"); do
	for i in 1 2 3 4 5 6 7 8; do cp "$W/r$i.gmt" "$W/s$i.gmt"; done
	timed "$CLI" symbolize "$W"/s[1-8].gmt >>"$W/one.t"
	for i in 1 2 3 4 5 6 7 8; do cp "$W/r$i.gmt" "$W/s$i.gmt"; done
	timed sh -c "for i in 1 2 3 4 5 6 7 8; do '$CLI' symbolize '$W'/s\$i.gmt; done" >>"$W/each.t"
done
echo "8 tiny traces, wall s: one symbolize $(cut -d' ' -f1 "$W/one.t" | median)," \
	"8 symbolize processes $(cut -d' ' -f1 "$W/each.t" | median)" | tee -a "$OUT"
# The per-process cost (tiny: 4 events): untraced; traced (the library
# names nothing by default: the CLI does, after the run); traced with the
# library naming in its scanning thread (GPUMEMTRACE_SYMBOLIZE=1); and
# `gpumemtrace run`, which names the trace's frames after the command ends,
# against `run --no-symbolize`.
for k in plain off on run norun; do : >"$W/$k.t"; done
for r in $(seq $((ROUNDS * 5))); do
	timed "$W/tiny" >>"$W/plain.t"
	GPUMEMTRACE_OUTPUT="$W/x.gmt" LD_PRELOAD=$LIB timed "$W/tiny" >>"$W/off.t"
	rm -f "$W/x.gmt"
	GPUMEMTRACE_SYMBOLIZE=1 GPUMEMTRACE_OUTPUT="$W/x.gmt" LD_PRELOAD=$LIB timed "$W/tiny" >>"$W/on.t"
	rm -f "$W/x.gmt"
	timed "$CLI" run -q -o "$W/x.gmt" -- "$W/tiny" >>"$W/run.t"
	rm -f "$W/x.gmt"
	timed "$CLI" run -q --no-symbolize -o "$W/x.gmt" -- "$W/tiny" >>"$W/norun.t"
	rm -f "$W/x.gmt"
done
m() { cut -d' ' -f1 "$W/$1.t" | median; }
echo "tiny process, wall s (median of $((ROUNDS * 5))): untraced $(m plain), traced $(m off)," \
	"traced with GPUMEMTRACE_SYMBOLIZE=1 $(m on); gpumemtrace run $(m run)," \
	"run --no-symbolize $(m norun)" | tee -a "$OUT"
