#!/usr/bin/env bash
# check --max-smi gates what nvidia-smi showed for the process: NVML's
# per-process peak where sampled (the highest sample), else the traced peak
# + contexts and module code + a stream-ordered pool's reserve (its most,
# less what of it was live at the traced peak); an NVML figure above the
# device's total is named and not used. --max-framework-reserved gates the
# framework's reserved peak from its counters, and fails without them. run
# --check-max-smi gates the same way. Each line says which figure it used.
. "$(dirname "$0")/lib.sh"
# each check line is read whole here (a line past the width wraps; its
# wrapping is t-cli-width80's)
export COLUMNS=1000
MKTRACE=$BUILD/tests/unit-tools/mktrace
MiB=1048576

"$MKTRACE" nvml.gmt <<T
device ord=0 name=g total=$((1024 * MiB)) uuid=0102030405060708090a0b0c0d0e0f10
ev api=cudaMalloc t=1000 ptr=0x1000 size=$((100 * MiB)) dev=0
sample t=1100 used=$((500 * MiB)) total=$((1024 * MiB)) uuid=0102030405060708090a0b0c0d0e0f10 process=$((400 * MiB))
sample t=1200 used=$((600 * MiB)) total=$((1024 * MiB)) uuid=0102030405060708090a0b0c0d0e0f10 process=$((450 * MiB))
trailer t=2000
T
# 450 MiB, the higher of the two samples
out=$("$GMT_CLI" check --max-smi 450MiB nvml.gmt) || fail "450 MiB should pass: $out"
echo "$out" | grep -q "PASS  max-smi .*nvidia-smi peak 450 MiB (471859200 B) <= limit 450 MiB .*(NVML's per-process peak, 2 samples)" ||
	fail "nvml line: $out"
rc=0
"$GMT_CLI" check --max-smi 449MiB --max-peak 100MiB nvml.gmt >out.txt || rc=$?
expect_eq "449 MiB fails" $rc 1
grep -q 'PASS  max-peak' out.txt || fail "max-peak is the traced peak: $(cat out.txt)"

# no NVML: 150 MiB traced at the peak + a 30 MiB context + 100 MiB the pool
# kept of its stream-ordered allocations (freed before the peak)
"$MKTRACE" est.gmt <<T
device ord=0 name=g total=$((1024 * MiB))
ev api=cuDevicePrimaryCtxRetain t=900 ptr=0xc1 size=$((30 * MiB)) dev=0 aux=1
ev api=cudaMallocAsync t=1000 ptr=0x1000 size=$((100 * MiB)) dev=0
ev api=cudaFreeAsync t=1100 ptr=0x1000 dev=0
ev api=cudaMalloc t=1200 ptr=0x9000000 size=$((150 * MiB)) dev=0
trailer t=2000
T
out=$("$GMT_CLI" check --max-smi 280MiB est.gmt) || fail "280 MiB should pass: $out"
echo "$out" | grep -q 'nvidia-smi peak 280 MiB (293601280 B) <= .*(estimate: 150 MiB traced at the peak + 30.0 MiB contexts and module code + 100 MiB pool reserve; NVML did not sample this process)' ||
	fail "estimate line: $out"
"$GMT_CLI" check --json --max-smi 279MiB est.gmt >e.json && fail "279 MiB should fail"
expect_eq "json source" "$(json e.json 'd["checks"][0]["source"][:9]')" "estimate:"

# NVML above the device: not used
"$MKTRACE" bad.gmt <<T
device ord=0 name=g total=$((1024 * MiB)) uuid=0102030405060708090a0b0c0d0e0f10
ev api=cudaMalloc t=1000 ptr=0x1000 size=$((100 * MiB)) dev=0
sample t=1100 used=$((500 * MiB)) total=$((1024 * MiB)) uuid=0102030405060708090a0b0c0d0e0f10 process=$((2048 * MiB))
trailer t=2000
T
"$GMT_CLI" check --max-smi 1GiB bad.gmt | grep -q "nvidia-smi peak 100 MiB .*NVML's per-process 2.00 GiB is more than the device: not used" ||
	fail "bad NVML: $("$GMT_CLI" check --max-smi 1GiB bad.gmt)"

# the framework's reserved peak, from its counters
"$MKTRACE" fw.gmt <<T
device ord=0 name=g total=$((1024 * MiB))
ev api=cudaMalloc t=1000 ptr=0x1000 size=$((100 * MiB)) dev=0
counters tid=1 t=1100 reason=periodic source=torch device=cuda:0 ord=0 v:reserved_bytes.all.current=$((100 * MiB)) v:reserved_bytes.all.peak=$((120 * MiB)) v:allocated_bytes.all.current=$((60 * MiB))
trailer t=2000
T
"$GMT_CLI" check --max-framework-reserved 120MiB fw.gmt | grep -q 'PASS  max-framework-reserved .* framework reserved peak 120 MiB .*(torch.cuda.memory_stats())' ||
	fail "fw reserved: $("$GMT_CLI" check --max-framework-reserved 120MiB fw.gmt)"
rc=0
"$GMT_CLI" check --max-framework-reserved 1GiB est.gmt >out.txt || rc=$?
expect_eq "no counters fails" $rc 1
grep -q 'no framework counters in the trace' out.txt || fail "no counters: $(cat out.txt)"

# run --check-max-smi: the same gate after the command (exit 1 when over)
rc=0
LD_LIBRARY_PATH=$SIM_DIR "$GMT_CLI" run -q --check-max-smi 1MiB -o "$PWD/run.gmt" -- \
	"$PROG_DIR/life" exit 3 >out.txt 2>err.txt || rc=$?
expect_eq "run --check-max-smi" $rc 1
grep -q 'FAIL  max-smi' err.txt || fail "run: $(cat err.txt)"
echo ok
