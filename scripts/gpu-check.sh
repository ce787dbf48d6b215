#!/usr/bin/env bash
# The tracer on a real GPU: plain CUDA C (dynamic and static runtime),
# PyTorch under four allocators, NCCL, JAX under three policies, CuPy's pools,
# the stack cache checked against libunwind on their stacks, and the
# overhead. Each scenario runs with and without the tracer; the trace is set
# beside what the program itself saw. A table comes last.
#
#   scripts/gpu-check.sh [--out DIR] [--prebuilt DIR] [--only "plain torch ..."]
#                        [--steps N]
#
#   --out DIR       logs, reports and traces (default gpu-check-out)
#   --prebuilt DIR  use DIR/libgpumemtrace.so and DIR/gpumemtrace instead of
#                   building; libraries they need that this machine lacks
#                   are taken from DIR/vendor (see docs/validation/README.md)
#   --only LIST     scenarios: env plain torch nccl jax cupy eager stacks
#                   overhead sim
#   --steps N       PyTorch training steps (default 300)
#
# Needs: an NVIDIA GPU and driver, nvcc for the plain scenario, and python3
# with torch, jax, cupy for theirs (a missing one is reported and skipped).
# Exit status: 0 when every check passed, 1 when one failed, 2 usage, 3 no
# GPU here (only the env and sim scenarios run without one).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=gpu-check-out
PREBUILT=
ONLY="env plain torch nccl jax cupy eager stacks overhead sim"
STEPS=300
needs_value() { [ $# -ge 2 ] || { echo "gpu-check: $1 needs a value (try --help)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
	case $1 in
	--out) needs_value "$@"; OUT_DIR=$2; shift 2 ;;
	--prebuilt) needs_value "$@"; PREBUILT=$2; shift 2 ;;
	--only) needs_value "$@"; ONLY=$2; shift 2 ;;
	--steps) needs_value "$@"; STEPS=$2; shift 2 ;;
	-h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
	*) echo "gpu-check: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
done
for s in $ONLY; do
	case " env plain torch nccl jax cupy eager stacks overhead sim " in
	*" $s "*) ;;
	*) echo "gpu-check: unknown scenario '$s' (try --help)" >&2; exit 2 ;;
	esac
	case $s in
	env | sim) ;;
	*) nvidia-smi -L >/dev/null 2>&1 ||
		{ echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L failed); scenario '$s' needs one" >&2; exit 3; } ;;
	esac
done
mkdir -p "$OUT_DIR"/traces "$OUT_DIR"/runs || exit 2
OUT_DIR=$(cd "$OUT_DIR" && pwd)
exec > >(tee -a "$OUT_DIR/gpu-check.log") 2>&1
export PYTHONUNBUFFERED=1

ROWS=()
FAILED=0
row() { ROWS+=("$*"); }
fail() { FAILED=1; row "$1 | FAIL | $2"; }
want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }
section() { printf '\n===== %s =====\n' "$*"; }
have_py() { python3 -c "import $1" >/dev/null 2>&1; }

# ---- the tracer: built here, or carried ---------------------------------
if [ -n "$PREBUILT" ]; then
	BIN=$(cd "$PREBUILT" && pwd)
	# A library this machine lacks comes from vendor/ via the RPATH
	# $ORIGIN/deps the carried build was linked with; only missing ones, so
	# the program's own copies are never shadowed.
	mkdir -p "$BIN/deps"
	for _ in 1 2 3 4; do
		for f in "$BIN/libgpumemtrace.so" "$BIN/gpumemtrace"; do
			ldd "$f" | awk '/not found/ {print $1}'
		done | sort -u | while read -r so; do
			[ -e "$BIN/vendor/$so" ] && cp "$BIN/vendor/$so" "$BIN/deps/"
		done
	done
else
	BIN=$OUT_DIR/build
	section build
	(cd "$ROOT" && make -j"$(nproc)" BUILD="$BIN" all bench-progs) >"$OUT_DIR/build.log" 2>&1 ||
		{ tail -20 "$OUT_DIR/build.log"; echo "gpu-check: the build failed (scripts/install-deps.sh first?)"; exit 1; }
fi
CLI=$BIN/gpumemtrace
LIB=$BIN/libgpumemtrace.so
export GPUMEMTRACE_LIBRARY=$LIB
if ! ldd "$LIB" >/dev/null 2>&1 || ldd "$LIB" "$CLI" | grep -q "not found"; then
	ldd "$LIB" "$CLI"
	echo "gpu-check: $LIB or $CLI cannot load here"
	exit 1
fi

# run NAME ENV... -- CMD...: untraced, output in runs/NAME.out
run_plain() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	env "${envs[@]}" timeout 240 "$@" >"$OUT_DIR/runs/$name.out" 2>"$OUT_DIR/runs/$name.err"
}
# traced NAME ENV... -- CMD...: through `gpumemtrace run`, the way users do;
# sets TRACE to the largest trace the run wrote (the main process's).
traced() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	rm -f "$OUT_DIR/traces/$name".*.gmt
	env "${envs[@]}" timeout 240 "$CLI" run -q -o "$OUT_DIR/traces/$name.%p.gmt" -- "$@" \
		>"$OUT_DIR/runs/$name.out" 2>"$OUT_DIR/runs/$name.err"
	local rc=$?
	TRACE=$(ls -S "$OUT_DIR/traces/$name".*.gmt 2>/dev/null | head -1)
	return $rc
}
# report NAME: the CLI's reports of TRACE, kept beside it
report() {
	"$ROOT/scripts/validation-reports.sh" "$CLI" "$TRACE" >"$OUT_DIR/runs/$1.reports.txt"
}
result_of() { sed -n 's/^RESULT //p' "$OUT_DIR/runs/$1.out" | head -1; }
check_row() { # check_row MODE NAME
	local line
	python3 "$ROOT/tests/gpu/check.py" "$1" "$CLI" "$OUT_DIR/runs/$2.out" "$TRACE" >"$OUT_DIR/runs/$2.check" 2>&1
	local rc=$?
	sed 's/^/  /' "$OUT_DIR/runs/$2.check" | grep -v '^  ROW'
	line=$(sed -n 's/^ROW | //p' "$OUT_DIR/runs/$2.check")
	if [ $rc -eq 0 ]; then row "$2 | ok | $line"; else fail "$2" "$line"; fi
}

# scenario MODE NAME ENV... -- CMD...: a traced run, its reports, its row
scenario() {
	local mode=$1 name=$2
	shift 2
	if traced "$name" "$@"; then
		report "$name"
		check_row "$mode" "$name"
	else
		fail "$name" "exit $? traced: $(tail -1 "$OUT_DIR/runs/$name.err")"
	fi
}

if want env; then
	section environment
	date -u +%Y-%m-%dT%H:%M:%SZ
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
	nvcc --version 2>/dev/null | tail -2 || echo "nvcc: none"
	uname -sr; nproc
	python3 - <<'EOF' 2>/dev/null || true
import importlib, sys
print("python", sys.version.split()[0])
for m in ("torch", "jax", "jaxlib", "cupy"):
    try:
        print(m, importlib.import_module(m).__version__)
    except Exception as e:
        print(m, "unavailable:", type(e).__name__)
EOF
	"$CLI" --version 2>/dev/null || true
fi

if want plain; then
	section "plain CUDA C"
	if command -v nvcc >/dev/null; then
		for rt in shared static; do
			name=plain-$rt
			nvcc -O2 -cudart "$rt" -o "$OUT_DIR/runs/$name" "$ROOT/tests/gpu/plain.cu" -lcuda \
				>"$OUT_DIR/runs/$name.build" 2>&1 || { fail "$name" "nvcc failed"; continue; }
			run_plain "$name-untraced" -- "$OUT_DIR/runs/$name" check
			urc=$?
			traced "$name" GPUMEMTRACE_SAMPLE_MS=10 -- "$OUT_DIR/runs/$name" check
			trc=$?
			echo "$name: exit $urc untraced, $trc traced"
			[ "$urc" = "$trc" ] || fail "$name" "exit status $urc untraced, $trc traced"
			report "$name"
			check_row plain "$name"
		done
	else
		row "plain | skipped | no nvcc"
	fi
fi

if want torch; then
	section PyTorch
	if have_py torch; then
		for cfg in default expandable async nocache; do
			envs=(STEPS="$STEPS")
			case $cfg in
			expandable) envs+=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) ;;
			async) envs+=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) ;;
			nocache) envs+=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
			esac
			scenario torch "torch-$cfg" "${envs[@]}" -- python3 "$ROOT/tests/gpu/torch_train.py"
		done
	else
		row "torch | skipped | no torch"
	fi
fi

if want nccl; then
	section NCCL
	if have_py torch; then
		scenario nccl nccl -- python3 "$ROOT/tests/gpu/nccl_allreduce.py"
	else
		row "nccl | skipped | no torch"
	fi
fi

if want jax; then
	section JAX
	if have_py jax; then
		for cfg in default nopreallocate platform; do
			envs=(JAX_PLATFORMS=cuda)
			case $cfg in
			nopreallocate) envs+=(XLA_PYTHON_CLIENT_PREALLOCATE=false) ;;
			platform) envs+=(XLA_PYTHON_CLIENT_ALLOCATOR=platform) ;;
			esac
			scenario jax "jax-$cfg" "${envs[@]}" -- python3 "$ROOT/tests/gpu/jax_run.py"
		done
	else
		row "jax | skipped | no jax"
	fi
fi

if want cupy; then
	section CuPy
	if have_py cupy; then
		scenario cupy cupy -- python3 "$ROOT/tests/gpu/cupy_pools.py"
	else
		row "cupy | skipped | no cupy"
	fi
fi

# Lazy module loading (the default since CUDA 12.2) loads kernels' code at
# their first launch, after the context's cost was measured: with EAGER the
# context's measured cost takes it in, and the unexplained rest shrinks.
if want eager; then
	section "eager module loading"
	unexplained() { "$CLI" accounting --json "$TRACE" | python3 -c '
import json, sys
d = json.load(sys.stdin)["traces"][0]["accounting"]["devices"][0]
print("context %.0f MiB, unexplained at the end %.0f MiB" % (
    (d["at_end"].get("context_bytes") or 0) / 2**20, (d["at_end"].get("unexplained_bytes") or 0) / 2**20))'; }
	if have_py torch; then
		for mode in LAZY EAGER; do
			if traced "torch-$mode" STEPS=50 CUDA_MODULE_LOADING=$mode -- python3 "$ROOT/tests/gpu/torch_train.py"; then
				row "torch CUDA_MODULE_LOADING=$mode | ok | $(unexplained)"
			else
				fail "torch CUDA_MODULE_LOADING=$mode" "exit $?: $(tail -1 "$OUT_DIR/runs/torch-$mode.err")"
			fi
			if traced "nccl-$mode" CUDA_MODULE_LOADING=$mode -- python3 "$ROOT/tests/gpu/nccl_allreduce.py"; then
				row "nccl CUDA_MODULE_LOADING=$mode | ok | $(unexplained)"
			else
				fail "nccl CUDA_MODULE_LOADING=$mode" "exit $?: $(tail -1 "$OUT_DIR/runs/nccl-$mode.err")"
			fi
		done
	fi
fi

# The stack cache (GPUMEMTRACE_STACK_CACHE=2) checks every capture against
# unw_backtrace and notes the counts: on the frameworks' own deep stacks,
# none may differ. The trace's clock note says which clock stamped it.
if want stacks; then
	section "stack cache against libunwind, and the clock"
	verify() { # verify NAME ENV... -- CMD...
		local name=$1 note hits misses bad
		shift
		traced "verify-$name" GPUMEMTRACE_STACK_CACHE=2 "$@"
		local rc=$?
		if [ $rc -ne 0 ]; then
			fail "stacks $name" "exit $rc traced: $(tail -1 "$OUT_DIR/runs/verify-$name.err")"
			return
		fi
		"$CLI" dump "$TRACE" >"$OUT_DIR/runs/verify-$name.dump" 2>&1
		note=$(grep -o 'stack cache verify: [^"]*' "$OUT_DIR/runs/verify-$name.dump" | head -1)
		echo "$name: ${note:-no note}; $(grep -o 'clock: [^"]*' "$OUT_DIR/runs/verify-$name.dump" | paste -sd ';')"
		read -r hits misses bad < <(echo "$note" |
			sed -n 's/[^0-9]*\([0-9]*\) hits, \([0-9]*\) misses, \([0-9]*\) differ.*/\1 \2 \3/p')
		if [ -z "$note" ] || [ -z "$bad" ]; then
			fail "stacks $name" "no stack cache note in the trace"
		elif [ "$bad" != 0 ]; then
			fail "stacks $name" "$note"
		else
			row "stacks $name | ok | $note"
		fi
	}
	[ -x "$OUT_DIR/runs/plain-shared" ] && verify plain-shared -- "$OUT_DIR/runs/plain-shared" check
	if have_py torch; then
		verify torch-default STEPS=50 -- python3 "$ROOT/tests/gpu/torch_train.py"
		verify torch-nocache STEPS=50 PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- python3 "$ROOT/tests/gpu/torch_train.py"
		verify nccl -- python3 "$ROOT/tests/gpu/nccl_allreduce.py"
	fi
	have_py jax && verify jax-platform JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_ALLOCATOR=platform -- python3 "$ROOT/tests/gpu/jax_run.py"
	have_py cupy && verify cupy -- python3 "$ROOT/tests/gpu/cupy_pools.py"
fi

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
# ns_run FILE MODE CMD...: one run of CMD untraced (u), traced with stacks
# off (off) or at the default depth (on); its ns per pair appended to FILE
ns_run() {
	local file=$1 mode=$2
	shift 2
	case $mode in
	u) "$@" ;;
	off) GPUMEMTRACE_OUTPUT="$OUT_DIR/traces/ns.%p.gmt" GPUMEMTRACE_STACK_DEPTH=0 LD_PRELOAD=$LIB "$@" ;;
	on) GPUMEMTRACE_OUTPUT="$OUT_DIR/traces/ns.%p.gmt" LD_PRELOAD=$LIB "$@" ;;
	esac | sed -n 's/^\(.* \)\{0,1\}ns_per_pair[= ]\([0-9.]*\).*/\2/p' >>"$file"
	rm -f "$OUT_DIR"/traces/ns.*.gmt
}
# ns_medians PREFIX LABEL: each mode's runs printed; u, off, on set to medians
ns_medians() {
	local mode
	for mode in u off on; do echo "$2, ns per pair, $mode: $(tr '\n' ' ' <"$1.$mode")"; done
	u=$(median <"$1.u")
	off=$(median <"$1.off")
	on=$(median <"$1.on")
}
if want overhead; then
	section overhead
	# PyTorch's loop, untraced and traced, interleaved; the loop's own time.
	if have_py torch; then
		for cfg in default nocache; do
			envs=(STEPS="$STEPS")
			[ $cfg = nocache ] && envs+=(PYTORCH_NO_CUDA_MEMORY_CACHING=1)
			: >"$OUT_DIR/runs/overhead-$cfg.u"
			: >"$OUT_DIR/runs/overhead-$cfg.t"
			for round in 1 2 3; do
				run_plain "ovh-$cfg-u$round" "${envs[@]}" -- python3 "$ROOT/tests/gpu/torch_train.py" &&
					python3 -c 'import json,sys; print(json.loads(sys.argv[1])["loop_s"])' \
						"$(result_of "ovh-$cfg-u$round")" >>"$OUT_DIR/runs/overhead-$cfg.u"
				traced "ovh-$cfg-t$round" "${envs[@]}" -- python3 "$ROOT/tests/gpu/torch_train.py" &&
					python3 -c 'import json,sys; print(json.loads(sys.argv[1])["loop_s"])' \
						"$(result_of "ovh-$cfg-t$round")" >>"$OUT_DIR/runs/overhead-$cfg.t"
			done
			u=$(median <"$OUT_DIR/runs/overhead-$cfg.u")
			t=$(median <"$OUT_DIR/runs/overhead-$cfg.t")
			if [ "$(wc -l <"$OUT_DIR/runs/overhead-$cfg.u")" != 3 ] ||
				[ "$(wc -l <"$OUT_DIR/runs/overhead-$cfg.t")" != 3 ]; then
				fail "overhead torch $cfg" "a run failed (runs/ovh-$cfg-*.err)"
				continue
			fi
			echo "torch $cfg: loop seconds untraced $(tr '\n' ' ' <"$OUT_DIR/runs/overhead-$cfg.u")| traced $(tr '\n' ' ' <"$OUT_DIR/runs/overhead-$cfg.t")"
			row "overhead torch $cfg | ok | $STEPS steps, median of 3: untraced ${u}s, traced ${t}s, ratio $(python3 -c "print('%.3f' % ($t / $u))" 2>/dev/null)"
		done
	fi
	# The real driver's cudaMalloc+cudaFree, untraced, stacks off, stacks on.
	if [ -x "$OUT_DIR/runs/plain-shared" ]; then
		for mode in u off on; do : >"$OUT_DIR/runs/loop.$mode"; done
		for round in 1 2 3 4 5; do
			for mode in u off on; do
				ns_run "$OUT_DIR/runs/loop.$mode" $mode "$OUT_DIR/runs/plain-shared" loop 20000
			done
		done
		ns_medians "$OUT_DIR/runs/loop" "cudaMalloc+cudaFree 1 MiB"
		row "overhead cudaMalloc+cudaFree | ok | median of 5 x 20000 pairs: untraced ${u} ns, stacks off ${off} ns, stacks on ${on} ns"
	fi
fi

if want sim && [ -x "$BIN/bench/hookcost-fp" ]; then
	section "hook cost on this machine's CPU (simulated driver, as make bench)"
	clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
	if cc -O2 -x c - -o "$OUT_DIR/runs/clockcost" 2>/dev/null <<'EOF'
#include <stdio.h>
#include <time.h>
int main(void)
{
	struct timespec a, b, t;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 1000000; i++)
		clock_gettime(CLOCK_MONOTONIC, &t);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e6);
	return 0;
}
EOF
	then
		clock_ns=$("$OUT_DIR/runs/clockcost")
		echo "clock_gettime(CLOCK_MONOTONIC): $clock_ns ns, clocksource $clocksource"
		row "clock_gettime | ok | $clock_ns ns per call (clocksource $clocksource)"
	fi
	for mode in u off on; do : >"$OUT_DIR/runs/hook.$mode"; done
	# hookcost links the simulated libcuda and libunwind.
	export LD_LIBRARY_PATH=$BIN/sim:$BIN/deps
	for round in 1 2 3 4 5; do
		ns_run "$OUT_DIR/runs/hook.u" u "$BIN/bench/hookcost-fp" cuda 8 1000000
		ns_run "$OUT_DIR/runs/hook.off" off "$BIN/bench/hookcost-fp" cuda 8 1000000
		ns_run "$OUT_DIR/runs/hook.on" on "$BIN/bench/hookcost-fp" cuda 32 1000000
	done
	ns_medians "$OUT_DIR/runs/hook" "hookcost-fp"
	unset LD_LIBRARY_PATH
	row "hook cost (sim driver) | ok | median of 5 x 1M pairs: untraced ${u} ns; depth 8 stacks off ${off} ns; depth 32 stacks on ${on} ns"
fi

section results
printf '| scenario | verdict | figures |\n| --- | --- | --- |\n'
for r in "${ROWS[@]}"; do printf '| %s |\n' "$r"; done
exit $FAILED
