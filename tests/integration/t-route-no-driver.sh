# A runtime that finds no driver: every call fails as it does untraced, and
# the tracer does not search the disk for libcuda at each one (dlopen with
# RTLD_NOLOAD still does: ~85 us a call, 200x the failed call itself).
# Then a driver loaded after such a miss, RTLD_LOCAL, with no lookup the
# tracer sees: once something new is loaded it must look again, or it
# cannot ask the driver each allocation's device.
. "$TESTS_DIR/integration/lib.sh"
mkdir nodrv && cp "$SIM_DIR/libcudart.so.13" nodrv/
LD_LIBRARY_PATH=$PWD/nodrv "$PROG_DIR/threads" 1 200 >u.txt || true # exits 1 on failures
grep -Eq "failures=200( |$)" u.txt || fail "untraced: $(cat u.txt)"
LD_PRELOAD="$preload $PROG_DIR/libcountdl.so" LD_LIBRARY_PATH=$PWD/nodrv \
	"$PROG_DIR/threads" 1 200 >t.txt 2>t.err || true
grep -Eq "failures=200( |$)" t.txt || fail "traced: $(cat t.txt)"
lookups=$(sed -n 's/^countdl: //p' t.err)
[ -n "$lookups" ] || fail "libcountdl.so reported nothing: $(cat t.err)"
[ "$lookups" -le 10 ] || fail "libcuda.so.1 searched for on disk $lookups times for 200 calls"
"$GMT_CLI" summary --json "$(the_trace)" >s.json
expect_eq "calls" "$(json s.json 'd["calls"]["cudaMalloc"]["count"]')" 200
expect_eq "failed" "$(json s.json 'd["calls"]["cudaMalloc"]["failed"]')" 200

rm -f gpumemtrace.*.gmt
untraced "$PROG_DIR/late-driver" "$PROG_DIR/libdrvuser.so" >lu.txt || fail "untraced late driver: $(cat lu.txt)"
traced "$PROG_DIR/late-driver" "$PROG_DIR/libdrvuser.so" >lt.txt || fail "traced late driver: $(cat lt.txt)"
cmp lu.txt lt.txt || fail "output changed: $(cat lt.txt)"
grep -q '^before: cuMemAlloc_v2 not found$' lt.txt || fail "the driver was found before it was loaded"
"$GMT_CLI" summary --json "$(the_trace)" >late.json
expect_eq "late driver: devices and their peaks" \
	"$(json late.json '[(x["index"], x["name"], x["peak_bytes"]) for x in d["devices"]]')" \
	"[(0, 'Simulated GPU 0', 4096)]"
echo ok
