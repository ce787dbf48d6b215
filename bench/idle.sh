#!/bin/bash
# The idle cost of a traced process (issue 18, case 9): one allocation, then
# a sleep. Per variant, over WINDOW seconds of the sleep (starting 1 s after
# the allocation): the flush thread's (gmt-flush) CPU time and wake-ups, and
# the whole process's CPU time, from /proc/PID/task/*/schedstat (ns on CPU)
# and voluntary_ctxt_switches.
#
# usage: bench/idle.sh NAME=LIB[:VAR=VALUE,...] ...
#   e.g. bench/idle.sh new=build/libgpumemtrace.so old=/tmp/old/libgpumemtrace.so \
#            nosample=build/libgpumemtrace.so:GPUMEMTRACE_SAMPLE_MS=0
# Knobs (environment): WINDOW (8 seconds), BUILD (build: the sim and
#   tests/progs/killafter, `make life-progs`).
set -u
BUILD=${BUILD:-build}
WINDOW=${WINDOW:-8}
PROG=$BUILD/tests/progs/killafter
[ $# -gt 0 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
[ -x "$PROG" ] || { echo "idle: no $PROG (make life-progs)" >&2; exit 2; }
TMP=$(mktemp -d /tmp/gmt-idle.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# PID: "flush_ns flush_wakeups process_ns"
sample() {
	local pid=$1 fns=0 fw=0 all=0 t ns
	for t in /proc/"$pid"/task/*; do
		ns=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null) || continue
		all=$((all + ns))
		if [ "$(cat "$t/comm" 2>/dev/null)" = gmt-flush ]; then
			fns=$ns
			fw=$(sed -n 's/^voluntary_ctxt_switches:\s*//p' "$t/status")
		fi
	done
	echo "$fns $fw $all"
}

printf '%-12s %18s %18s %20s\n' variant "flush CPU us/s" "flush wakeups/s" "process CPU us/s"
for spec in "$@"; do
	name=${spec%%=*} rest=${spec#*=}
	lib=${rest%%:*} vars=
	[[ $rest == *:* ]] && vars=${rest#*:}
	[ -f "$lib" ] || { echo "idle: no library $lib" >&2; exit 2; }
	(
		cd "$TMP" || exit 1
		# shellcheck disable=SC2086
		exec env ${vars//,/ } LD_PRELOAD="$(realpath "$OLDPWD/$lib" 2>/dev/null || echo "$lib")" \
			LD_LIBRARY_PATH="$OLDPWD/$BUILD/sim" GPUMEMTRACE_OUTPUT="$TMP/t.%p.gmt" \
			"$OLDPWD/$PROG" 0 $(((WINDOW + 2) * 1000)) 0
	) &
	pid=$!
	sleep 1.3
	read -r f0 w0 a0 < <(sample $pid)
	sleep "$WINDOW"
	read -r f1 w1 a1 < <(sample $pid)
	wait $pid
	awk -v n="$name" -v f=$((f1 - f0)) -v w=$((w1 - w0)) -v a=$((a1 - a0)) -v s="$WINDOW" \
		'BEGIN { printf "%-12s %18.1f %18.1f %20.1f\n", n, f / 1e3 / s, w / s, a / 1e3 / s }'
done
