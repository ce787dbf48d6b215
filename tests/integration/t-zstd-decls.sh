# Our libzstd prototypes (common/zstd.h, GMT_ZSTD_FUNCS) against zstd.h: every
# function has zstd.h's type, and the content-size constants agree. Skips
# (77) without zstd.h (libzstd-dev), which nothing else needs. GMT_ZSTD_H
# names another zstd.h; GMT_DECLS_COMMON another copy of common/ (to prove a
# broken prototype fails).
. "$TESTS_DIR/integration/lib.sh"
root=$(cd "$TESTS_DIR/.." && pwd)
hdr=${GMT_ZSTD_H:-/usr/include/zstd.h}
ours=${GMT_DECLS_COMMON:-$root/common}/zstd.h
[ -f "$hdr" ] || skip "no $hdr (libzstd-dev): prototypes not checked"
cat >decls.c <<EOC
#include "$hdr"
#include "$ours"
#define SAME(ret, name, params) \\
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), \\
		       #name " differs from zstd.h");
GMT_ZSTD_FUNCS(SAME)
_Static_assert(GMT_ZSTD_CONTENTSIZE_UNKNOWN == ZSTD_CONTENTSIZE_UNKNOWN, "UNKNOWN");
_Static_assert(GMT_ZSTD_CONTENTSIZE_ERROR == ZSTD_CONTENTSIZE_ERROR, "ERROR");
EOC
${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -fsyntax-only decls.c ||
	fail "a prototype in common/zstd.h differs from $hdr"
n=$(grep -c '^	X(' "$ours")
[ "$n" -ge 8 ] || fail "only $n functions found in GMT_ZSTD_FUNCS"
echo "$n prototypes match $hdr"
