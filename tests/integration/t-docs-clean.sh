# The pages a user reads (README.md, docs/*.md, the validation write-ups,
# the man pages) show no host's paths (/work/..., /home/...: the machines
# the examples were made on) and no placeholder left behind (a literal XX).
# Raw run records (docs/validation/*/reports, logs) are kept as they were.
. "$TESTS_DIR/integration/lib.sh"
root=$(cd "$TESTS_DIR/.." && pwd)
cd "$root" || fail "no $root"
pages=$(git ls-files README.md 'docs/*.md' 'share/man/*' 'python/*.md' 'bench/*.md')
[ -n "$pages" ] || fail "no pages found"
# shellcheck disable=SC2086
hits=$(grep -nE '(^|[^A-Za-z0-9_.~-])/(work|home)/' $pages) && fail "host paths: $hits"
# shellcheck disable=SC2086
hits=$(grep -nw 'XX' $pages) && fail "placeholders: $hits"
echo ok
