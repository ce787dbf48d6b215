# The warning flags (Makefile's WARN): -Wmissing-prototypes -Wformat=2 -Wvla
# on everywhere; -Werror in a git checkout (developers, CI's clean clone)
# and in `make check`, not in a release's plain `make` (a tree without .git:
# a tarball, pip's sdist), where a newer compiler's warning must not stop
# a user's build.
. "$TESTS_DIR/integration/lib.sh"
root=$(cd "$TESTS_DIR/.." && pwd)
cc_line() { # dir make-args... -> the command that compiles cli/main.c
	make -s -C "$1" -n -B "${@:2}" "$PWD/b/obj/cli/cli/main.o" BUILD="$PWD/b" | grep -- ' -c cli/main.c'
}
mkdir rel
(cd "$root" && git ls-files Makefile '*.mk' cli/main.c | tar -cf - -T -) | tar -xf - -C rel
[ ! -e rel/.git ] || fail "the release tree has .git"
cc_line rel >rel.txt || fail "no compile line in the release tree"
! grep -q -- '-Werror' rel.txt || fail "a release's plain make has -Werror: $(cat rel.txt)"
cc_line rel WERROR=1 | grep -q -- '-Werror' || fail "WERROR=1 has no -Werror"
cc_line "$root" >co.txt || fail "no compile line in the checkout"
grep -q -- '-Werror' co.txt || fail "the checkout's make has no -Werror: $(cat co.txt)"
! cc_line "$root" WERROR=0 | grep -q -- '-Werror' || fail "WERROR=0 has -Werror"
for f in -Wmissing-prototypes -Wformat=2 -Wvla; do
	grep -q -- " $f " rel.txt || fail "no $f"
done
echo ok
