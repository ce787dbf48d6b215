# The preload library's dependency is one-way (docs/design.md, "Finding
# real functions"): the hooks (preload/hooks/) reach the core through
# preload/tracer.h alone, and the core never includes the hooks' headers
# nor uses a symbol that only a hooks object defines.
. "$TESTS_DIR/integration/lib.sh"
command -v nm >/dev/null || skip "nm not installed"
src=$TESTS_DIR/..
obj=$BUILD/obj/lib/preload
ls "$obj"/*.o "$obj"/hooks/*.o >/dev/null 2>&1 || skip "no preload objects in $obj"

if grep -n '#include "preload/hooks' "$src"/preload/*.c "$src"/preload/*.h; then
	fail "the core includes a hooks header (above)"
fi
if grep -n '#include "preload/' "$src"/preload/hooks/*.c "$src"/preload/hooks/*.h |
	grep -v -e '"preload/hooks/' -e '"preload/tracer.h"'; then
	fail "a hook includes a core header other than preload/tracer.h (above)"
fi

nm -g --defined-only "$obj"/hooks/*.o | awk 'NF == 3 {print $3}' | sort -u >hooks.txt
nm -g --defined-only "$obj"/*.o | awk 'NF == 3 {print $3}' | sort -u >core.txt
[ "$(wc -l <hooks.txt)" -gt 50 ] || fail "suspiciously few symbols in the hooks' objects"
comm -23 hooks.txt core.txt >hooks-only.txt
for o in "$obj"/*.o; do
	nm -u "$o" | awk '{print $NF}' | sort -u | comm -12 - hooks-only.txt | sed "s|^|${o##*/}: |"
done >calls.txt
[ ! -s calls.txt ] || fail "core objects use symbols only the hooks define: $(cat calls.txt)"
echo ok
