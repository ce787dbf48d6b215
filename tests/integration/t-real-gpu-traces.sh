# Traces of real programs on an H100 (docs/validation/2026-11-22-h100),
# read by today's CLI: what those runs showed stays true of the reports.
#  - plain CUDA C, dynamic and static runtime: the calls and bytes the
#    program made, a named device, the 64 MiB it leaves, nothing unexplained;
#  - a trace written before the fixes (DEVICE record without uuid): NVML's
#    samples still match the one device;
#  - PyTorch's cudaMallocAsync backend: the pool's reserve is the likely route;
#  - NCCL: its cuMem buffers charged to libnccl, module code the likely
#    route, phases without allocations counted not shown, no unmatched frees (NCCL
#    retains and releases each handle twice);
#  - JAX's preallocation: growth says so, and the 26 755 XLA phases do not
#    flood the summary.
# And traces of the second run (docs/validation/2026-11-23-h100), written
# with zstd chunks, TSC stamps and the stack cache:
#  - plain CUDA C, both runtimes: every call matched again;
#  - the clock note names the TSC; a chunk is compressed;
#  - PyTorch without caching: 31 069 events, none lost, nothing left live
#    but what the program keeps, and the stack cache in verify mode agreed
#    with libunwind on all of its 6 065 stacks.
. "$TESTS_DIR/integration/lib.sh"
V=$TESTS_DIR/real/2026-11-22-h100
[ -d "$V" ] || fail "no $V"

q() { # q FILE EXPR: a Python expression over the JSON in FILE (as d)
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"
}

"$GMT_CLI" summary --json "$V/plain-shared.596.gmt" >ps.json || fail "summary plain-shared"
expect_eq shared-calls "$(q ps.json '[d["calls"][k]["count"] for k in ("cudaMalloc", "cudaMallocAsync", "cudaMallocManaged", "cudaMallocHost", "cudaHostAlloc", "cuMemCreate")]')" "[4, 2, 1, 1, 1, 1]"
expect_eq shared-device "$(q ps.json 'd["devices"][0]["name"], d["devices"][0]["total_bytes"], d["devices"][0]["live_bytes_at_end"]')" \
	"('NVIDIA H100 80GB HBM3', 85017493504, 67108864)"
expect_eq shared-unexplained "$(q ps.json 'd["accounting"]["devices"][0]["at_end"]["unexplained_bytes"]')" 0
"$GMT_CLI" dump "$V/plain-shared.596.gmt" >ps.txt || fail "dump plain-shared"
! grep -qE 'EVENT #[0-9]+ -' ps.txt || fail "an event before the start"

# the static runtime's driver calls count as the runtime API the program
# called (analysis/sites.c): the same calls as the shared build's
"$GMT_CLI" summary --json "$V/plain-static.674.gmt" >st.json || fail "summary plain-static"
expect_eq static-calls "$(q st.json '[d["calls"][k]["count"] for k in ("cudaMalloc", "cudaMallocAsync", "cudaMallocManaged", "cudaMallocHost", "cudaHostAlloc", "cuMemCreate")]')" "[4, 2, 1, 1, 1, 1]"
expect_eq static-failed "$(q st.json 'd["calls"]["cudaMalloc"]["failed"], d["devices"][0]["live_bytes_at_end"]')" "(1, 67108864)"
expect_eq static-same-calls "$(q st.json 'sorted(d["calls"])')" "$(q ps.json 'sorted(d["calls"])')"
# --raw-sites: the driver calls as recorded
"$GMT_CLI" summary --json --raw-sites "$V/plain-static.674.gmt" >raw.json || fail "summary --raw-sites"
expect_eq static-raw-calls "$(q raw.json '[d["calls"][k]["count"] for k in ("cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocAsync", "cuMemAllocManaged", "cuMemHostAlloc", "cuMemCreate")]')" "[4, 1, 2, 1, 2, 1]"

"$GMT_CLI" accounting --json "$V/before-fixes-plain-shared.gmt" >old.json || fail "accounting old trace"
expect_eq old-matched "$(q old.json 'd["traces"][0]["accounting"]["devices"][0]["at_end"]["nvidia_smi_bytes"]')" 610271232

"$GMT_CLI" accounting --json "$V/torch-async.837.gmt" >ta.json || fail "accounting torch-async"
expect_eq async-route "$(q ta.json 'd["traces"][0]["accounting"]["devices"][0]["likely_routes"][0]["route"]')" pool_reserve

# PyTorch's allocator, demangled (where libstdc++ is here to do it); every
# one of its allocations ran without the GIL (PyTorch releases it around
# its operators), so its Python frames read as unavailable.
if python3 -c 'import ctypes; ctypes.CDLL("libstdc++.so.6")' 2>/dev/null; then
	"$GMT_CLI" top --by function --raw-sites "$V/torch-async.837.gmt" >tf.txt ||
		fail "top torch-async"
	grep -q ' c10::cuda::CUDACachingAllocator::CudaMallocAsync::' tf.txt ||
		fail "PyTorch's allocator not demangled: $(head -8 tf.txt)"
	# without --raw-sites the sites are past the allocator (analysis/sites.c)
	"$GMT_CLI" top --by function "$V/torch-async.837.gmt" >tf2.txt || fail "top torch-async"
	! grep -q 'CUDACachingAllocator' tf2.txt || fail "a site is the allocator: $(head -8 tf2.txt)"
fi
"$GMT_CLI" flamegraph --folded "$V/torch-async.837.gmt" >tg.txt || fail "flamegraph torch-async"
! grep -v '^\[Python frames unavailable: the GIL was not held\]' tg.txt | grep -q . ||
	[ ! -s tg.txt ] || fail "a PyTorch stack without the GIL marker: $(grep -v '^\[Python' tg.txt | head -2)"

"$GMT_CLI" accounting --json "$V/nccl.969.gmt" >na.json || fail "accounting nccl"
expect_eq nccl-route "$(q na.json 'd["traces"][0]["accounting"]["devices"][0]["likely_routes"][0]["route"]')" lazy_loading
"$GMT_CLI" summary --json "$V/nccl.969.gmt" >ns.json || fail "summary nccl"
expect_eq nccl-lib "$(q ns.json 'd["devices"][0]["by_library"][0]["library"], d["devices"][0]["by_library"][0]["bytes"], d["unmatched_frees"]')" \
	"('libnccl.so.2', 406847488, 0)"
"$GMT_CLI" summary "$V/nccl.969.gmt" >ns.txt || fail "summary nccl text"
# the nested NCCL phases allocate nothing: counted, not shown; the one
# left open is named whole
grep -q '^  NCCL: ncclCommInitRankConfig  *197 ' ns.txt &&
	grep -q '^  (3 more phases without allocations or frees: ' ns.txt &&
	grep -q '^    NCCL: ncclCommInitRankConfig/NCCL: ncclCommFinalize  opened at' ns.txt ||
	fail "NCCL phases: $(sed -n '/^phases/,/^$/p' ns.txt)"

"$GMT_CLI" summary "$V/jax-default.1043.gmt" >js.txt || fail "summary jax"
[ "$(wc -l <js.txt)" -lt 150 ] || fail "summary of the JAX trace is $(wc -l <js.txt) lines"
grep -q "^  (26752 more phases without allocations or frees" js.txt || fail "no line for the phases left out"
# no row for a phase that neither allocated nor freed; long names keep their tail
! sed -n "/^phases/,/^$/p" js.txt | grep -qE "^  \S.* +0 +0 B +0 B" || fail "a phase row without allocations or frees"
grep -qE "^  \.\.\.#/TSL: XlaPass:#name=config-assigner,module=jit_step,program_id=7293# +3 " js.txt || fail "a long phase name not cut to its tail: $(sed -n "/^phases/,/^$/p" js.txt)"
"$GMT_CLI" summary "$V/torch-async.837.gmt" >tas.txt || fail "summary torch-async"
# the note on inherited phases reads as one sentence, its parentheses balanced
# (wrapped at the width: read as one line)
tr '\n' ' ' <tas.txt | tr -s ' ' | grep -q " (7134 allocations, 186 GiB, came from threads with no range open, such as PyTorch.s autograd thread: each took the innermost range open in the process; \`--json\` counts them as \"inherited\")" ||
	fail "inherited note: $(grep -A1 "no range open" tas.txt)"
expect_eq note-parens "$(grep -A1 "no range open" tas.txt | tr -cd "()" )" "()"
"$GMT_CLI" growth "$V/jax-default.1043.gmt" >jg.txt || fail "growth jax"
grep -q '(preallocation, 59.4 GiB, 75% of the device in one allocation)' jg.txt || fail "growth does not see XLA's preallocation"
# The checker scripts/gpu-check.sh uses: every call of the plain program
# found by pointer and size, and the first run's defects caught.
R=$V # what the programs printed (their .out files) beside their traces
python3 "$TESTS_DIR/gpu/check.py" plain "$GMT_CLI" "$R/plain-shared.out" "$V/plain-shared.596.gmt" >c1.txt ||
	{ cat c1.txt; fail "check.py: the plain program's calls not all matched"; }
grep -q '^ROW | 12/12 allocs, 11/11 frees, 1/1 failures matched |' c1.txt || fail "check.py row: $(tail -1 c1.txt)"
python3 "$TESTS_DIR/gpu/check.py" plain "$GMT_CLI" "$R/plain-static.out" "$V/plain-static.674.gmt" >c2.txt ||
	{ cat c2.txt; fail "check.py: the static program's calls not all matched"; }
! python3 "$TESTS_DIR/gpu/check.py" plain "$GMT_CLI" "$R/before-fixes-plain-shared.out" \
	"$V/before-fixes-plain-shared.gmt" >c3.txt || fail "check.py passed the trace with the first run's defects"
grep -q 'MISSING a DEVICE record without its uuid' c3.txt && grep -q "MISSING an event before the trace's start" c3.txt ||
	fail "check.py did not name the first run's defects: $(cat c3.txt)"

V2=$TESTS_DIR/real/2026-11-23-h100
R2=$V2
for rt in shared:643 static:718; do
	n=plain-${rt%:*}
	python3 "$TESTS_DIR/gpu/check.py" plain "$GMT_CLI" "$R2/$n.out" "$V2/$n.${rt#*:}.gmt" >c.txt ||
		{ cat c.txt; fail "check.py: the second run's $n calls not all matched"; }
	grep -q '^ROW | 12/12 allocs, 11/11 frees, 1/1 failures matched |' c.txt || fail "$n row: $(tail -1 c.txt)"
done
"$GMT_CLI" dump "$V2/plain-shared.643.gmt" >p2.txt || fail "dump the second plain-shared"
grep -q 'NOTE info "clock: the TSC (2100.000 MHz, clocksource tsc), fitted to CLOCK_MONOTONIC"' p2.txt ||
	fail "no TSC note: $(grep NOTE p2.txt)"
grep -q ' zstd raw ' p2.txt || fail "no compressed chunk in the second plain-shared"
"$GMT_CLI" summary --json "$V2/torch-nocache.941.gmt" >tn.json || fail "summary torch-nocache"
expect_eq nocache "$(q tn.json 'd["events"], d["lost_events"], d["complete"], d["unmatched_frees"]')" "(31069, 0, True, 0)"
# summary's sites: stacks that print alike (site and 3 callers) share a row
"$GMT_CLI" summary "$V2/torch-nocache.941.gmt" >tn.txt || fail "summary torch-nocache text"
sed -n '/^top allocation sites/,/^$/p' tn.txt | sed -nE 's/^ +[0-9.]+ [A-Za-z]+ +[0-9]+ +[0-9]+  //p' |
	sed -E 's/  \([0-9]+ stacks\)$//' | sort | uniq -d >dup.txt
[ ! -s dup.txt ] || fail "sites that print alike on separate rows: $(head -c 300 dup.txt)"
# the sites are past c10's allocator (analysis/sites.c): without Python
# frames, the framework's entry point (an autograd node, a THPVariable_*)
grep -q '^     165 MiB        5      846  torch::autograd::generated::ConvolutionBackward0::apply (libtorch_cpu.so+0x5007d71)  (5 stacks)$' tn.txt ||
	fail "ConvolutionBackward0's 5 stacks not one row: $(sed -n '/^top allocation sites/,/^$/p' tn.txt | cut -c1-100)"
! sed -n '/^top allocation sites/,/^$/p' tn.txt | grep -q CUDACachingAllocator ||
	fail "a site is c10's allocator"
"$GMT_CLI" dump "$V2/verify-torch-nocache.1167.gmt" >vn.txt || fail "dump verify-torch-nocache"
grep -q 'stack cache verify: 5909 hits, 156 misses, 0 differ from unw_backtrace' vn.txt ||
	fail "verify note: $(grep -o 'stack cache verify: [^"]*' vn.txt)"

# gpu-check.sh's own errors: a bad scenario is a usage error; without a GPU
# the GPU scenarios say so.
"$TESTS_DIR/../scripts/gpu-check.sh" --help >help.txt || fail "gpu-check.sh --help"
grep -q '^  --only LIST     scenarios: env plain torch nccl jax cupy eager stacks$' help.txt &&
	grep -q '^GPU here (only the env and sim scenarios run without one).$' help.txt ||
	fail "gpu-check.sh --help is not its whole header: $(cat help.txt)"
rc=0
"$TESTS_DIR/../scripts/gpu-check.sh" --only bogus --out gc 2>err.txt || rc=$?
expect_eq bad-scenario "$rc $(wc -l <err.txt)" "2 1"
if ! nvidia-smi -L >/dev/null 2>&1; then
	rc=0
	"$TESTS_DIR/../scripts/gpu-check.sh" --only plain --out gc 2>err.txt || rc=$?
	expect_eq no-gpu "$rc $(wc -l <err.txt)" "3 1"
fi
echo ok
