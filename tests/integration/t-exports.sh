# The library exports exactly the symbols in preload/hooks/exports.map and links
# neither libcuda nor libcudart.
. "$TESTS_DIR/integration/lib.sh"
command -v nm >/dev/null || skip "nm not installed"
nm -D --defined-only "$GMT_LIB" | awk '{print $3}' | sed 's/@.*//' | sort -u >actual.txt
sed -n 's/^ *\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$TESTS_DIR/../preload/hooks/exports.map" | sort -u >expected.txt
diff expected.txt actual.txt || fail "export list differs from preload/hooks/exports.map (< expected, > actual)"
[ "$(wc -l <actual.txt)" -gt 60 ] || fail "suspiciously few exports"
if readelf -d "$GMT_LIB" | grep NEEDED | grep -Eq 'libcuda|libcudart'; then
	fail "the library links CUDA: $(readelf -d "$GMT_LIB" | grep NEEDED)"
fi
echo ok
