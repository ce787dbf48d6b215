#!/usr/bin/env bash
# The one option parser (cli/options.c) every command uses: options before or
# after the traces, "--opt=V" and "--opt V", short forms, "--", repeatable
# options, and the usage errors (exit 2, one line).
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"
"$MKTRACE" good.gmt <<'T'
header start_mono=100
device ord=0 name=G total=1000
events tid=1
ev api=cudaMalloc t=200 ptr=0x1000 size=10 dev=0
ev api=cudaMalloc t=300 ptr=0x2000 size=20 dev=0
trailer t=400
T

# the same output however the options are spelled or placed
"$GMT_CLI" top --json -n 1 good.gmt >a.json || fail "top -n 1"
for args in "good.gmt --json -n 1" "--json -n=1 good.gmt" "--limit=1 good.gmt --json" \
	"--limit 1 --json -- good.gmt"; do
	# shellcheck disable=SC2086
	"$GMT_CLI" top $args >b.json || fail "top $args"
	cmp -s a.json b.json || fail "top $args: output differs"
done
cp good.gmt ./-x.gmt
"$GMT_CLI" summary --json -- -x.gmt >/dev/null || fail "-- before a trace named -x.gmt"
"$GMT_CLI" summary - <good.gmt >/dev/null 2>&1 || true # '-' is an argument, not an option

# repeatable options keep every value, in order
"$GMT_CLI" check --max-peak 1GiB --ignore-library a --ignore-library=b --json good.gmt >c.json ||
	fail "check --ignore-library: $(cat c.json)"
expect_eq "ignore_libraries" "$(json c.json 'd["ignore_libraries"]')" "['a', 'b']"

# usage errors
expect_run "needs a value" 2 "^gpumemtrace top: option '--limit' needs a value" "$GMT_CLI" top good.gmt -n
expect_run "not a number" 2 "^gpumemtrace leaks: option '--limit' wants a number, not 'x'" "$GMT_CLI" leaks -n x good.gmt
expect_run "range" 2 "^gpumemtrace growth: option '--width' wants an integer from 10 to 1000, got '5'" "$GMT_CLI" \
	growth --width=5 good.gmt
expect_run "choice" 2 "^gpumemtrace diff: --by: unknown grouping 'api' \(stack, function, library\)" "$GMT_CLI" \
	diff --by api good.gmt good.gmt
expect_run "size" 2 "^gpumemtrace check: --max-peak: bad size '1x'" "$GMT_CLI" check --max-peak 1x good.gmt
expect_run "required" 2 "^gpumemtrace export: missing --format perfetto\|chrome-json\|csv\|pprof" "$GMT_CLI" export good.gmt
expect_run "flag value" 2 "^gpumemtrace flamegraph: option '--folded' takes no value" "$GMT_CLI" \
	flamegraph --folded=yes good.gmt
expect_run "no trace" 2 "^gpumemtrace oom: missing TRACE argument" "$GMT_CLI" oom --json
expect_run "no command" 2 "^gpumemtrace run: missing COMMAND" "$GMT_CLI" run -q --

# --help: stdout, exit 0, every option listed with -h
for c in "top --json" "check --json" "run -q" "export -o x"; do
	# shellcheck disable=SC2086
	"$GMT_CLI" $c --help >h.txt 2>err || fail "$c --help: $(cat err)"
	grep -q '^  -h, --help  ' h.txt || fail "$c --help: no -h line"
done
echo ok
