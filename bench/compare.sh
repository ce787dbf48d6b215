#!/bin/bash
# Compare builds of the library, or settings, on the hook loop: the added
# cost per alloc+free pair that bench/run.sh's hook part measures, for
# whichever variants are named, interleaved round by round (each round
# runs the untraced loop and every variant once) so the machine's load
# falls on all of them alike. Used for the ablations in docs/performance.md.
#
# usage: bench/compare.sh NAME=LIB[:VAR=VALUE,...] ...
#   e.g. bench/compare.sh new=build/libgpumemtrace.so \
#            mono=build/libgpumemtrace.so:GPUMEMTRACE_CLOCK=0 old=/tmp/old/libgpumemtrace.so
# Knobs (environment): ROUNDS (9), PAIRS (2000000), DEPTH (8: call depth),
#   STACKS (0: GPUMEMTRACE_STACK_DEPTH), MODE (cuda, or cuda-mt: a second
#   thread has made a call first), BUILD (build: hookcost and the sim).
# Prints, per variant, the added CPU ns per pair of the calling thread
# (CLOCK_THREAD_CPUTIME_ID: time waiting for a CPU does not count) and the
# added wall ns, each as the sorted rounds and their median.
set -u
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-9}
PAIRS=${PAIRS:-2000000}
DEPTH=${DEPTH:-8}
STACKS=${STACKS:-0}
MODE=${MODE:-cuda}
PROG=$BUILD/bench/hookcost-fp
[ $# -gt 0 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
[ -x "$PROG" ] || { echo "compare: no $PROG (make $PROG)" >&2; exit 2; }
TMP=$(mktemp -d /tmp/gmt-compare.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
declare -A cpu wall
for ((i = 0; i < ROUNDS; i++)); do
	out=$(LD_LIBRARY_PATH=$BUILD/sim "$PROG" "$MODE" "$DEPTH" "$PAIRS")
	u_cpu=$(field cpu_ns_per_pair <<<"$out") u_wall=$(field ns_per_pair <<<"$out")
	cpu[untraced]+=" $u_cpu" wall[untraced]+=" $u_wall"
	for spec in "$@"; do
		name=${spec%%=*} rest=${spec#*=}
		lib=${rest%%:*} vars=
		[[ $rest == *:* ]] && vars=${rest#*:}
		[ -f "$lib" ] || { echo "compare: no library $lib" >&2; exit 2; }
		out=$(env ${vars//,/ } GPUMEMTRACE_STACK_DEPTH="$STACKS" GPUMEMTRACE_OUTPUT="$TMP/t.gmt" \
			LD_PRELOAD="$lib" LD_LIBRARY_PATH="$BUILD/sim" "$PROG" "$MODE" "$DEPTH" "$PAIRS")
		rm -f "$TMP"/t*.gmt
		cpu[$name]+=" $(echo "$(field cpu_ns_per_pair <<<"$out") - $u_cpu" | bc)"
		wall[$name]+=" $(echo "$(field ns_per_pair <<<"$out") - $u_wall" | bc)"
	done
done
summary() { # values...
	local sorted
	sorted=$(printf '%s\n' "$@" | sort -n | tr '\n' ' ')
	echo "$sorted(median $(printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'))"
}
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) rounds $ROUNDS pairs $PAIRS depth $DEPTH stacks $STACKS mode $MODE"
echo "untraced ns per pair: cpu $(summary ${cpu[untraced]}) wall $(summary ${wall[untraced]})"
for spec in "$@"; do
	name=${spec%%=*}
	echo "$name added: cpu $(summary ${cpu[$name]}) wall $(summary ${wall[$name]})"
done
