# The library exports exactly the symbols of its version script,
# $BUILD/exports.map (made from preload/hooks/exports.map.in), among them every
# hook in common/cuda-api.h's lists, and links neither libcuda nor libcudart.
. "$TESTS_DIR/integration/lib.sh"
command -v nm >/dev/null || skip "nm not installed"
map=$BUILD/exports.map
[ -f "$map" ] || fail "no $map: make generates it with the library"
nm -D --defined-only "$GMT_LIB" | awk '{print $3}' | sed 's/@.*//' | sort -u >actual.txt
sed -n 's/^ *\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$map" | sort -u >expected.txt
diff expected.txt actual.txt || fail "export list differs from $map (< expected, > actual)"
[ "$(wc -l <actual.txt)" -gt 60 ] || fail "suspiciously few exports"

# The lists read from the header itself, not through the preprocessor as the
# map is: each X(name, ...) row under its #define.
awk '/^#define GMT_/ { list = $2; sub(/\(.*/, "", list) }
     match($0, /^[ \t]*X\([A-Za-z_][A-Za-z0-9_]*/) {
	name = substr($0, RSTART, RLENGTH); sub(/^[ \t]*X\(/, "", name); print list, name }' \
	"$TESTS_DIR/../common/cuda-api.h" >lists.txt
awk '$1 ~ /HOOKS/ { print $2 }' lists.txt | sort -u >hooks.txt
[ "$(wc -l <hooks.txt)" -gt 60 ] || fail "suspiciously few hooks read from common/cuda-api.h"
missing=$(comm -23 hooks.txt actual.txt)
[ -z "$missing" ] || fail "hooks in common/cuda-api.h not exported: $missing"
awk '$1 == "GMT_DRIVER_USED" { print $2 }' lists.txt | sort -u >used.txt
[ -s used.txt ] || fail "no GMT_DRIVER_USED rows read from common/cuda-api.h"
wrong=$(comm -12 used.txt actual.txt)
[ -z "$wrong" ] || fail "driver functions the tracer only calls are exported: $wrong"

if readelf -d "$GMT_LIB" | grep NEEDED | grep -Eq 'libcuda|libcudart'; then
	fail "the library links CUDA: $(readelf -d "$GMT_LIB" | grep NEEDED)"
fi
echo ok
