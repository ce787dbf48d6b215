#!/usr/bin/env bash
# Every GPUMEMTRACE_ variable the library or the CLI reads is documented in
# the README's settings table and in gpumemtrace(7); test-only ones are
# named as such in the code (GPUMEMTRACE_ZSTD_LIB).
source "$(dirname "$0")/lib.sh"
root=$(cd "$TESTS_DIR/.." && pwd)
vars=$(grep -rhoE '"GPUMEMTRACE_[A-Z_]+"' "$root/preload" "$root/cli" "$root/common" |
	tr -d '"' | sort -u)
[ "$(echo "$vars" | wc -w)" -ge 12 ] || fail "too few settings found in the sources: $vars"
for v in $vars; do
	[ "$v" = GPUMEMTRACE_ZSTD_LIB ] && continue # test-only (common/zstd.c)
	grep -q "^| \`$v\` |" "$root/README.md" || fail "$v: not in README.md's settings table"
	grep -q "^\.B $v\$" "$root/share/man/gpumemtrace.7" || fail "$v: not in gpumemtrace(7)"
done
echo ok
