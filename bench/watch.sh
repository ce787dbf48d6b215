#!/usr/bin/env bash
# gpumemtrace watch's own cost (make bench-watch; docs/performance.md):
# bench/workload.c (256 stacks, 4096 slots of mixed lifetimes) runs traced
# at RATE allocation and free calls a second (default 100k) for EVENTS
# calls (default 10M: 100 s), with a mark "step N" each second, and
# `watch --json --interval 1 TRACE` follows its trace from the first chunk
# to the trailer, its output to /dev/null. Reported: watch's CPU time (user
# + sys) and resident memory in each tenth of the run (/proc), and in all
# (getrusage) as a share of the traced program's run time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
EVENTS=${EVENTS:-10000000}
RATE=${RATE:-100000}
work=$(mktemp -d "${TMPDIR:-/tmp}/gmt-watchbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "watch-bench: $(date -u +%FT%TZ) $(git -C "$root" rev-parse --short HEAD) nproc $(nproc) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "workload: $EVENTS calls at $RATE a second"
start=$(date +%s.%N)
GPUMEMTRACE_OUTPUT=$work/live.gmt LD_PRELOAD=$BUILD/libgpumemtrace.so LD_LIBRARY_PATH=$BUILD/sim \
	"$BUILD/bench/workload" cuda "$EVENTS" "$RATE" >/dev/null &
prog=$!
while [ ! -s "$work/live.gmt" ]; do sleep 0.01; done
# watch's whole CPU time and peak RSS from getrusage once it ended
python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:], stdout=open(sys.argv[1] + ".json", "w"))
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%d %.3f %d\n" % (rc, r.ru_utime + r.ru_stime, r.ru_maxrss))' \
	"$work/usage" "$BUILD/gpumemtrace" watch --json --interval 1 "$work/live.gmt" 2>"$work/watch.err" &
runner=$!
w= # watch itself, by its command line (its folder is this run's own)
while [ -z "$w" ]; do w=$(pgrep -n -f "^$BUILD/gpumemtrace watch --json --interval 1 $work/live.gmt" || true); done
secs=$(python3 -c "print($EVENTS / $RATE)")
tick=$(python3 -c "print($secs / 10)")
hz=$(getconf CLK_TCK)
cpu() { awk -v hz="$hz" '{ print ($14 + $15) / hz }' "/proc/$w/stat" 2>/dev/null || echo -; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$w/status" 2>/dev/null || echo -; }
echo "  tenth  watch_cpu_s  in_it  rss_kib  load"
last=0
for k in $(seq 10); do
	sleep "$tick"
	c=$(cpu)
	[ "$c" = - ] && break
	printf "  %-5s  %-11s  %-5s  %-7s  %s\n" "$k" "$c" "$(awk -v a="$c" -v b="$last" 'BEGIN { printf "%.2f", a - b }')" "$(rss)" "$(cut -d' ' -f1 /proc/loadavg)"
	last=$c
done
wait "$prog"
pend=$(date +%s.%N)
wait "$runner"
cat "$work/watch.err"
python3 - "$work/usage.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
d = json.loads(lines[-1])
print("watch: %d snapshots, the last: %s, %d events, %d steps, warnings %s"
      % (len(lines), d["state"], d["events"], d["steps"], d["warnings"]))
PY
read -r rc c peak <"$work/usage"
[ "$rc" = 0 ] || echo "watch: exit $rc"
n=$("$BUILD/gpumemtrace" summary --json "$work/live.gmt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
awk -v c="$c" -v s="$start" -v e="$pend" -v peak="$peak" -v n="$n" -v size="$(stat -c %s "$work/live.gmt")" 'BEGIN {
	printf "trace: %d events, %.1f MB; the program ran %.1f s\n", n, size / 1e6, e - s
	printf "watch: %.2f s of CPU: %.2f%% of the run; peak RSS %.1f MiB\n", c, 100 * c / (e - s), peak / 1024 }'
