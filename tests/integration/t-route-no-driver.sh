# A runtime that finds no driver: every call fails as it does untraced, and
# the tracer does not search the disk for libcuda at each one (dlopen with
# RTLD_NOLOAD still does: ~85 us a call, 200x the failed call itself).
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
echo ok
