# The training-like trace for the plot, flamegraph and export tests (sourced
# after lib.sh): eco_trace OUT [STEPS].
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"
eco_trace() {
	python3 "$TESTS_DIR/eco/training-trace.py" "${2:-12}" >"$1.txt"
	"$MKTRACE" "$1" <"$1.txt" || fail "mktrace failed"
}
