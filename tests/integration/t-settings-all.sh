# A bad value in every GPUMEMTRACE_* setting: exactly one warning naming it,
# the default used, the program's output and exit code unchanged.
. "$TESTS_DIR/integration/lib.sh"
untraced "$PROG_DIR/life" exit 4 >want.txt
declare -A bad=([STACK_DEPTH]=-1 [FLUSH_MS]=0 [RING_KB]=1x [FULL_WAIT_MS]=99999999999999999999
	[SYMBOLIZE]=2 [DISABLE]=yes [PYTHON]=on [PID_ONLY]=-5 [SAMPLE_MS]=-1 [STACK_CACHE]=3
	[COMPRESS]=2 [CLOCK]=3 [RECORD_ARGV]=no)
for var in "${!bad[@]}"; do
	rm -f gpumemtrace.*
	rc=0
	env "GPUMEMTRACE_$var=${bad[$var]}" LD_PRELOAD=$GMT_LIB LD_LIBRARY_PATH=$SIM_DIR \
		"$PROG_DIR/life" exit 4 >got.txt 2>err.txt || rc=$?
	expect_eq "$var: exit" $rc 0
	cmp -s want.txt got.txt || fail "$var: output changed"
	expect_eq "$var: stderr lines" "$(wc -l <err.txt)" 1
	grep -q "^gpumemtrace: ignoring GPUMEMTRACE_$var='${bad[$var]}' (want an integer in" err.txt ||
		fail "$var: $(cat err.txt)"
	"$GMT_CLI" summary --json "$(the_trace)" >s.json || fail "$var: no readable trace"
	expect_eq "$var: events" "$(json s.json 'd["events"]')" 7 # 6 + the context retain
done
# Every setting the library reads is covered here (GPUMEMTRACE_OUTPUT: t-output-path,
# GPUMEMTRACE_TRACE_LIST: t-cli-run-own).
read_vars=$(grep -o '"GPUMEMTRACE_[A-Z_]*"' "$TESTS_DIR/../preload/settings.c" | tr -d '"' | sort -u)
[ "$(echo "$read_vars" | wc -w)" -ge 10 ] || fail "preload/settings.c lists too few settings: $read_vars"
for v in $read_vars; do
	[ "$v" = GPUMEMTRACE_OUTPUT ] || [ "$v" = GPUMEMTRACE_TRACE_LIST ] || [ -n "${bad[${v#GPUMEMTRACE_}]:-}" ] || fail "$v not covered"
done
# An empty GPUMEMTRACE_OUTPUT is the default name, without a warning.
rm -f gpumemtrace.*
GPUMEMTRACE_OUTPUT= traced "$PROG_DIR/life" exit 4 2>err.txt
[ ! -s err.txt ] || fail "empty output: $(cat err.txt)"
the_trace >/dev/null
echo ok
