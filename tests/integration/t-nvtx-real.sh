# NVIDIA's header-only NVTX v3 (the CUDA toolkit's include/nvtx3) against
# our injection through NVTX_INJECTION64_PATH, from a shared library that
# annotates (as libtorch does). Skips (77) without the headers.
. "$TESTS_DIR/integration/lib.sh"
inc=$CUDA_HOME/include
[ -f "$inc/nvtx3/nvToolsExt.h" ] || skip "no nvtx3 headers under $inc (set CUDA_HOME)"
cc=${CC:-cc}
src=$TESTS_DIR/progs/nvtx-real.c
"$cc" -std=gnu11 -Wall -Wextra -Werror -fPIC -shared -I"$inc" "$src" -o libnvtxreal.so -ldl ||
	fail "building against nvtx3"
"$cc" -std=gnu11 -Wall -Wextra -Werror -DNVTX_REAL_MAIN "$src"  -o nvtx-real -L. -lnvtxreal \
	-Wl,-rpath,'$ORIGIN' -L"$SIM_DIR" -l:libcudart.so.13 || fail "building the program"

cat >want.txt <<'W'
push text "real push"
mark text "real wide mark"
start text "real start"
end text ""
push text "realdomain: real registered"
pop text ""
pop text ""
W
check_ranges() { # what
	local t
	t=$(the_trace)
	"$GMT_CLI" dump "$t" | sed -n -E 's/^@[0-9]+ +RANGE [^ ]+ tid [0-9]+ ([a-z]+) id [0-9]+ source nvtx (text .*)/\1 \2/p' >got.txt
	diff want.txt got.txt || fail "$1: RANGE records differ (< expected, > got)"
	expect_eq "$1: cudaMalloc calls" "$("$GMT_CLI" dump "$t" | grep -c 'cudaMalloc ')" 2
	rm -f gpumemtrace.*
}

NVTX_INJECTION64_PATH=$GMT_LIB traced ./nvtx-real >out.txt || fail "$(cat out.txt)"
grep -q "push level of the pop: 0" out.txt || fail "nvtxRangePop: $(cat out.txt)"
check_ranges "NVTX_INJECTION64_PATH"

# Not traced: NVTX stays a no-op and the program runs the same.
untraced ./nvtx-real >plain.txt
grep -q "push level of the pop: -[0-9]" plain.txt || fail "untraced pop: $(cat plain.txt)"
grep -q "cuda calls ok" plain.txt || fail "$(cat plain.txt)"
echo ok
