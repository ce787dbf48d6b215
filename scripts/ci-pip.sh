#!/usr/bin/env bash
# CI's pip route, from the clean clone: `pip install .` into a new venv
# builds everything with make (setup.py), then the installed console
# script traces a program on the simulated CUDA and the installed reader
# reads the trace. Needs build/sim (make test builds it). Prints
# "pip-route: 1 passed, 0 failed" or fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/gmt-pip.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/v"
# build isolation fetches setuptools from PyPI; without PyPI, the system's
if ! "$work/v/bin/pip" install -q "$root" >"$work/pip.log" 2>&1; then
	python3 -m venv --system-site-packages "$work/v2"
	"$work/v2/bin/pip" wheel -q --no-build-isolation --no-deps -w "$work/dist" "$root" ||
		{ cat "$work/pip.log"; exit 1; }
	"$work/v/bin/pip" install -q --no-index --no-deps "$work"/dist/*.whl
fi
cd "$work"
LD_LIBRARY_PATH=$root/build/sim "$work/v/bin/gpumemtrace" run -q -o "$work/t.gmt" -- \
	"$root/build/examples/train-loop" >/dev/null 2>&1 ||
	LD_LIBRARY_PATH=$root/build/sim "$work/v/bin/gpumemtrace" run -q -o "$work/t.gmt" -- \
		"$root/build/tests/progs/life" exit 4
"$work/v/bin/python" -c '
import sys, gpumemtrace
t = gpumemtrace.load(sys.argv[1])
assert t.complete and len(t.events) > 0, t
print("pip-route: read %d events of pid %s" % (len(t.events), t.process["pid"]))
' "$work/t.gmt"
echo "pip-route: 1 passed, 0 failed"
