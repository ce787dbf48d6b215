# The Python package as pip installs it: a wheel built from this tree
# (setup.py, with GPUMEMTRACE_PREBUILT taking this build's outputs rather
# than building again: CI's scripts/ci-pip.sh builds from a clean clone)
# installs into a fresh venv with nothing else, and there the console
# script and `python -m gpumemtrace` trace a program on the simulated CUDA,
# `run --framework-counters` finds the helper in the package,
# gpumemtrace.load reads the trace, and the native parts need only the
# system libraries docs/python.md names.
. "$TESTS_DIR/integration/lib.sh"
[[ ${SANITIZE:-} == "" ]] || skip "a sanitizer build: its libraries cannot load into a plain python"
py=$(command -v python3) || skip "python3 not installed"
"$py" -c 'import venv, setuptools, wheel' 2>/dev/null || skip "python3 lacks venv, setuptools or wheel"
root=$(cd "$TESTS_DIR/.." && pwd)

# A copy of what the sdist holds (MANIFEST.in), so nothing is written into the tree.
mkdir src
(cd "$root" && cp -a Makefile LICENSE README.md setup.py pyproject.toml include common preload \
	reader analysis capi cli share "$OLDPWD/src/")
mkdir -p src/python src/tests src/bench
cp -a "$root/python/gpumemtrace" src/python/
cp "$root/tests/tests.mk" src/tests/ && cp "$root/bench/bench.mk" src/bench/
find src -name __pycache__ -prune -exec rm -rf {} +

"$py" -m venv --system-site-packages bv >venv.log 2>&1 || fail "venv: $(tail -3 venv.log)"
GPUMEMTRACE_PREBUILT=$BUILD bv/bin/python -m pip wheel --no-build-isolation --no-deps --no-index \
	-w dist ./src >wheel.log 2>&1 || fail "pip wheel: $(tail -5 wheel.log)"
whl=(dist/gpumemtrace-*-py3-none-linux_*.whl)
[ -f "${whl[0]}" ] || fail "no py3-none-linux wheel: $(ls dist)"

"$py" -m venv v >venv2.log 2>&1 || fail "venv: $(tail -3 venv2.log)"
v/bin/python -m pip install -q --no-index --no-deps "${whl[0]}" >install.log 2>&1 ||
	fail "pip install: $(tail -5 install.log)"
pkg=$(v/bin/python -c 'import gpumemtrace, os; print(os.path.dirname(gpumemtrace.__file__))')
for f in bin/gpumemtrace lib/libgpumemtrace.so lib/libgpumemtrace-reader.so _counters/sitecustomize.py; do
	[ -f "$pkg/$f" ] || fail "the wheel lacks gpumemtrace/$f"
done
[ -x "$pkg/bin/gpumemtrace" ] || fail "bin/gpumemtrace is not executable"

# The console script and python -m: the same tool, the program's own status.
v/bin/gpumemtrace --version | grep -q '^gpumemtrace ' || fail "console script --version"
set +e
LD_LIBRARY_PATH=$SIM_DIR v/bin/gpumemtrace run -q -o "$PWD/w.%p.gmt" -- \
	sh -c '"$1" exit 4; exit 3' sh "$PROG_DIR/life" 2>run.err
rc=$?
set -e
expect_eq "run's exit status" "$rc" 3
t=(w.*.gmt)
[ -f "${t[0]}" ] || fail "no trace from the console script's run: $(cat run.err)"
LD_LIBRARY_PATH=$SIM_DIR v/bin/python -m gpumemtrace run -q -o "$PWD/m.gmt" -- "$PROG_DIR/life" exit 4 ||
	fail "python -m gpumemtrace run"
v/bin/python -m gpumemtrace summary --json m.gmt >s.json || fail "python -m gpumemtrace summary"
expect_eq "events" "$(json s.json 'd["events"]')" 7

# The helper folder inside the package goes first on PYTHONPATH.
out=$(v/bin/gpumemtrace run -q --framework-counters -o "$PWD/c.gmt" -- sh -c 'echo "$PYTHONPATH"') ||
	fail "run --framework-counters from the wheel"
expect_eq "helper on PYTHONPATH" "${out%%:*}" "$(cd "$pkg/_counters" && pwd -P)"

# The reader, from the installed package, against the CLI's own figures.
v/bin/python - "${t[0]}" <<'PY' >load.txt 2>&1 || fail "gpumemtrace.load: $(cat load.txt)"
import sys, gpumemtrace
t = gpumemtrace.load(sys.argv[1])
assert t.complete, t.problems()
rows = t.events.to_pylist()
assert len(rows) == t.status["events"] == 7, len(rows)
assert rows[0]["op"] == "ctx_create" or any(r["op"] == "alloc" for r in rows), rows
print("pid", t.process["pid"], "events", len(rows))
PY
grep -q "events 7" load.txt || fail "load: $(cat load.txt)"

# What the native parts link: libc and the system libraries docs/python.md
# names, nothing else (no libcuda, no libpython).
allowed='^(linux-vdso|libc|libm|libdl|libpthread|ld-linux-x86-64|libunwind|libunwind-x86_64|liblzma|libdw|libelf|libz|libzstd|libbz2|libgcc_s)\.'
for f in bin/gpumemtrace lib/libgpumemtrace.so lib/libgpumemtrace-reader.so; do
	for n in $(readelf -d "$pkg/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[[ $n =~ $allowed ]] || fail "$f needs $n, which docs/python.md does not name"
	done
done
