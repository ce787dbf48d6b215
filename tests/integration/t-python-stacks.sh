# Python frames in stacks: a script calls the simulated driver through
# ctypes.PyDLL (the GIL stays held), so the allocation's stack names the
# script's functions, file and line where the interpreter's frames were;
# through ctypes.CDLL (the GIL is released) it reads the same, since frames
# are read without the GIL; GPUMEMTRACE_PYTHON=0 records native frames only.
# (t-python-frames checks every interpreter on the machine, case by case.)
. "$TESTS_DIR/integration/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
# The interpreter itself, not a wrapper script (pyenv) that would be traced too.
py=$(python3 -c 'import sys; print(sys.executable)')
script=$TESTS_DIR/python/pyalloc.py
line=$(grep -n 'ALLOC LINE' "$script" | cut -d: -f1)
none_ip=0xfe00000000000000

traced "$py" "$script" pydll >out.txt || fail "traced run: $(cat out.txt)"
t=$(the_trace)
"$GMT_CLI" dump "$t" >dump.txt
grep -q "PYFRAME [0-9]* function \"allocate\" file \"[^\"]*pyalloc.py\" line $line\$" dump.txt ||
	fail "no PYFRAME for allocate() at pyalloc.py:$line: $(grep PYFRAME dump.txt)"
grep -q 'function "Model.forward" file "[^"]*pyalloc.py"' dump.txt ||
	fail "no PYFRAME for Model.forward: $(grep PYFRAME dump.txt)"
COLUMNS=10000 "$GMT_CLI" top --by stack --depth 20 "$t" >top.txt # uncut
grep -Eq "allocate \([^)]*pyalloc.py:[0-9]+\) <- build_layer \([^)]*pyalloc.py:[0-9]+\) <- Model.forward \([^)]*\) <- <module>" top.txt ||
	fail "stack does not read allocate <- build_layer <- Model.forward: $(cat top.txt)"
# spliced: the interpreter's own frames are gone
if grep -q "_PyEval_EvalFrameDefault" top.txt; then fail "interpreter frames kept: $(cat top.txt)"; fi
if grep -q "ip $none_ip" dump.txt; then fail "GIL held, yet frames marked unavailable"; fi
rm -f gpumemtrace.*

traced "$py" "$script" cdll >out.txt || fail "traced CDLL run: $(cat out.txt)"
t=$(the_trace)
"$GMT_CLI" dump "$t" >dump.txt
grep -q "PYFRAME [0-9]* function \"allocate\" file \"[^\"]*pyalloc.py\" line $line\$" dump.txt ||
	fail "GIL released: no PYFRAME for allocate() at pyalloc.py:$line: $(grep PYFRAME dump.txt)"
COLUMNS=10000 "$GMT_CLI" top --by stack --depth 20 "$t" >top.txt # uncut
grep -Eq "allocate \([^)]*pyalloc.py:[0-9]+\) <- build_layer \([^)]*pyalloc.py:[0-9]+\) <- Model.forward \([^)]*\) <- <module>" top.txt ||
	fail "GIL released: stack does not read allocate <- build_layer <- Model.forward: $(cat top.txt)"
if grep -q "ip $none_ip" dump.txt; then fail "GIL released: frames marked unavailable"; fi
rm -f gpumemtrace.*

GPUMEMTRACE_PYTHON=0 traced "$py" "$script" pydll >out.txt || fail "PYTHON=0 run"
t=$(the_trace)
"$GMT_CLI" dump "$t" >dump.txt
if grep -q "PYFRAME\|ip $none_ip" dump.txt; then fail "GPUMEMTRACE_PYTHON=0 still recorded Python frames"; fi
"$GMT_CLI" flamegraph --folded --raw-sites --at end "$t" >folded.txt
grep -q "_PyEval_EvalFrameDefault" folded.txt || fail "native interpreter frames missing with PYTHON=0"
rm -f gpumemtrace.*

# A bad value: one warning, the default (on).
GPUMEMTRACE_PYTHON=maybe traced "$py" "$script" pydll >out.txt 2>err.txt || fail "bad value run"
expect_eq "warnings" "$(grep -c "^gpumemtrace: ignoring GPUMEMTRACE_PYTHON='maybe'" err.txt)" 1
"$GMT_CLI" dump "$(the_trace)" | grep -q PYFRAME || fail "bad GPUMEMTRACE_PYTHON did not keep the default"

# The traced program's output is unchanged.
untraced "$py" "$script" pydll >plain.txt
diff plain.txt out.txt || fail "output differs when traced"
echo ok
