# The sites' review (issue 20's follow-up), on the real H100 traces and on
# Python programs calling the simulated driver through ctypes.CDLL:
#  - a group that mixes two libraries says so, and top and leaks name the
#    same libraries with the same bytes (--json lists each one's bytes);
#  - at COLUMNS=80 the site keeps its function and file:line (40 columns at
#    least), the [library] and the notes go first, paths are shortened, and
#    C++ namespaces (…ConvolutionBackward0::apply);
#  - ctypes.CDLL without Python frames: the site is not libffi+0x...;
#  - a --focus or --hide that matches nothing is warned of;
#  - flamegraph and pprof leave the interpreter's frames out;
#  - prose wraps at 160 columns when piped.
. "$TESTS_DIR/integration/lib.sh"
V=$TESTS_DIR/real/2026-11-22-h100
T=$V/torch-async.837.gmt

# 1. THPVariable_linear's group: cuBLAS's workspace and c10's blocks
"$GMT_CLI" top --json "$T" >t.json || fail "top --json"
"$GMT_CLI" leaks --json "$T" >l.json || fail "leaks --json"
expect_eq top-libs "$(json t.json '[(r["library"], r["libraries"]) for r in d["devices"][0]["rows"] if "THPVariable_linear(" in r["key"].split(" <- ")[0]]')" \
	"[('libcublas.so.13', [{'library': 'libcublas.so.13', 'bytes': 67240960}, {'library': 'libc10_cuda.so', 'bytes': 34603008}])]"
expect_eq leaks-libs "$(json l.json '[(r["library"], r["libraries"]) for r in d["groups"] if "THPVariable_linear(" in r["key"].split(" <- ")[0]]')" \
	"[('libcublas.so.13', [{'library': 'libcublas.so.13', 'bytes': 67240960}, {'library': 'libc10_cuda.so', 'bytes': 34603008}])]"
"$GMT_CLI" top "$T" >t.txt || fail "top"
"$GMT_CLI" leaks "$T" >l.txt || fail "leaks"
grep -q 'THPVariable_linear (libtorch_python.so+0x632269)  \[libcublas.so.13 +1\]$' t.txt ||
	fail "top's linear row: $(grep THPVariable_linear t.txt)"
grep -q 'THPVariable_linear (libtorch_python.so+0x632269)  \[libcublas.so.13 +1\]$' l.txt ||
	fail "leaks' linear row: $(grep THPVariable_linear l.txt)"
# wide enough, the whole split
COLUMNS=300 "$GMT_CLI" leaks "$T" >lw.txt || fail "leaks wide"
grep -q 'THPVariable_linear .*  \[mixed: libcublas.so.13 64.1 MiB, libc10_cuda.so 33.0 MiB\]$' lw.txt ||
	fail "leaks' mixed row: $(grep THPVariable_linear lw.txt)"

# 2. COLUMNS=80: the site under its figures, whole with its library
# (it was cut to "…ConvolutionBackward0::apply (libtorch_…" beside them)
COLUMNS=80 "$GMT_CLI" top "$T" >t80.txt || fail "top 80"
grep -q '^      torch::autograd::THPVariable_relu (libtorch_python.so+0x5c1f06)$' t80.txt &&
	grep -q '^      …generated::ConvolutionBackward0::apply (libtorch_cpu.so+0x5007d71)$' t80.txt ||
	fail "top at 80: $(sed -n 4,8p t80.txt)"
! grep -qE '  [^ ]{1,20}…  \[' t80.txt || fail "a site cut for its library at 80: $(sed -n 4,8p t80.txt)"
COLUMNS=80 "$GMT_CLI" leaks "$T" >l80.txt || fail "leaks 80"
grep -q '^      torch::autograd::THPVariable_conv2d (libtorch_python.so+0x596b53)$' l80.txt ||
	fail "leaks at 80: $(cat l80.txt)"
COLUMNS=80 "$GMT_CLI" summary "$T" >s80.txt || fail "summary 80"
grep -q '  …autograd::THPVariable_relu (libtorch_python.so…$' s80.txt || fail "summary at 80: $(sed -n '/^top allocation/,/^$/p' s80.txt)"

# 5. a --focus or --hide that matches no frame: one warning each, exit 0,
# the report as without it
"$GMT_CLI" top --focus 'no_such_frame' --hide 'zzz' --hide 'THPVariable_relu' "$T" >tf.txt 2>tf.err ||
	fail "top --focus unmatched: exit $?"
expect_eq unmatched-warnings "$(cat tf.err)" "gpumemtrace top: warning: --hide 'zzz' matched no frame; sites unchanged
gpumemtrace top: warning: --focus 'no_such_frame' matched no frame; sites unchanged"
"$GMT_CLI" leaks --hide 'zzz' "$T" >lz.txt 2>lz.err || fail "leaks --hide unmatched: exit $?"
cmp -s lz.txt l.txt || fail "an unmatched --hide changed leaks"
expect_eq leaks-warning "$(wc -l <lz.err)" 1
"$GMT_CLI" summary --focus 'THPVariable_relu' "$T" >/dev/null 2>sf.err || fail "summary --focus"
[ ! -s sf.err ] || fail "a warning for a --focus that matched: $(cat sf.err)"

# 4. flamegraph and pprof leave the interpreter's own frames out (--raw-sites
# keeps them); an old trace's "Python frames unavailable" frame stays
"$GMT_CLI" flamegraph --folded "$T" >fg.txt || fail "flamegraph"
! grep -qE 'python3\.[0-9]+\+0x|_PyEval_|;_PyObject_' fg.txt || fail "interpreter frames in the flame graph: $(head -c 300 fg.txt)"
expect_eq fg-marker "$(grep -vc '^\[Python frames unavailable: the GIL was not held\];' fg.txt)" 0
"$GMT_CLI" flamegraph --folded --raw-sites "$T" >fgr.txt || fail "flamegraph --raw-sites"
grep -qE 'python3\.12\+0x' fgr.txt || fail "--raw-sites dropped the interpreter's frames"
"$GMT_CLI" export --format pprof -o p.pb.gz "$T" || fail "export pprof"
"$GMT_CLI" export --format pprof --raw-sites -o pr.pb.gz "$T" || fail "export pprof --raw-sites"
expect_eq pprof-interp "$(zcat p.pb.gz | grep -ac '_PyEval_EvalFrameDefault') $(zcat pr.pb.gz | grep -ac '_PyEval_EvalFrameDefault')" "0 1"

# 8. piped, no line of summary, top or leaks passes 160 columns, on every
# trace we keep, and on an incomplete one under a long path
long=a-rather-long-directory-name-for-the-traces-of-the-nightly-training-runs/of-the-team-working-on-memory
mkdir -p "$long"
printf '%s\n' "header start_mono=0 pid=47" "events tid=1" "ev api=cudaMalloc t=150 ptr=0x100000 size=4096 dev=0" |
	"$BUILD/tests/unit-tools/mktrace" "$long/torn.gmt"
for t in "$V"/*.gmt "$V"/../2026-11-23-h100/*.gmt "$TESTS_DIR"/verdicts/traces/*.gmt \
	"$TESTS_DIR"/golden/*.gmt "$PWD/$long/torn.gmt"; do
	cmds="summary top leaks"
	case $t in *jax-default*) cmds=summary ;; esac # 26 755 phases: slow to read thrice
	for c in $cmds; do
		"$GMT_CLI" $c "$t" 2>/dev/null | python3 -c '
import sys
for l in sys.stdin.read().splitlines():
    if len(l) > 160:
        print(len(l), l[:120])' >wide.txt
		[ ! -s wide.txt ] || fail "$c $t: a line past 160 columns: $(head -2 wide.txt)"
	done
done
"$GMT_CLI" leaks "$PWD/$long/torn.gmt" 2>/dev/null | grep -A1 '^INCOMPLETE TRACE: ' | tail -1 | grep -q '^  .* not at exit$' ||
	fail "the INCOMPLETE line not wrapped: $("$GMT_CLI" leaks "$PWD/$long/torn.gmt" 2>/dev/null)"

# 3. ctypes.CDLL (the GIL released), with and without Python frames
command -v python3 >/dev/null || skip "python3 not installed"
mkdir -p py nopy
(cd py && traced python3 "$TESTS_DIR/python/pyalloc.py" cdll >out.txt 2>&1) || fail "cdll run: $(cat py/out.txt)"
(cd nopy && GPUMEMTRACE_PYTHON=0 traced python3 "$TESTS_DIR/python/pyalloc.py" cdll >out.txt 2>&1) ||
	fail "cdll run without Python frames: $(cat nopy/out.txt)"
"$GMT_CLI" top --json py/gpumemtrace.*.gmt >py.json || fail "top py"
expect_eq cdll-site "$(json py.json '[(r["function"], r["site_rule"], [f["skipped_by"] for f in r["stack"][:r["site_index"]]]) for r in d["devices"][0]["rows"]]')" \
	"[('allocate', 'user', ['libffi', 'libffi', 'libffi', 'ctypes', 'ctypes'])]"
COLUMNS=80 "$GMT_CLI" top py/gpumemtrace.*.gmt >py80.txt || fail "top py 80"
# the path is shortened only when the checkout's path makes it too long
grep -Eq '  allocate \((…/python/|/[^ ]*/)pyalloc\.py:23\)' py80.txt || fail "python site at 80: $(tail -2 py80.txt)"
COLUMNS=80 "$GMT_CLI" summary py/gpumemtrace.*.gmt >pys80.txt || fail "summary py 80"
grep -Eq '  allocate \((…/python/|/[^ ]*/)pyalloc\.py:23\)' pys80.txt || fail "python site in summary at 80: $(cat pys80.txt)"
"$GMT_CLI" top --json nopy/gpumemtrace.*.gmt >nopy.json || fail "top nopy"
expect_eq cdll-nopy-site "$(json nopy.json '[(r["function"], r["site_rule"], [f["skipped_by"] for f in r["stack"][:r["site_index"]]]) for r in d["devices"][0]["rows"]]')" \
	"[('PyCFuncPtr_call', 'fallback', ['libffi', 'libffi', 'libffi', 'ctypes'])]"
# without Python frames the flame graph has no interpreter frames either
"$GMT_CLI" flamegraph --folded nopy/gpumemtrace.*.gmt >nfg.txt || fail "flamegraph nopy"
grep -q ';PyCFuncPtr_call;_ctypes_callproc;ffi_call;' nfg.txt && ! grep -qE '_PyEval_|_PyObject_|Py_RunMain' nfg.txt ||
	fail "nopy flame graph: $(cat nfg.txt)"
echo ok
