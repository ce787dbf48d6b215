#!/usr/bin/env bash
# The pages users read hold no placeholder and no build machine's paths
# (issue 27.9: questions.md's pool-reserve paragraph had become a literal
# "XX" after a regeneration, and its outputs showed /work/... command
# lines). scripts/gen-questions.py strips the paths; this test fails on
# either, in the README and every page of docs/.
. "$TESTS_DIR/integration/lib.sh"
root=$TESTS_DIR/..
pages=("$root/README.md" "$root"/docs/*.md)
bad=$(grep -nE '^[[:space:]]*(XX+|TODO|FIXME|TBD)([[:space:]:.]|$)' "${pages[@]}" || true)
[ -z "$bad" ] || fail "placeholders: $bad"
bad=$(grep -nE '(^|[[:space:](`"=])/(work|root|home)/|/tmp/gc' "${pages[@]}" || true)
[ -z "$bad" ] || fail "host paths: $bad"
echo ok
