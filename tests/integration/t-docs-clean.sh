#!/usr/bin/env bash
# The pages users read hold no placeholder and no build machine's paths
# (issue 27.9: questions.md's pool-reserve paragraph had become a literal
# "XX" after a regeneration, and its outputs showed /work/... command
# lines; an example's /home/user/train.py is a user's path, not ours).
# scripts/gen-questions.py strips the paths; this test fails on
# either, in the README and every page of docs/; and the README has a
# TensorFlow line and explain in its reports table.
. "$TESTS_DIR/integration/lib.sh"
root=$TESTS_DIR/..
pages=("$root/README.md" "$root"/docs/*.md)
bad=$(grep -nE '^[[:space:]]*(XX+|TODO|FIXME|TBD)([[:space:]:.]|$)' "${pages[@]}" || true)
[ -z "$bad" ] || fail "placeholders: $bad"
bad=$(grep -nE '(^|[[:space:](`"=])/(work|root)/|/tmp/gc' "${pages[@]}" || true)
[ -z "$bad" ] || fail "host paths: $bad"
# the README's copy-paste lines cover TensorFlow, its reports table explain
grep -q '^| TensorFlow | `TF_FORCE_GPU_ALLOW_GROWTH=true gpumemtrace run' "$root/README.md" ||
	fail "README: no TensorFlow line"
sed -n '/^### Reports/,/^###* [^R]/p' "$root/README.md" | grep -q '| `explain`' ||
	fail "README: explain is not in the reports table"
echo ok
