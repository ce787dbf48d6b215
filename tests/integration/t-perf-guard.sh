# Regression guard: the instructions each event costs (hook + flush thread,
# counted by callgrind, which is stable where wall time is not) must stay
# within 25% of tests/perf-guard.baseline. Fixed costs (start, trace file,
# exit) cancel out: cost = ((traced N2 - traced N1) - (untraced N2 -
# untraced N1)) / events(N2 - N1). GMT_PERF_GUARD_UPDATE=1 rewrites the
# baseline after a deliberate change (say why in the commit).
. "$TESTS_DIR/integration/lib.sh"
command -v valgrind >/dev/null || skip "valgrind not installed (scripts/install-deps.sh installs it)"
[ -z "${SANITIZE:-}" ] || skip "sanitizer builds: valgrind cannot run them, and their counts mean nothing"
baseline=$TESTS_DIR/perf-guard.baseline
N1=2000 N2=6000 DEPTH=26 # 26 levels + loop, main and libc's 3: 32 frames

# GPUMEMTRACE_CLOCK=0: the TSC line is fitted after a time, not after a
# number of events, so with it the two run lengths would not cancel.
count() { # N env...: instructions of all threads of hookloop N
	local n=$1
	shift
	env LD_LIBRARY_PATH="$SIM_DIR:$PROG_DIR" "$@" GPUMEMTRACE_FLUSH_MS=60000 GPUMEMTRACE_SAMPLE_MS=0 SIMCUDA_NVML=fail \
		GPUMEMTRACE_CLOCK=0 GPUMEMTRACE_SYMBOLIZE=0 GPUMEMTRACE_OUTPUT="$PWD/t.%n.gmt" \
		valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$PROG_DIR/hookloop" "$n" "$DEPTH" >/dev/null 2>cg.err </dev/null ||
		{ cat cg.err >&2; fail "callgrind run failed: $*"; }
	sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' cg.err | tr -d , | head -1
}
delta() { # env...: instructions of N2 - N1 pairs
	echo $(($(count "$N2" "$@") - $(count "$N1" "$@")))
}

events=$((2 * (N2 - N1)))
base=$(delta)
off=$(( ($(delta LD_PRELOAD=$GMT_LIB GPUMEMTRACE_STACK_DEPTH=0) - base) / events ))
on=$(( ($(delta LD_PRELOAD=$GMT_LIB) - base) / events ))
echo "instructions per event: stacks off $off, stacks on (32 frames) $on"
ls t.*.gmt >/dev/null 2>&1 || fail "the traced runs wrote no trace"

if [ "${GMT_PERF_GUARD_UPDATE:-}" = 1 ]; then
	printf '# Instructions per event (callgrind: hook + flush thread), t-perf-guard.sh\nstacks_off %d\nstacks_32 %d\n' \
		"$off" "$on" >"$baseline"
	echo "baseline updated: $baseline"
	exit 0
fi
for key in stacks_off stacks_32; do
	want=$(awk -v k=$key '$1 == k {print $2}' "$baseline")
	got=$([ $key = stacks_off ] && echo "$off" || echo "$on")
	[ -n "$want" ] || fail "no $key in $baseline"
	[ $((got * 100)) -le $((want * 125)) ] ||
		fail "$key: $got instructions per event, more than 25% over the baseline $want ($baseline)"
done
echo ok
