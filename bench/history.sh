#!/bin/bash
# The cost of `run --framework-history` beyond PyTorch's own (issue 26):
# the helper writing one snapshot into the trace (bench/history-bench.py:
# N entries, S segments of B blocks, shaped as torch.cuda.memory._snapshot()
# returns them), traced: us per entry and per block on the calling thread,
# then the trace's bytes per entry. PyTorch's own cost (recording the
# history: ~2 us per allocation with Python stacks, its documentation;
# _snapshot() itself) needs a GPU and is not measured here.
# Knobs: N (100000), S (200), B (500), ROUNDS (3), BUILD (build).
set -u
BUILD=$(cd "${BUILD:-build}" && pwd)
N=${N:-100000} S=${S:-200} B=${B:-500} ROUNDS=${ROUNDS:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/gmt-history.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
py=$(command -v python3)
echo "load: $(cat /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
	LD_PRELOAD=$BUILD/libgpumemtrace.so GPUMEMTRACE_OUTPUT=$TMP/h$r.gmt \
		"$py" "$ROOT/bench/history-bench.py" "$N" "$S" "$B"
done
LD_PRELOAD=$BUILD/libgpumemtrace.so GPUMEMTRACE_OUTPUT=$TMP/raw.gmt GPUMEMTRACE_COMPRESS=0 \
	"$py" "$ROOT/bench/history-bench.py" "$N" "$S" "$B" >/dev/null
f=$TMP/h1.gmt
bytes=$(stat -c %s "$f") raw=$(stat -c %s "$TMP/raw.gmt")
echo "trace: $raw bytes plain, $bytes compressed, for $N entries and $((S * B)) blocks:" \
	"$(echo "scale=1; $raw / ($N + $S * $B)" | bc) and $(echo "scale=2; $bytes / ($N + $S * $B)" | bc) bytes each" \
	"(a synthetic history repeats more than a real one: compression is the best case)"
"$BUILD/gpumemtrace" dump "$f" | grep -c '^ *#[0-9]' | sed 's/^/entries in the trace: /'
