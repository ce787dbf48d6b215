# gpumemtrace run reports exactly the traces its command (and the command's
# descendants) wrote: two runs in one directory at the same time never read
# each other's traces (issue 18, case 11).
. "$TESTS_DIR/integration/lib.sh"
export LD_LIBRARY_PATH=$SIM_DIR
export GPUMEMTRACE_LIBRARY=$GMT_LIB
mkdir tmp
export TMPDIR=$PWD/tmp

# Each command starts, waits until the other has started (so both runs are
# past their start before either trace exists), traces, then waits until the
# other has traced too (so both traces exist when either run looks).
wait_for='i=0; while [ ! -e "$1" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done'
step() { # me other PROGRAM-ARGS...
	local me=$1 other=$2
	shift 2
	echo "wait_for() { $wait_for; }; touch $me.started; wait_for $other.started; $* || exit \$?;" \
		"touch $me.done; wait_for $other.done"
}
# small: a parent (2 x 1 MiB, peak 2 MiB) that forks a child (6 x 2 MiB, peak
# 4 MiB): both traces are its own. big: 400 x 1 MiB, peak 201 MiB.
rc_small=0 rc_big=0
"$GMT_CLI" run --check-max-peak 16MiB -- sh -c "$(step small big "$PROG_DIR/life" fork 2)" \
	>small.out 2>small.err &
small=$!
"$GMT_CLI" run --check-max-peak 1GiB -- sh -c "$(step big small "$PROG_DIR/life" exit 400)" \
	>big.out 2>big.err &
big=$!
wait $small || rc_small=$?
wait $big || rc_big=$?
[ -e small.done ] && [ -e big.done ] || fail "the commands did not meet: $(cat small.err big.err)"
expect_eq "traces in the directory" "$(ls gpumemtrace.*.gmt | wc -l)" 3
expect_eq "small: gate" "$rc_small" 0
expect_eq "big: gate" "$rc_big" 0
grep -q "PASS  max-peak" small.err || fail "small: no gate line: $(cat small.err)"
expect_eq "small: traces reported" "$(grep -c 'trace written to' small.err)" 2
expect_eq "big: traces reported" "$(grep -c 'trace written to' big.err)" 1
# Every trace is reported by exactly one run, and each run's are its own.
for f in gpumemtrace.*.gmt; do
	n=$(cat small.err big.err | grep -c "trace written to $PWD/$f\$" || true)
	expect_eq "$f reported" "$n" 1
done
big_trace=$(sed -n 's/^gpumemtrace run: trace written to //p' big.err)
"$GMT_CLI" summary --json "$big_trace" >big.json
expect_eq "big: its own" "$(json big.json 'd["events"]')" 601 # 400 allocs, 200 frees, the context retain
for t in $(sed -n 's/^gpumemtrace run: trace written to //p' small.err); do
	"$GMT_CLI" summary --json "$t" >s.json
	[ "$(json s.json 'd["events"]')" -lt 20 ] || fail "small reported a big trace: $t"
done
[ -z "$(ls tmp)" ] || fail "trace lists left behind: $(ls tmp)"

# A run inside a run: the outer one reports the inner one's trace too.
rm -f gpumemtrace.*
"$GMT_CLI" run -- "$GMT_CLI" run -q -- "$PROG_DIR/life" exit 2 >out.txt 2>err.txt ||
	fail "nested: $(cat err.txt)"
expect_eq "nested: reported twice" "$(grep -c "trace written to $PWD/$(the_trace)\$" err.txt)" 2

# The library alone: a list it cannot add to gets one line; the trace is
# written and the program runs on unchanged.
rm -f gpumemtrace.*
"$PROG_DIR/life" exit 4 >want.txt
rc=0
GPUMEMTRACE_TRACE_LIST=$PWD/no-such-list traced "$PROG_DIR/life" exit 4 >got.txt 2>err.txt || rc=$?
expect_eq "no list: exit" "$rc" 0
cmp -s want.txt got.txt || fail "no list: output changed"
expect_eq "no list: stderr lines" "$(wc -l <err.txt)" 1
grep -q "^gpumemtrace: cannot add .* to GPUMEMTRACE_TRACE_LIST=$PWD/no-such-list: No such file" \
	err.txt || fail "no list: $(cat err.txt)"
[ ! -e no-such-list ] || fail "the library created the list"
"$GMT_CLI" summary "$(the_trace)" >/dev/null || fail "no list: no readable trace"
echo ok
