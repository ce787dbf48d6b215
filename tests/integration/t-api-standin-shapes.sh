#!/usr/bin/env bash
# The stand-in frameworks of the tests (tests/python/standins) take their
# API shape from the real packages: exception classes (module, qualname,
# bases), the names the helper calls, message forms; and the helper
# classifies the real out-of-memory exception (a real one where the CPU
# build can raise it: JAX's RESOURCE_EXHAUSTED). tests/python/check-
# standins.py runs under GMT_FW_PYTHON (default python3) for torch, jax,
# tensorflow and cupy; a framework not installed there is skipped with the
# reason, and the test skips when none is (CI does not install them: CPU
# torch, jax and tensorflow add ~1.5 GB and minutes to a clean run; install
# them in a venv and set GMT_FW_PYTHON to check here). PyPI's torch is the
# CUDA build, whose import needs the nvidia-* wheels' libraries: it is then
# checked from its sources without importing it (installed, or an unpacked
# wheel's folder in GMT_TORCH_SRC).
. "$(dirname "$0")/lib.sh"
py=${GMT_FW_PYTHON:-python3}
command -v "$py" >/dev/null || skip "$py not found"
checked=0 skipped=""
for fw in torch jax tensorflow cupy; do
	rc=0
	"$py" "$TESTS_DIR/python/check-standins.py" "$fw" "$TESTS_DIR/python/standins" >"$fw.txt" 2>&1 || rc=$?
	case $rc in
	0) checked=$((checked + 1)) ;;
	77) skipped="$skipped $fw ($(tail -n 1 "$fw.txt"))" ;;
	*) fail "$fw: the stand-in differs from the real package: $(cat "$fw.txt")" ;;
	esac
done
[ $checked -gt 0 ] || skip "no real framework installed for $py:$skipped"
echo "ok: $checked checked; skipped:$skipped"
