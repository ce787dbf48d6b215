# gpumemtrace run: preloads the library, passes the exit status through,
# reports on every trace it wrote, follows children unless --no-follow, and
# gates with --check-max-peak.
. "$TESTS_DIR/integration/lib.sh"
export LD_LIBRARY_PATH=$SIM_DIR
export GPUMEMTRACE_LIBRARY=$GMT_LIB

# Exit status and stdout of the command pass through; the report is on stderr.
rc=0
"$GMT_CLI" run -- "$PROG_DIR/life" _exit 4 >out.txt 2>err.txt || rc=$?
expect_eq "exit status" "$rc" 3
[ ! -s out.txt ] || fail "run wrote to stdout: $(cat out.txt)"
grep -q "^device memory" err.txt || fail "no summary: $(cat err.txt)"
t=$(the_trace)
grep -q "trace written to $PWD/$t" err.txt || fail "no path: $(cat err.txt)"
"$GMT_CLI" summary --json "$t" >s.json
expect_eq "events" "$(json s.json 'd["events"]')" 7 # 6 + the runtime's context retain

# A signalled command: 128 + the signal, like a shell.
rm -f gpumemtrace.*
rc=0
GPUMEMTRACE_FLUSH_MS=20 "$GMT_CLI" run -q -- "$PROG_DIR/life" kill 2 >out.txt 2>err.txt || rc=$?
expect_eq "signalled" "$rc" $((128 + 9))

# Children are followed by default: two traces, both reported.
rm -f gpumemtrace.*
"$GMT_CLI" run -- "$PROG_DIR/life" fork 3 >out.txt 2>err.txt || fail "fork: $(cat err.txt)"
expect_eq "followed traces" "$(ls gpumemtrace.*.gmt | wc -l)" 2
expect_eq "paths reported" "$(grep -c 'trace written to' err.txt)" 2
grep -q "^2 traces\|traces" err.txt || fail "no multi-trace summary: $(cat err.txt)"

# --no-follow: the child inherits LD_PRELOAD but stays inert.
rm -f gpumemtrace.*
mkdir sub
"$GMT_CLI" run --no-follow -o "sub/run.%p.gmt" -- "$PROG_DIR/life" fork 3 >out.txt 2>err.txt \
	|| fail "no-follow: $(cat err.txt)"
grep -q "child exited 0" out.txt || fail "program output changed: $(cat out.txt)"
expect_eq "no-follow traces" "$(ls sub/run.*.gmt | wc -l)" 1
[ -z "$(ls gpumemtrace.* 2>/dev/null)" ] || fail "trace outside the template"
"$GMT_CLI" summary --json sub/run.*.gmt >nf.json
expect_eq "no-follow traces the parent" "$(json nf.json 'd["events"]')" 9 # 8 + the context retain

# --check-max-peak: the gate's verdict when the command itself succeeded.
rm -rf sub gpumemtrace.*
rc=0
"$GMT_CLI" run --check-max-peak 1MiB -- "$PROG_DIR/life" exit 4 >out.txt 2>err.txt || rc=$?
expect_eq "gate fails" "$rc" 1
grep -q "FAIL  max-peak" err.txt || fail "no gate line: $(cat err.txt)"
rm -f gpumemtrace.*
"$GMT_CLI" run --check-max-peak 1GiB -- "$PROG_DIR/life" exit 4 >out.txt 2>err.txt \
	|| fail "gate should pass: $(cat err.txt)"
# the command's own failure wins over the gate
rm -f gpumemtrace.*
rc=0
"$GMT_CLI" run --check-max-peak 1MiB -- "$PROG_DIR/life" _exit 4 >out.txt 2>err.txt || rc=$?
expect_eq "command status wins" "$rc" 3

# LD_PRELOAD already set: ours is prepended, theirs kept.
rm -f gpumemtrace.*
LD_PRELOAD=$SIM_DIR/libcudart.so.13 "$GMT_CLI" run -q -- sh -c 'echo "$LD_PRELOAD|$NVTX_INJECTION64_PATH"' >out.txt 2>err.txt
expect_eq "LD_PRELOAD" "$(cat out.txt)" "$GMT_LIB:$SIM_DIR/libcudart.so.13|$GMT_LIB"

# Usage errors and a missing command.
rc=0; "$GMT_CLI" run >/dev/null 2>err.txt || rc=$?
expect_eq "no command" "$rc" 2
grep -q "^gpumemtrace run: " err.txt || fail "error line: $(cat err.txt)"
rc=0; "$GMT_CLI" run --stack-depth x -- true 2>/dev/null || rc=$?
expect_eq "bad depth" "$rc" 2
rc=0; "$GMT_CLI" run -- ./no-such-program 2>err.txt || rc=$?
expect_eq "not found" "$rc" 127
rc=0; GPUMEMTRACE_LIBRARY=/nonexistent.so "$GMT_CLI" run -- true 2>err.txt || rc=$?
expect_eq "no library" "$rc" 3
# A gate never passes on nothing: no CUDA call, or a trace the library could
# not create (its directory missing), is exit 3 unless --allow-no-trace.
rc=0; "$GMT_CLI" run --check-max-peak 1GiB -- true 2>err.txt || rc=$?
expect_eq "gate, no trace" "$rc" 3
grep -q 'no trace was written, so nothing was checked' err.txt || fail "no-trace gate: $(cat err.txt)"
expect_eq "gate, no trace: lines" "$(grep -c '^gpumemtrace run:' err.txt)" 1
rc=0; "$GMT_CLI" run --check-max-peak 1GiB --allow-no-trace -- true 2>err.txt || rc=$?
expect_eq "gate, no trace, allowed" "$rc" 0
rc=0; "$GMT_CLI" run -o 'no-such-dir/%p.gmt' --check-max-peak 1GiB -- "$PROG_DIR/life" exit 0 \
	>out.txt 2>err.txt || rc=$?
expect_eq "gate, trace not created" "$rc" 3
rc=0; "$GMT_CLI" run -- true 2>err.txt || rc=$?
expect_eq "no gate, no trace" "$rc" 0

# An exported GPUMEMTRACE_OUTPUT is honoured (run replaced it with its
# default); -o still wins over it.
rm -rf gpumemtrace.* envout; mkdir envout
GPUMEMTRACE_OUTPUT=envout/mine.%p.gmt "$GMT_CLI" run -q -- "$PROG_DIR/life" _exit 4 \
	>out.txt 2>err.txt || true
expect_eq "exported template" "$(ls envout/mine.*.gmt 2>/dev/null | wc -l)" 1
[ -z "$(ls gpumemtrace.* 2>/dev/null)" ] || fail "exported GPUMEMTRACE_OUTPUT ignored"
GPUMEMTRACE_OUTPUT=envout/mine.%p.gmt "$GMT_CLI" run -q -o envout/o.%p.gmt -- \
	"$PROG_DIR/life" _exit 4 >out.txt 2>err.txt || true
expect_eq "-o over the environment" "$(ls envout/o.*.gmt 2>/dev/null | wc -l)" 1

# --per-tensor says which of the user's own settings it overrides, in one line
PYTORCH_NO_CUDA_MEMORY_CACHING=0 TF_GPU_ALLOCATOR=cuda_malloc_async \
	"$GMT_CLI" run --per-tensor --allow-no-trace -- true >out.txt 2>err.txt ||
	fail "per-tensor: $(cat err.txt)"
expect_eq "override lines" "$(grep -c 'overrides your' err.txt)" 1
grep -q 'overrides your PYTORCH_NO_CUDA_MEMORY_CACHING=0 (' err.txt ||
	fail "no override line: $(cat err.txt)"
! grep -q 'your[^(]*TF_GPU_ALLOCATOR' err.txt || fail "an equal value is no override: $(cat err.txt)"
env -u PYTORCH_NO_CUDA_MEMORY_CACHING -u TF_GPU_ALLOCATOR -u XLA_PYTHON_CLIENT_ALLOCATOR \
	"$GMT_CLI" run --per-tensor --allow-no-trace -- true >out.txt 2>err.txt
! grep -q 'overrides' err.txt || fail "override line with nothing set: $(cat err.txt)"
echo ok
