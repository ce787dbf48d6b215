#!/usr/bin/env bash
# The EXIT record holds the status the process ended with, however it
# ended: main's return (libc's exit, heard by our on_exit handler), exit()
# from several threads at once, _exit, Python's uncaught exception (main
# returns 1) and sys.exit(N); a process killed by a signal has neither an
# EXIT record nor a trailer. The program's own status never changes.
. "$(dirname "$0")/lib.sh"

# one case: NAME EXPECTED-LINE(grep -E on dump) EXPECTED-STATUS COMMAND...
case_() {
	local name=$1 want=$2 want_rc=$3
	shift 3
	mkdir "$name" && cd "$name"
	local rc=0
	traced "$@" >out.txt 2>err.txt || rc=$?
	expect_eq "$name: status" $rc "$want_rc"
	local t
	t=$(the_trace)
	"$GMT_CLI" dump "$t" >dump.txt 2>/dev/null || true
	if [ "$want" = none ]; then
		! grep -q '^@[0-9 ]*EXIT ' dump.txt || fail "$name: an EXIT record: $(grep ' EXIT ' dump.txt)"
	else
		grep -Eq "^@[0-9 ]*EXIT \+[0-9.]+ $want signal 0$" dump.txt ||
			fail "$name: no 'EXIT ... $want': $(grep -E ' (EXIT|TRAILER) ' dump.txt)"
		# right before the trailer
		grep -E ' (EXIT|TRAILER) ' dump.txt | head -n 2 | tail -n 1 | grep -q ' TRAILER ' ||
			fail "$name: the EXIT is not followed by the trailer: $(grep -E ' (EXIT|TRAILER) ' dump.txt)"
	fi
	cd ..
}

case_ main-return 'how exit status 0' 0 "$PROG_DIR/life" exit 3
case_ _exit 'how _exit status 3' 3 "$PROG_DIR/life" _exit 3
case_ exit-threads 'how exit status 7' 7 "$PROG_DIR/ends" exit-threads 4
case_ killed none 137 "$PROG_DIR/life" kill 3
grep -q 'TRAILER' killed/dump.txt && fail "killed: a trailer"

if command -v python3 >/dev/null; then
	cat >prog.py <<'P'
import ctypes, sys
rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
rt.cudaMalloc(ctypes.byref(p), 1 << 20)
if sys.argv[1] == "raise":
    raise RuntimeError("uncaught: Python's main returns 1")
sys.exit(int(sys.argv[1]))
P
	case_ py-uncaught 'how exit status 1' 1 python3 "$PWD/prog.py" raise
	grep -q 'RuntimeError: uncaught' py-uncaught/err.txt || fail "the traceback: $(cat py-uncaught/err.txt)"
	case_ py-sys-exit 'how exit status 4' 4 python3 "$PWD/prog.py" 4
fi
echo ok
