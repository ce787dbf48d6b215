#!/usr/bin/env bash
# The Python package's costs (make bench-python; docs/performance.md):
#  reader  events/s into Arrow (gpumemtrace.load(...).events.to_arrow())
#          against `gpumemtrace export --format csv` + pandas.read_csv, on
#          one trace of bench/workload.c (EVENTS, default 10M), in one run:
#          the ratio is the figure. ROUNDS rounds, alternating.
#  plugin  ms per test that `pytest --gpumemtrace` adds: TESTS tests that
#          each allocate and free 1 MiB on the simulated CUDA, run three
#          ways: untraced, under `gpumemtrace run` (traced, no plugin), and
#          with the plugin; (plugin - traced) / TESTS.
#  plugin-ab  the same tests with the plugin, alternating the build's
#          library and LIB_B (another build's libgpumemtrace.so), each
#          against `gpumemtrace run` with the same library: ms a test each
#          and their ratio, per round (a change to the plugin's wait).
# Needs build/pyvenv (scripts/python-deps.sh) or PY with pyarrow and pandas.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
PY=${PY:-$root/build/pyvenv/bin/python}
EVENTS=${EVENTS:-10000000}
ROUNDS=${ROUNDS:-3}
TESTS=${TESTS:-300}
what=${1:-all}
work=$(mktemp -d "${TMPDIR:-/tmp}/gmt-pybench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PYTHONPATH=$root/python GPUMEMTRACE_CLI=$BUILD/gpumemtrace \
	GPUMEMTRACE_LIBRARY=$BUILD/libgpumemtrace.so GPUMEMTRACE_READER_LIBRARY=$BUILD/libgpumemtrace-reader.so
echo "python-bench: $(date -u +%FT%TZ) $(git -C "$root" rev-parse --short HEAD) nproc $(nproc)"

now() { date +%s.%N; }

reader() {
	LD_LIBRARY_PATH=$BUILD/sim "$BUILD/gpumemtrace" run -q -o "$work/w.gmt" -- \
		"$BUILD/bench/workload" cuda "$EVENTS" >/dev/null
	local n
	n=$("$BUILD/gpumemtrace" summary --json "$work/w.gmt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["events"])')
	echo "reader: trace of $n events, $(du -h "$work/w.gmt" | cut -f1)"
	for r in $(seq "$ROUNDS"); do
		echo "  round $r: load $(cut -d' ' -f1-3 /proc/loadavg)"
		"$PY" - "$work/w.gmt" <<'PY'
import sys, time, gpumemtrace
t0 = time.perf_counter()
t = gpumemtrace.load(sys.argv[1])
table = t.events.to_arrow()
dt = time.perf_counter() - t0
print("    arrow: %d rows, %d columns in %.2f s: %.2fM events/s" % (table.num_rows, table.num_columns, dt, table.num_rows / dt / 1e6))
PY
		local t0 t1
		t0=$(now)
		"$BUILD/gpumemtrace" export --format csv "$work/w.gmt" -o "$work/w.csv"
		"$PY" -c 'import pandas, sys; df = pandas.read_csv(sys.argv[1]); print("    csv: %d rows" % len(df))' "$work/w.csv"
		t1=$(now)
		awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "    csv + pandas.read_csv: %.2f s: %.2fM events/s\n", b - a, n / (b - a) / 1e6 }'
		rm -f "$work/w.csv"
	done
}

plugin() {
	mkdir -p "$work/p"
	{
		echo 'import ctypes'
		echo '_rt = ctypes.CDLL("libcudart.so.13")'
		echo 'def one():'
		echo '    p = ctypes.c_void_p()'
		echo '    assert _rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0'
		echo '    assert _rt.cudaFree(p) == 0'
		for i in $(seq "$TESTS"); do printf 'def test_%d():\n    one()\n' "$i"; done
	} >"$work/p/test_many.py"
	cd "$work/p"
	export LD_LIBRARY_PATH=$BUILD/sim PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
	local args=(-q -p no:cacheprovider -p gpumemtrace.pytest_plugin test_many.py)
	for r in $(seq "$ROUNDS"); do
		local a b c d e f
		a=$(now); "$PY" -m pytest "${args[@]}" >/dev/null; b=$(now)
		c=$(now); "$BUILD/gpumemtrace" run -q -o "$work/p/r.%p.gmt" -- "$PY" -m pytest "${args[@]}" >/dev/null; d=$(now)
		e=$(now); GPUMEMTRACE_OUTPUT="$work/p/g.%p.gmt" "$PY" -m pytest "${args[@]}" --gpumemtrace >/dev/null; f=$(now)
		awk -v n="$TESTS" -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v e="$e" -v f="$f" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
			printf "plugin round: %d tests: untraced %.2f s, traced %.2f s, --gpumemtrace %.2f s: %.2f ms a test over traced (load %s)\n",
				n, b - a, d - c, f - e, ((f - e) - (d - c)) * 1000 / n, l }'
		rm -f "$work"/p/*.gmt
	done
}

plugin_ab() {
	[ -f "${LIB_B:-}" ] || { echo "plugin-ab: LIB_B=path/to/libgpumemtrace.so" >&2; exit 2; }
	mkdir -p "$work/p"
	{
		echo 'import ctypes'
		echo '_rt = ctypes.CDLL("libcudart.so.13")'
		echo 'def one():'
		echo '    p = ctypes.c_void_p()'
		echo '    assert _rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0'
		echo '    assert _rt.cudaFree(p) == 0'
		for i in $(seq "$TESTS"); do printf 'def test_%d():\n    one()\n' "$i"; done
	} >"$work/p/test_many.py"
	cd "$work/p"
	export LD_LIBRARY_PATH=$BUILD/sim PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
	local args=(-q -p no:cacheprovider -p gpumemtrace.pytest_plugin test_many.py)
	added() { # library: ms a test the plugin adds over `run` with that library
		local a b c d
		a=$(now); GPUMEMTRACE_LIBRARY=$1 "$BUILD/gpumemtrace" run -q -o "$work/p/r.%p.gmt" -- "$PY" -m pytest "${args[@]}" >/dev/null; b=$(now)
		c=$(now); GPUMEMTRACE_LIBRARY=$1 GPUMEMTRACE_OUTPUT="$work/p/g.%p.gmt" "$PY" -m pytest "${args[@]}" --gpumemtrace >/dev/null; d=$(now)
		rm -f "$work"/p/*.gmt
		awk -v n="$TESTS" -v a="$a" -v b="$b" -v c="$c" -v d="$d" 'BEGIN { printf "%.2f", ((d - c) - (b - a)) * 1000 / n }'
	}
	for r in $(seq "$ROUNDS"); do
		local x y
		x=$(added "$BUILD/libgpumemtrace.so")
		y=$(added "$LIB_B")
		awk -v x="$x" -v y="$y" -v n="$TESTS" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
			printf "plugin-ab round: %d tests: this build %.2f ms a test, LIB_B %.2f ms a test (load %s)\n", n, x, y, l }'
	done
}

case $what in
reader) reader ;;
plugin) plugin ;;
plugin-ab) plugin_ab ;;
*) reader; plugin ;;
esac
