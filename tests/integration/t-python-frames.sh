# Python frames read without the GIL, on every CPython found here (pyenv's
# 3.9 to 3.13, the system's python3): each allocation's Python frames in
# the trace must equal what sys._getframe() gave at the same line
# (tests/python/pyframes.py: ctypes.CDLL and PyDLL, a generator, asyncio,
# a thread, deep recursion, non-ASCII names, __init__ after warm-up; with
# the interpreter's headers also a C extension releasing the GIL, calling
# back into Python, and a thread that never ran Python). Interpreters not
# found are listed as skipped. An interpreter we cannot read (3.8) gets one
# NOTE and native stacks.
. "$TESTS_DIR/integration/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
script=$TESTS_DIR/python/pyframes.py
checker=$TESTS_DIR/python/check-pyframes.py
pyenv=${PYENV_ROOT:-$HOME/.pyenv}/versions

candidates=()
for m in 9 10 11 12 13 14; do
	for d in "$pyenv"/3."$m".*; do
		[ -x "$d/bin/python3.$m" ] && candidates+=("$d/bin/python3.$m")
	done
done
# the system's (Debian's python3.11 is one binary with libpython in it)
for py in /usr/bin/python3.[0-9]* "$(python3 -c 'import sys; print(sys.executable)')"; do
	[[ $py =~ python3\.[0-9]+$ ]] && [ -x "$py" ] && candidates+=("$py")
done

tested=() missing=() noext=()
for m in 9 10 11 12 13; do
	ls "$pyenv"/3."$m".*/bin/python3."$m" >/dev/null 2>&1 || missing+=("pyenv 3.$m")
done
declare -A seen
for py in "${candidates[@]}"; do
	real=$(readlink -f "$py")
	[ -z "${seen[$real]:-}" ] || continue
	seen[$real]=1
	name=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])') || continue
	dir=run-$name-$(echo "$py" | md5sum | cut -c1-6)
	mkdir -p "$dir"
	# The test's C extension, built with this interpreter's own headers.
	inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
	suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
	ext=
	if [ -f "$inc/Python.h" ] &&
		${CC:-cc} -shared -fPIC -O1 -g -fno-omit-frame-pointer -I"$inc" \
			"$TESTS_DIR/python/gmtpyext.c" -o "$dir/gmtpyext$suffix" -ldl -lpthread 2>"$dir/cc.txt"; then
		ext=$PWD/$dir
	else
		noext+=("$name ($py)")
	fi
	(cd "$dir" && GMT_PYEXT=$ext GMT_EXPECT=expected.jsonl GPUMEMTRACE_STACK_DEPTH=256 \
		traced "$py" "$script" >out.txt 2>err.txt) || fail "$py: traced run: $(cat "$dir/out.txt" "$dir/err.txt")"
	"$GMT_CLI" dump "$dir"/gpumemtrace.*.gmt >"$dir/dump.txt"
	python3 "$checker" "$dir/dump.txt" "$dir/expected.jsonl" >"$dir/check.txt" ||
		fail "$py ($name): $(cat "$dir/check.txt")"
	if grep -q 'NOTE warning "Python' "$dir/dump.txt"; then
		fail "$py: a Python NOTE: $(grep 'NOTE warning "Python' "$dir/dump.txt")"
	fi
	tested+=("$name")
done

# A child of fork writes its own trace, which defines every Python frame
# it uses again.
mkdir -p fork && cd fork
cat >fork.py <<'PY'
import ctypes, os
lib = ctypes.CDLL("libcuda.so.1")
assert lib.cuInit(0) == 0
ctx, p = ctypes.c_void_p(), ctypes.c_uint64()
assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert lib.cuCtxSetCurrent(ctx) == 0
def allocate(n):
    assert lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)) == 0
allocate(4096)
pid = os.fork()
allocate(8192)
if pid:
    os.waitpid(pid, 0)
else:
    os._exit(0)
PY
traced "$(readlink -f "${candidates[-1]}")" fork.py >out.txt 2>&1 || fail "fork run: $(cat out.txt)"
traces=(gpumemtrace.*.gmt)
expect_eq "traces after fork" "${#traces[@]}" 2
for t in "${traces[@]}"; do
	"$GMT_CLI" dump "$t" >dump.txt
	grep -q 'PYFRAME [0-9]* function "allocate" file "[^"]*fork.py"' dump.txt ||
		fail "fork: $t defines no PYFRAME for allocate: $(grep PYFRAME dump.txt)"
done
cd ..

# An interpreter whose layout we do not know: one NOTE, native stacks, no crash.
old=$(ls -d "$pyenv"/3.8.*/bin/python3.8 2>/dev/null | head -1 || true)
if [ -n "$old" ]; then
	mkdir -p old && cd old
	traced "$old" "$TESTS_DIR/python/pyalloc.py" cdll >out.txt 2>&1 || fail "3.8 run: $(cat out.txt)"
	"$GMT_CLI" dump "$(the_trace)" >dump.txt
	expect_eq "3.8 NOTEs" "$(grep -c 'NOTE warning "Python 3.8: .*stacks stay native' dump.txt)" 1
	if grep -q PYFRAME dump.txt; then fail "3.8: Python frames recorded"; fi
	"$GMT_CLI" flamegraph --folded --raw-sites --at end "$(the_trace)" >folded.txt
	grep -q "_PyEval_EvalFrameDefault" folded.txt || fail "3.8: native frames missing"
	cd ..
	tested+=("3.8 (refused with a NOTE)")
else
	missing+=("pyenv 3.8 (the unknown-version case)")
fi
echo "tested: ${tested[*]}"
[ ${#missing[@]} -eq 0 ] || echo "skipped, not installed: ${missing[*]}"
[ ${#noext[@]} -eq 0 ] || echo "without the C extension (no Python.h): ${noext[*]}"
echo ok
