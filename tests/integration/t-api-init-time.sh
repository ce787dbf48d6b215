# Time zero: a program's first call is often cudaFree(0), and the runtime
# initialises and retains the context inside it, where the trace file is
# created. The call's time is taken before the call, so a trace that began
# at the file's creation put that call before its own start (seen on an H100:
# -0.208 s, the context's creation time). The trace now begins when the
# library loaded: no event is earlier, and the PROCESS record, written at
# the file's creation, is not earlier than the header's start either.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic init-free malloc
grep -qE 'EVENT #[0-9]+ \+[0-9.]+ tid [0-9]+ cudaFree dev 0 ptr 0x0 ' dump.txt ||
	{ grep EVENT dump.txt || true; fail "no cudaFree(0) event at a time after the start"; }
! grep -E 'EVENT #[0-9]+ -' dump.txt || fail "events before the trace's start"
python3 - "$TRACE" <<'PY' || fail "header start_wall later than the PROCESS record's"
import re, subprocess, sys, os
out = subprocess.run([os.environ["GMT_CLI"], "dump", sys.argv[1]], capture_output=True, text=True).stdout
hdr = re.search(r"HEADER .* start_wall (\S+)", out).group(1)
proc = re.search(r"PROCESS .* start_wall (\S+)", out).group(1)
sys.exit(0 if hdr <= proc else 1)
PY
echo ok
