#!/usr/bin/env bash
# Traces the bundled training-loop sample on the simulated GPU and prints
# its summary. Usage: scripts/demo.sh [BUILD_DIR]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
out=$build/demo
rm -rf "$out" && mkdir -p "$out"
cd "$out"
echo "\$ LD_PRELOAD=$build/libgpumemtrace.so ./train-loop"
LD_PRELOAD=$build/libgpumemtrace.so LD_LIBRARY_PATH=$build/sim \
	GPUMEMTRACE_OUTPUT=$out/train-loop.gmt "$build/examples/train-loop"
echo
echo "\$ gpumemtrace summary $out/train-loop.gmt"
"$build/gpumemtrace" summary "$out/train-loop.gmt"
