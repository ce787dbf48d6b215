# Processes that never call a traced function leave no file behind, and
# GPUMEMTRACE_DISABLE=1 turns tracing off.
. "$TESTS_DIR/integration/lib.sh"
traced /bin/true
traced sh -c 'echo hi >/dev/null; ls >/dev/null'
traced python3 -c 'import ctypes' 2>/dev/null || true
[ -z "$(ls gpumemtrace.* 2>/dev/null)" ] || fail "files left: $(ls gpumemtrace.*)"
GPUMEMTRACE_DISABLE=1 traced "$PROG_DIR/life" exit 4
[ -z "$(ls gpumemtrace.* 2>/dev/null)" ] || fail "GPUMEMTRACE_DISABLE=1 still traced"
echo ok
