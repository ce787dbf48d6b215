# Helpers sourced by the integration tests (run from a fresh temp dir).
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "$*"; exit 77; }

# Run a command under the tracer with the simulated CUDA on the library path.
# An ASan-built library needs libasan loaded first (SANITIZE=address,...).
preload=$GMT_LIB
if [[ ${SANITIZE:-} == *address* ]]; then
	preload="$(${CC:-cc} -print-file-name=libasan.so) $GMT_LIB"
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:verify_asan_link_order=0}
fi
traced() {
	LD_PRELOAD=$preload LD_LIBRARY_PATH=$SIM_DIR:$PROG_DIR "$@"
}
untraced() {
	LD_LIBRARY_PATH=$SIM_DIR:$PROG_DIR "$@"
}

# The one trace file in the current directory (fails if not exactly one).
the_trace() {
	local f=(gpumemtrace.*.gmt)
	[ ${#f[@]} -eq 1 ] && [ -f "${f[0]}" ] || fail "expected one trace, found: ${f[*]}"
	echo "${f[0]}"
}

# jq-free JSON queries: python3 is on every machine we support.
json() { # file expr   e.g. json s.json 'd["calls"]["cudaMalloc"]["count"]'
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

expect_eq() { # what actual expected
	[ "$2" == "$3" ] || fail "$1: got '$2', expected '$3'"
}

# A command's exit code and stderr: expect_run name code regex command...
# wants one stderr line matching regex (an empty regex: no stderr at all);
# its stdout and stderr are left in out and err.
expect_run() {
	local name=$1 want=$2 re=$3 rc=0
	shift 3
	"$@" >out 2>err || rc=$?
	[ "$rc" -eq "$want" ] || fail "$name: exit $rc, expected $want; stderr: $(cat err)"
	if [ -n "$re" ]; then
		[ "$(wc -l <err)" -eq 1 ] || fail "$name: expected one stderr line, got: $(cat err)"
		grep -Eq "$re" err || fail "$name: stderr '$(cat err)' does not match '$re'"
	else
		[ ! -s err ] || fail "$name: unexpected stderr: $(cat err)"
	fi
}

# expect_exit name code "$GMT_CLI" CMD args...: one line "gpumemtrace CMD: ..."
expect_exit() {
	local name=$1 want=$2
	shift 2
	expect_run "$name" "$want" "^gpumemtrace $2: " "$@"
}
