# Frames are named from module files found by build-id: a library that
# moved after the run is found under GPUMEMTRACE_SYMBOL_PATH (or symbolize
# --symbol-path); one replaced at its path by another build is never used
# to name the old addresses; a stripped library is named from its debug
# file under DIR/.build-id/. symbolize says which module was read where, and
# why frames stayed unnamed.
. "$TESTS_DIR/integration/lib.sh"
root=$TESTS_DIR/..
command -v objcopy >/dev/null || skip "objcopy (binutils) is missing"
cc=${CC:-cc}
inc=(-I"$root" -I"$root/include" -I"$root/tests/sim")
mkdir a b b/sub dbg
cat >lib.c <<'EOF'
#include "sim-primary.h"
#ifdef OTHER
void other_function(void) {}
#endif
static __attribute__((noinline)) void inner(void)
{
	CUdeviceptr p;
	cuMemAlloc_v2(&p, 4096);
	__asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void mv_alloc(void)
{
	inner();
	__asm__ volatile("" ::: "memory");
}
EOF
cat >main.c <<'EOF'
#include "sim-primary.h"
void mv_alloc(void);
int main(void)
{
	if (sim_use_primary_context() != 0)
		return 1;
	mv_alloc();
	return 0;
}
EOF
$cc -shared -fPIC -g -O1 -Wl,--build-id "${inc[@]}" lib.c -o a/libmv.so -L"$SIM_DIR" -l:libcuda.so.1
$cc -g "${inc[@]}" main.c -o main -La -lmv -Wl,-rpath,"$PWD/a" -L"$SIM_DIR" -l:libcuda.so.1
GPUMEMTRACE_SYMBOLIZE=0 GPUMEMTRACE_OUTPUT=$PWD/t.gmt traced ./main
site() { "$GMT_CLI" top --raw-sites "$@" | grep -m1 -o 'inner ([^)]*)\|libmv.so+0x[0-9a-f]*' | head -1 | sed 's|(.*/|(|'; }
expect_eq "named at the path" "$(site t.gmt)" "inner (lib.c:8)"

# Moved: found by build-id among the files under a folder of the path.
mv a/libmv.so b/sub/libmv.so
expect_eq "moved, no path" "$(site t.gmt | cut -c1-11)" "libmv.so+0x"
expect_eq "moved, GPUMEMTRACE_SYMBOL_PATH" "$(GPUMEMTRACE_SYMBOL_PATH=/nonexistent:$PWD/b site t.gmt)" \
	"inner (lib.c:8)"
cp t.gmt s.gmt
"$GMT_CLI" symbolize s.gmt >out.txt
grep -q "left unnamed in $PWD/a/libmv.so: not on this machine (build-id [0-9a-f]*)" out.txt ||
	fail "symbolize does not say why: $(cat out.txt)"
"$GMT_CLI" symbolize --symbol-path "$PWD/b" s.gmt >out.txt
grep -q "$PWD/a/libmv.so: read from $PWD/b/sub/libmv.so (found by build-id)" out.txt ||
	fail "symbolize does not say where: $(cat out.txt)"
mv b/sub/libmv.so b/moved.so
expect_eq "named into the trace" "$(site s.gmt)" "inner (lib.c:8)"

# Replaced by another build at its path: never used for the old addresses.
$cc -shared -fPIC -g -O1 -DOTHER "${inc[@]}" lib.c -o a/libmv.so -L"$SIM_DIR" -l:libcuda.so.1
expect_eq "replaced" "$(site t.gmt | cut -c1-11)" "libmv.so+0x"
cp t.gmt r.gmt
"$GMT_CLI" symbolize r.gmt >out.txt
grep -q "left unnamed in $PWD/a/libmv.so: the file at its path has another build-id" out.txt ||
	fail "symbolize does not say the file was replaced: $(cat out.txt)"
expect_eq "replaced, found elsewhere" "$(GPUMEMTRACE_SYMBOL_PATH=$PWD/b site t.gmt)" "inner (lib.c:8)"

# Stripped, its debug file under DIR/.build-id/xx/rest.debug.
objcopy --only-keep-debug b/moved.so lib.debug
objcopy --strip-all b/moved.so a/libmv.so
id=$(readelf -n a/libmv.so | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
[ -n "$id" ] || fail "no build-id in the library"
mkdir -p "dbg/.build-id/${id:0:2}"
mv lib.debug "dbg/.build-id/${id:0:2}/${id:2}.debug"
expect_eq "stripped, no debug file" "$(site t.gmt | cut -c1-11)" "libmv.so+0x"
expect_eq "stripped, its debug file" "$(GPUMEMTRACE_SYMBOL_PATH=$PWD/dbg site t.gmt)" "inner (lib.c:8)"
echo ok
