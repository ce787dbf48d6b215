# A runtime loaded RTLD_LOCAL (every Python extension's libcudart) is out of
# RTLD_NEXT's reach, yet its users bind to the tracer's exports: the calls
# must still work exactly as without the tracer, and be recorded.
. "$TESTS_DIR/integration/lib.sh"
untraced "$PROG_DIR/local-main" "$PROG_DIR/liblocal-ext.so" >plain.txt || fail "untraced run failed: $(cat plain.txt)"
traced "$PROG_DIR/local-main" "$PROG_DIR/liblocal-ext.so" >traced.txt || fail "traced run failed: $(cat traced.txt)"
cmp plain.txt traced.txt || fail "output changed: $(cat traced.txt)"
"$GMT_CLI" summary --json "$(the_trace)" >s.json
expect_eq "cudaMalloc calls" "$(json s.json 'd["calls"]["cudaMalloc"]["count"]')" 5
expect_eq "cudaFree calls" "$(json s.json 'd["calls"]["cudaFree"]["count"]')" 5
echo ok
