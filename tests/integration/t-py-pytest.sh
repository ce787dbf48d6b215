# The Python package's own tests (tests/pytest: the reader, Parquet, the
# pytest plugin) under pytest, with the build's native parts. The tests
# that need pyarrow, pandas or DuckDB skip without them: CI installs them
# in build/pyvenv (scripts/python-deps.sh), and GMT_PYTHON picks another.
. "$TESTS_DIR/integration/lib.sh"
[[ ${SANITIZE:-} == "" ]] || skip "a sanitizer build: its libraries cannot load into a plain python"
root=$(cd "$TESTS_DIR/.." && pwd)
py=${GMT_PYTHON:-}
[ -n "$py" ] || { [ -x "$root/build/pyvenv/bin/python" ] && py=$root/build/pyvenv/bin/python; } || true
[ -n "$py" ] || py=$(command -v python3) || skip "python3 not installed"
"$py" -c 'import pytest' 2>/dev/null || skip "$py has no pytest (scripts/python-deps.sh installs it)"
"$py" -c 'import pyarrow, pandas, duckdb' 2>/dev/null ||
	echo "note: $py lacks pyarrow, pandas or DuckDB: their tests skip"
export PYTHONDONTWRITEBYTECODE=1
"$py" -m pytest -q -p no:cacheprovider -rs "$TESTS_DIR/pytest" >pytest.log 2>&1 ||
	fail "pytest: $(tail -30 pytest.log)"
tail -1 pytest.log
grep -E "^SKIPPED" pytest.log || true
