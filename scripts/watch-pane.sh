#!/usr/bin/env bash
# The README's picture of `gpumemtrace watch`: tests/python/watch-train.py
# (the PyTorch stand-in's caching allocator on the simulated GPU) under
# `gpumemtrace watch --framework-counters` in an 80x24 tmux pane, captured
# once it shows STEP steps or more (default 40). The stand-ins are copied into a
# site-packages folder, as an installed torch would be, so the site rules
# pass over them to the script's own lines.
#   scripts/watch-pane.sh [STEP]    prints the pane
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
step=${1:-40}
work=$(mktemp -d "${TMPDIR:-/tmp}/gmt-pane.XXXXXX")
sock=gmt-pane-$$
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/lib/site-packages"
cp -r "$root/tests/python/standins/." "$work/lib/site-packages/"
cp "$root/tests/python/watch-train.py" "$work/train.py"
tmux -L "$sock" -f /dev/null new-session -d -s w -x 80 -y 24 \
	"cd '$work' && LC_ALL=C.UTF-8 LD_LIBRARY_PATH='$build/sim' \
	PYTHONPATH='$work/lib/site-packages:$root/python' GPUMEMTRACE_LIBRARY='$build/libgpumemtrace.so' \
	'$build/gpumemtrace' watch --framework-counters -- python3 train.py 1000 0.25; sleep 600"
for _ in $(seq 1200); do
	tmux -L "$sock" capture-pane -p -t w >"$work/pane.txt"
	n=$(sed -n 's/.* \([0-9][0-9]*\) steps, the last.*/\1/p' "$work/pane.txt")
	[ "${n:-0}" -ge "$step" ] && break
	sleep 0.1
done
sed 's/ *$//' "$work/pane.txt" | sed "s|$work|~/run|g"
