# A trace without names (a killed process, GPUMEMTRACE_SYMBOLIZE=0) reads
# with the same names as one named in the process, and as the same trace
# named after the run by `gpumemtrace symbolize` and by `gpumemtrace run`:
# every frame of every stack (function, file, line), on a program of 240
# call sites in one compile unit, half of them inside an inlined helper,
# whose frames name the line of the inlined call in the calling function.
. "$TESTS_DIR/integration/lib.sh"
root=$TESTS_DIR/..
python3 "$root/bench/naming-gen.py" flat 40 6 >prog.c
${CC:-cc} -std=gnu11 -O2 -g -I"$root" -I"$root/include" -I"$root/tests/sim" prog.c -o prog \
	-L"$SIM_DIR" -l:libcuda.so.1 || fail "cannot build the program"

GPUMEMTRACE_SYMBOLIZE=1 GPUMEMTRACE_OUTPUT=$PWD/named.gmt traced ./prog
GPUMEMTRACE_SYMBOLIZE=0 GPUMEMTRACE_OUTPUT=$PWD/nameless.gmt traced ./prog
symbols() { "$GMT_CLI" dump "$1" | grep -c ' SYMBOL ' || true; }
expect_eq "SYMBOL records of the nameless trace" "$(symbols nameless.gmt)" 0
[ "$(symbols named.gmt)" -gt 240 ] || fail "the library named $(symbols named.gmt) frames"

cp nameless.gmt after.gmt
"$GMT_CLI" symbolize after.gmt >out.txt || fail "symbolize: $(cat out.txt)"
grep -q "after.gmt: named [0-9]* frames from the module files" out.txt || fail "$(cat out.txt)"
[ "$(symbols after.gmt)" -gt 240 ] || fail "symbolize added $(symbols after.gmt) names"
"$GMT_CLI" dump after.gmt | tail -1 | grep -q ', complete$' || fail "symbolize left it incomplete"
rm -f gpumemtrace.*.gmt
GPUMEMTRACE_SYMBOLIZE=0 LD_LIBRARY_PATH=$SIM_DIR "$GMT_CLI" run -q -- ./prog 2>run.txt
cp "$(the_trace)" run.gmt
[ "$(symbols run.gmt)" -gt 240 ] || fail "run added $(symbols run.gmt) names"

# Every stack, every frame: function file:line, as the reports see them.
frames() {
	# the site is the calling function's frame: one row per call site
	"$GMT_CLI" top --json -n 0 --depth 8 --hide '^alloc_here$' "$1" >"$1.json"
	python3 - "$1.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for dev in d["devices"] for r in dev["rows"]]
for r in rows:
    print(" | ".join("%s %s:%s" % (f["function"], f["file"], f["line"]) for f in r["stack"]))
EOF
}
frames named.gmt | sort >named.txt
[ "$(wc -l <named.txt)" -ge 240 ] || fail "$(wc -l <named.txt) stacks in the named trace"
for t in nameless after run; do
	frames $t.gmt | sort >$t.txt
	diff named.txt $t.txt >$t.diff || fail "$t: names differ from the named trace's: $(head -5 $t.diff)"
done

# The names symbolize writes are the library's, record for record (by the
# offset in their module: the two runs load at other addresses).
records() {
	"$GMT_CLI" dump "$1" | python3 -c '
import re, sys
bias, out = {}, set()
for l in sys.stdin:
    m = re.search(r" MODULE id (\d+) .* load_bias (0x[0-9a-f]+)", l)
    if m:
        bias[m.group(1)] = int(m.group(2), 16)
    m = re.search(r" SYMBOL (0x[0-9a-f]+) module (\d+) (.*)", l)
    if m and m.group(2) in bias:
        out.add("%s+%x %s" % (m.group(2), int(m.group(1), 16) - bias[m.group(2)], m.group(3)))
print("\n".join(sorted(out)))'
}
records named.gmt >named.sym
records after.gmt >after.sym
[ "$(wc -l <named.sym)" -gt 240 ] || fail "$(wc -l <named.sym) SYMBOL records read"
diff named.sym after.sym >sym.diff || fail "symbolize names differ from the library's: $(head -5 sym.diff)"

# The calling function's frame names the line where it calls, also where
# that call is inside the inlined helper: the line of `inl(TAG)` in f_N.
python3 - prog.c nameless.txt <<'EOF'
import re, sys
src = open(sys.argv[1]).read().split("\n")
checked = inl = 0
for stack in open(sys.argv[2]):
    for frame in stack.strip().split(" | "):
        m = re.match(r"(f_\d+) (\S+):(\d+)$", frame)
        if not m:
            continue
        line = src[int(m.group(3)) - 1]
        # the line is inside f_N's body and is one of its call sites
        body = max(i for i, l in enumerate(src[: int(m.group(3))]) if l.startswith("static"))
        if "void %s(" % m.group(1) not in src[body] or not re.match(r"\t(inl|alloc_here)\(\d+u\);", line):
            sys.exit("FAIL: %s names line %s: %r" % (m.group(1), m.group(3), line))
        checked += 1
        inl += line.startswith("\tinl(")
if checked < 240 or inl < 120:
    sys.exit("FAIL: %d call sites checked, %d of them inlined" % (checked, inl))
EOF
echo ok
