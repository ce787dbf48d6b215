# gpumemtrace symbolize: names added in place stay a complete trace, and a
# second run adds nothing; a torn trace is left as it is (exit 4) and -o
# writes a named copy of its readable part with a NOTE saying what was left
# out; a trace its process still holds open is left (exit 3); a version 2
# trace gets plain chunks (GMTZ came with version 3); run --no-symbolize
# leaves the names out.
. "$TESTS_DIR/integration/lib.sh"
GPUMEMTRACE_SYMBOLIZE=0 traced "$PROG_DIR/life" exit 6
t=$(the_trace)
mv "$t" t.gmt
symbols() { "$GMT_CLI" dump "$1" | grep -c ' SYMBOL ' || true; }
ends() { "$GMT_CLI" dump "$1" 2>/dev/null | tail -1 | sed 's/.*, //'; }

cp t.gmt a.gmt
"$GMT_CLI" symbolize a.gmt >out.txt || fail "symbolize: $(cat out.txt)"
[ "$(symbols a.gmt)" -gt 3 ] || fail "no names added"
expect_eq "after symbolize" "$(ends a.gmt)" complete
"$GMT_CLI" dump a.gmt | grep -q 'NOTE info "[0-9]* frames named after the run from the module files on' ||
	fail "no NOTE says where the names came from"
size=$(stat -c %s a.gmt)
"$GMT_CLI" symbolize a.gmt >out.txt
grep -q "a.gmt: every frame already has a name" out.txt || fail "again: $(cat out.txt)"
expect_eq "size after a second symbolize" "$(stat -c %s a.gmt)" "$size"
"$GMT_CLI" top a.gmt | grep -q "allocs (tests/progs/life.c:" || fail "not named"

# Torn: in place refused, the file untouched; a copy instead.
{ cat t.gmt; printf 'GMTC\020\000\000'; } >torn.gmt # a chunk cut short after the last
cp torn.gmt torn-before.gmt
rc=0
"$GMT_CLI" symbolize torn.gmt >out.txt 2>err.txt || rc=$?
expect_eq "torn, in place: exit" "$rc" 4
grep -q "symbolize: torn.gmt: its readable part ends at offset [0-9]* (a torn tail): names added after it would not be read; write a named copy with 'gpumemtrace symbolize -o FILE TRACE'" err.txt ||
	fail "torn: $(cat err.txt)"
cmp -s torn.gmt torn-before.gmt || fail "a torn trace was changed"
"$GMT_CLI" symbolize -o copy.gmt torn.gmt >out.txt 2>err.txt || fail "-o: $(cat err.txt)"
[ "$(symbols copy.gmt)" -gt 3 ] || fail "no names in the copy"
"$GMT_CLI" dump copy.gmt | grep -q 'NOTE warning "copied from torn.gmt up to offset [0-9]* by gpumemtrace symbolize: the [0-9]* bytes after it (a torn tail) were left out"' ||
	fail "the copy does not say what was left out"
[ "$(ends copy.gmt)" != complete ] || fail "a copy of a torn trace reads as complete"
expect_eq "the copy's mode" "$(stat -c %a copy.gmt)" 600
rc=0
"$GMT_CLI" symbolize -o torn.gmt torn.gmt 2>err.txt || rc=$?
expect_eq "-o the trace itself: exit" "$rc" 2
rc=0
"$GMT_CLI" symbolize -o x.gmt a.gmt torn.gmt 2>err.txt || rc=$?
expect_eq "-o with two traces: exit" "$rc" 2

# Still held open by its process (the header's pid): left alone.
cp t.gmt held.gmt
sleep 300 3<held.gmt &
holder=$!
python3 - held.gmt "$holder" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<I", b, 40, int(sys.argv[2]))  # the header's pid (GMT_HDR_PID)
open(sys.argv[1], "r+b").write(b)
PY
rc=0
"$GMT_CLI" symbolize held.gmt >out.txt 2>err.txt || rc=$?
kill $holder
expect_eq "held open: exit" "$rc" 3
grep -q "held.gmt: process $holder still has it open, and may write to it" err.txt || fail "held: $(cat err.txt)"
expect_eq "held open: names" "$(symbols held.gmt)" 0

# A version 2 trace (no zstd chunks then): the names in a plain chunk.
life=$PROG_DIR/life
id=$(readelf -n "$life" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
addr=$(nm "$life" | sed -n 's/^\([0-9a-f]*\) [tT] allocs$/\1/p')
[ -n "$addr" ] && [ -n "$id" ] || fail "no allocs() or build-id in $life"
ip=$(printf '0x%x' $((0x555500000000 + 0x$addr + 4)))
cat >v2.txt <<EOT
header version=2
process pid=1 ppid=0 exe=$life
module id=1 bias=0x555500000000 start=0x555500000000 end=0x555500100000 path=$life buildid=$id
stack parent=0 ip=$ip
events tid=1 base=1000
ev api=cudaMalloc t=1000 ptr=0x7000000000 size=4096 dev=0 stack=1
trailer t=2000
EOT
"$BUILD/tests/unit-tools/mktrace" v2.gmt <v2.txt
"$GMT_CLI" symbolize v2.gmt >out.txt || fail "v2: $(cat out.txt)"
"$GMT_CLI" dump v2.gmt >v2.dump
grep -q 'SYMBOL .* function "allocs" file ".*tests/progs/life.c"' v2.dump || fail "v2: $(grep SYMBOL v2.dump)"
grep -q zstd v2.dump && fail "a zstd chunk in a version 2 trace"
expect_eq "v2 after symbolize" "$(ends v2.gmt)" complete

# run --no-symbolize: no names in the trace.
rm -f gpumemtrace.*.gmt
GPUMEMTRACE_SYMBOLIZE=0 LD_LIBRARY_PATH=$SIM_DIR "$GMT_CLI" run -q --no-symbolize -- "$PROG_DIR/life" exit 6 2>/dev/null
expect_eq "run --no-symbolize: names" "$(symbols "$(the_trace)")" 0
echo ok
