#!/usr/bin/env bash
# Makes build/pyvenv, a venv with what the Python package's tests use
# (pytest, pyarrow, pandas, DuckDB, pytest-xdist), from PyPI. t-py-pytest uses it when it
# exists. The tracer needs none of these. Safe to run again: it installs
# only what is missing. Without PyPI it says so and exits 0: those tests
# then skip, each with its reason.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/build/pyvenv
want=(pytest pyarrow pandas duckdb xdist:pytest-xdist nbclient nbformat ipykernel) # module[:package]
if ! [ -x "$venv/bin/python" ]; then
	python3 -m venv "$venv" || { echo "python-deps: cannot make a venv (python3-venv missing?)"; exit 0; }
fi
missing=()
for w in "${want[@]}"; do
	"$venv/bin/python" -c "import ${w%%:*}" 2>/dev/null || missing+=("${w#*:}")
done
[ ${#missing[@]} -eq 0 ] && { echo "python-deps: everything is installed"; exit 0; }
echo "python-deps: installing ${missing[*]} into build/pyvenv"
"$venv/bin/python" -m pip install -q "${missing[@]}" ||
	echo "python-deps: pip install failed: the tests that need ${missing[*]} will skip"
exit 0
