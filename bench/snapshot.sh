#!/bin/bash
# PyTorch memory snapshots: gpumemtrace against PyTorch's own reader
# (make bench-snapshot; docs/performance.md, "Memory snapshots").
# A stand-in history of STEPS training steps (tests/python/snapgen.py,
# pickled by Python's pickle as _dump_snapshot does; 100,000 steps is 600k
# entries, 30 MB) is read by
#   memviz stats    python3 torch/cuda/_memory_viz.py stats  (segments' totals)
#   memviz trace    python3 torch/cuda/_memory_viz.py trace  (every entry)
#   summary         gpumemtrace summary  (every entry, segments, sites)
#   replay          gpumemtrace replay   (every entry through the model, twice)
#   import          gpumemtrace import -o (the trace kept, zstd)
# ROUNDS times alternating; medians of wall seconds and of peak RSS, and the
# ratios memviz/gpumemtrace (the target: >= 10x faster, <= 1/4 the memory).
# MEMVIZ: the _memory_viz.py to run (default: the installed torch's, found
# without importing torch, which needs CUDA libraries; _memory_viz.py itself
# imports only the standard library). Knobs: STEPS (100000), ROUNDS (3).
# Results: printed, and bench/results/snapshot.txt.
set -u
BUILD=${BUILD:-$(pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-100000}
CLI=$BUILD/gpumemtrace
W=$BUILD/bench/snapshot
mkdir -p "$W" "$ROOT/bench/results"
OUT=$ROOT/bench/results/snapshot.txt
command -v /usr/bin/time >/dev/null || { echo "bench-snapshot: needs GNU time (apt-get install time)"; exit 1; }
if [ -z "${MEMVIZ:-}" ]; then
	MEMVIZ=$(python3 -c 'import importlib.util, os
s = importlib.util.find_spec("torch")
print(os.path.join(s.submodule_search_locations[0], "cuda", "_memory_viz.py") if s else "")')
fi
[ -f "$MEMVIZ" ] || { echo "bench-snapshot: no _memory_viz.py (pip install torch, or MEMVIZ=path)"; exit 1; }

P=$W/s$STEPS.pickle
[ -f "$P" ] || python3 "$ROOT/tests/python/snapgen.py" "$P" --steps "$STEPS" || exit 1
entries=$(python3 -c "import pickle; print(sum(len(t) for t in pickle.load(open('$P', 'rb'))['device_traces']))")

# "WALL MAXRSS_KB CPU" of a command (CPU: user + system seconds, what a
# loaded machine's scheduling does not stretch), its output dropped
timed() { /usr/bin/time -f "%e %M %U %S" -o "$W/time" "$@" >/dev/null 2>&1 || echo "failed: $*" >&2; cat "$W/time"; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
ratio() { echo "$1 $2" | awk '{ if ($2 > 0) printf "%.1f", $1 / $2; else print "-" }'; }

names=("memviz stats" "memviz trace" summary replay import)
run_one() {
	case $1 in
	0) timed python3 "$MEMVIZ" stats "$P" ;;
	1) timed python3 "$MEMVIZ" trace "$P" ;;
	2) timed "$CLI" summary "$P" ;;
	3) timed "$CLI" replay "$P" ;;
	4) rm -f "$W/x.gmt"; timed "$CLI" import "$P" -o "$W/x.gmt" ;;
	esac
}
for i in 0 1 2 3 4; do : >"$W/r$i.t"; done
for r in $(seq "$ROUNDS"); do
	for i in 0 1 2 3 4; do run_one $i >>"$W/r$i.t"; done
done
{
	echo "snapshot: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)," \
		"commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), ROUNDS=$ROUNDS"
	echo "stand-in: $STEPS steps, $entries entries, $(stat -c %s "$P") bytes; memviz: $MEMVIZ"
	printf "%-13s %8s %9s %8s\n" reader wall_s rss_mib cpu_s
} | tee "$OUT"
for i in 0 1 2 3 4; do
	w[$i]=$(cut -d' ' -f1 "$W/r$i.t" | median)
	m[$i]=$(cut -d' ' -f2 "$W/r$i.t" | median | awk '{printf "%.1f", $1 / 1024}')
	c[$i]=$(awk '{printf "%.2f\n", $3 + $4}' "$W/r$i.t" | median)
	printf "%-13s %8s %9s %8s\n" "${names[$i]}" "${w[$i]}" "${m[$i]}" "${c[$i]}" | tee -a "$OUT"
done
echo "memviz stats / summary: $(ratio "${w[0]}" "${w[2]}")x the time, $(ratio "${m[0]}" "${m[2]}")x the memory" | tee -a "$OUT"
echo "memviz trace / summary: $(ratio "${w[1]}" "${w[2]}")x the time, $(ratio "${m[1]}" "${m[2]}")x the memory" | tee -a "$OUT"
echo "memviz trace / replay:  $(ratio "${w[1]}" "${w[3]}")x the time, $(ratio "${m[1]}" "${m[3]}")x the memory" | tee -a "$OUT"
echo "CPU seconds: memviz stats / summary $(ratio "${c[0]}" "${c[2]}")x, memviz trace / summary $(ratio "${c[1]}" "${c[2]}")x" | tee -a "$OUT"
