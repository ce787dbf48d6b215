# Every report command, human and --json, on the checked-in golden traces
# matches its expected output (tests/golden; `make golden-update` after an
# intended change).
. "$TESTS_DIR/integration/lib.sh"
[ -d "$TESTS_DIR/golden/expected" ] || skip "no golden outputs yet"
BUILD=$BUILD "$TESTS_DIR/golden/golden.sh" check
