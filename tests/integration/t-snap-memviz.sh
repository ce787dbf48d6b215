#!/usr/bin/env bash
# PyTorch's own reader agrees with ours: torch/cuda/_memory_viz.py (stats and
# trace, run as Python's pickle reads the file) prints the same segments,
# reserved, allocated (asked), free and internal-free totals and the same
# entry count per device as `gpumemtrace replay --json`, on stand-in
# snapshots (one and two devices, a wrapped history, expandable segments with
# an oom entry, C++ frames, no time_us). _memory_viz.py imports only the
# standard library: it is found in GMT_TORCH_SRC (an unpacked torch wheel's
# torch/ folder) or an installed torch, without importing torch; the test
# skips without one (CI does not install torch).
. "$(dirname "$0")/lib.sh"
G=$GMT_CLI
GEN=$TESTS_DIR/python/snapgen.py
command -v python3 >/dev/null || skip "python3 is needed"
MEMVIZ=
[ -n "${GMT_TORCH_SRC:-}" ] && MEMVIZ=$GMT_TORCH_SRC/cuda/_memory_viz.py
[ -n "$MEMVIZ" ] || MEMVIZ=$(python3 -c 'import importlib.util, os
s = importlib.util.find_spec("torch")
print(os.path.join(s.submodule_search_locations[0], "cuda", "_memory_viz.py") if s else "")')
[ -f "$MEMVIZ" ] || skip "no torch/cuda/_memory_viz.py (pip install torch, or GMT_TORCH_SRC=.../torch)"
n=0
for args in "" "--devices 2" "--wrap 7 --steps 30" "--expandable --oom" "--cpp-frames" "--no-time --steps 3"; do
	n=$((n + 1))
	python3 "$GEN" s$n.pickle $args || fail "snapgen $args"
	"$G" replay --json s$n.pickle >s$n.json || fail "replay $args"
	python3 "$TESTS_DIR/python/memviz-compare.py" "$MEMVIZ" s$n.pickle s$n.json >c$n.txt ||
		fail "snapgen $args: _memory_viz.py and gpumemtrace differ:
$(cat c$n.txt)"
done
echo "ok: $n snapshots, totals as $MEMVIZ prints them"
