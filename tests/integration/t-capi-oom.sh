# The reader library (libgpumemtrace-reader.so, which Python loads) out of
# memory: tests/progs/capi-oom fails each allocation of a whole walk in
# turn (open, every table, close; follow open, poll, status, close) on a
# trace with every record and a pytest window. Each walk ends in the
# library's "out of memory" error or in success, and the process lives on:
# the library never exits or aborts its caller (before, uthash's exit(-1)
# and the reader's exit 3 ended the Python that had loaded it).
. "$TESTS_DIR/integration/lib.sh"
[[ ${SANITIZE:-} == "" ]] || skip "a sanitizer build: the test replaces the allocator"
MKTRACE=$BUILD/tests/unit-tools/mktrace
prog=$PROG_DIR/capi-oom
lib=$BUILD/libgpumemtrace-reader.so
for f in "$MKTRACE" "$prog" "$lib"; do [ -x "$f" ] || [ -f "$f" ] || fail "$f missing"; done

sed -e 's/text=step/source=1 text="pytest t::a"/' "$TESTS_DIR/fuzz/seeds/v2-records.txt" >t.txt
"$MKTRACE" t.gmt <t.txt || fail "mktrace"
"$prog" "$lib" t.gmt >out.txt 2>err.txt || fail "capi-oom exited $?: $(tail -3 err.txt)"
read -r _ walks _ ooms _ allocs <<<"$(tr -d ',' <out.txt)"
[ "$allocs" -gt 50 ] || fail "a walk made $allocs allocations: the walk did not read the trace"
[ "$walks" -eq $((allocs + 1)) ] || fail "walks $walks for $allocs allocations"
# Most failures reach the caller as an error; the others were allocations
# whose failure the library handles itself (stdio's buffers, a cache).
[ "$ooms" -ge $((allocs / 2)) ] || fail "only $ooms out-of-memory errors in $walks walks"
[ ! -s err.txt ] || fail "the library printed: $(head -3 err.txt)"
cat out.txt
