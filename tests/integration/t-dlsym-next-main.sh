# dlsym(RTLD_NEXT, "cudaMalloc") from the program itself gives what it gives
# untraced: NULL with no CUDA library loaded (it gave the tracer's export),
# an earlier preload's definition when there is one, and with the runtime
# loaded a pointer whose calls are traced.
. "$TESTS_DIR/integration/lib.sh"
P=$PROG_DIR/nextmain
RT=$SIM_DIR/libcudart.so.13

untraced "$P" >want.txt
traced "$P" >got.txt
diff want.txt got.txt >&2 || fail "no CUDA loaded: traced lookups differ from untraced"
grep -q "^cudaMalloc: NULL$" got.txt || fail "no CUDA loaded: $(cat got.txt)"
[ -z "$(ls gpumemtrace.* 2>/dev/null)" ] || fail "a trace without a CUDA call"

# An earlier preload that defines the name is still the next definition.
LD_PRELOAD=$RT LD_LIBRARY_PATH=$SIM_DIR "$P" -v >want.txt
LD_PRELOAD="$RT $preload" LD_LIBRARY_PATH=$SIM_DIR "$P" -v >got.txt
diff want.txt got.txt >&2 || fail "earlier preload: traced lookups differ from untraced"
grep -q "^cudaMalloc: found in libcudart.so.13$" got.txt || fail "earlier preload: $(cat got.txt)"
rm -f gpumemtrace.*

# The runtime loaded RTLD_GLOBAL: found as untraced, and the call is traced.
untraced "$P" "$RT" >want.txt
traced "$P" "$RT" >got.txt
diff want.txt got.txt >&2 || fail "runtime loaded: traced lookups differ from untraced"
grep -q "^cudaMalloc = 0$" got.txt || fail "runtime loaded: $(cat got.txt)"
"$GMT_CLI" summary --json "$(the_trace)" >s.json
expect_eq "traced cudaMalloc" "$(json s.json 'd["calls"]["cudaMalloc"]["count"]')" 1
echo ok
