#!/usr/bin/env bash
# The man page, the bash completion and docs/cli.md are generated from the
# commands' option tables (make gen-docs): fail when a checked-in copy
# differs, and check that what they offer is what the commands accept.
. "$(dirname "$0")/lib.sh"
root=$TESTS_DIR/..
"$root/scripts/gen-docs.sh" "$GMT_CLI" --check >drift.txt 2>&1 || fail "$(cat drift.txt)"

# nothing documented that does not exist
grep -q 'gpumemtrace report' "$root/share/man/gpumemtrace.1" && fail "man page lists 'report'"
for c in summary top leaks growth fragmentation oom diff check accounting; do
	grep -q "^\.SS $c .*\\\\-\\\\-json" "$root/share/man/gpumemtrace.1" || fail "man: $c without --json"
done

# every value the completion offers for --by, --sort, --at, --format is accepted
comp() { # words...
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpumemtrace; echo "${COMPREPLY[*]}"' \
		_ "$root/share/completion/gpumemtrace.bash" gpumemtrace "$@"
}
expect_eq "top --by" "$(comp top --by '')" "stack function library api range"
expect_eq "leaks --by" "$(comp leaks --by '')" "stack function library api"
expect_eq "plot --by" "$(comp plot --by '')" "kind library"
expect_eq "diff --by" "$(comp diff --by '')" "stack function library"
expect_eq "export --f" "$(comp export --f)" "--format"
expect_eq "check --ig" "$(comp check --ig)" "--ignore-library"
for c in $("$GMT_CLI" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} /^$/{on=0}'); do
	"$GMT_CLI" "$c" --help >h.txt || fail "$c --help"
	for o in $(comp "$c" -); do
		[ "$o" = -- ] || grep -q -- "$o\b" h.txt || fail "$c: completion offers $o, --help lacks it"
	done
done

# the choices a command refuses are listed in full
rc=0
"$GMT_CLI" top --by kind x.gmt 2>err || rc=$?
expect_eq "top --by kind: exit" "$rc" 2
grep -q "^gpumemtrace top: --by: unknown grouping 'kind' (stack, function, library, api, range)" err ||
	fail "top --by kind: $(cat err)"
rc=0
"$GMT_CLI" plot --by stack x.gmt 2>err || rc=$?
expect_eq "plot --by stack: exit" "$rc" 2
grep -q "unknown layering 'stack' (kind, library)" err || fail "plot --by stack: $(cat err)"

# one parser: the same rules everywhere
for c in summary top leaks growth fragmentation oom diff check accounting; do
	rc=0
	"$GMT_CLI" "$c" --json=1 x.gmt 2>err || rc=$?
	expect_eq "$c --json=1" "$rc" 2
	grep -q "^gpumemtrace $c: option '--json' takes no value" err || fail "$c --json=1: $(cat err)"
done
rc=0
"$GMT_CLI" check --max-peak 1GiB --ignore-library=a --ignore-library b 2>err || rc=$?
grep -q "^gpumemtrace check: missing TRACE argument" err || fail "check: $(cat err)"
rc=0
"$GMT_CLI" --gen nothing 2>err || rc=$?
expect_eq "--gen nothing" "$rc" 2
echo ok
