#!/usr/bin/env bash
# diff sets nvidia-smi, the contexts, the stream-ordered pool's reserve and
# the allocator environment side by side. Two runs with the same
# allocations (512 MiB at the peak, 100 MiB at the end, a 300 MiB context):
# A through cudaMallocAsync, whose pool keeps what was freed (nvidia-smi
# 2000 MiB at the end), B through cudaMalloc (400 MiB). The device table says
# 0 B; the nvidia-smi table says -1.56 GiB, and why.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
MiB=1048576
UUID=00112233445566778899aabbccddeeff
run() { # OUT ENV MALLOC FREE SMI_PEAK SMI_END
	"$MKTRACE" "$1" <<T
header start_mono=0 pid=61
process pid=61 ppid=1 exe=/work/app arg=app env=CUDA_MODULE_LOADING=EAGER env=$2
device ord=0 name="Sim GPU" total=$((80 * 1024 * MiB)) uuid=$UUID
events tid=1
ev api=cuDevicePrimaryCtxRetain t=1000 ptr=0xc0 size=$((300 * MiB)) dev=0 aux=0 aux2=$((300 * MiB))
ev api=$3 t=2000 ptr=0x10000000 size=$((512 * MiB)) dev=0
ev api=$4 t=3000 ptr=0x10000000
ev api=$3 t=3500 ptr=0x20000000 size=$((100 * MiB))
sample t=2500 used=1 total=$((80 * 1024 * MiB)) uuid=$UUID process=$(($5 * MiB)) reason=1
sample t=4000 used=1 total=$((80 * 1024 * MiB)) uuid=$UUID process=$(($6 * MiB)) reason=4
trailer t=5000
T
}
run a.gmt PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync cudaMallocAsync cudaFreeAsync 2000 2000
run b.gmt PYTORCH_NO_CUDA_MEMORY_CACHING=1 cudaMalloc cudaFree 812 400
"$GMT_CLI" diff --json a.gmt b.gmt >d.json 2>err || fail "diff exit $?: $(cat err)"
expect_eq devices "$(json d.json "[(x['peak_delta_bytes'], x['live_at_end_delta_bytes']) for x in d['devices']]")" "[(0, 0)]"
E="d['nvidia_smi']['devices'][0]['at_end']"
expect_eq at-end "$(json d.json "[($E[s]['nvidia_smi_bytes'] // $MiB, $E[s]['traced_bytes'] // $MiB, $E[s]['stream_ordered_bytes'] // $MiB, $E[s]['contexts_bytes'] // $MiB, $E[s]['unexplained_bytes'] // $MiB, $E[s]['likely']) for s in 'ab']")" \
	"[(2000, 100, 100, 300, 1600, 'pool_reserve'), (400, 100, 0, 300, 0, None)]"
P="d['nvidia_smi']['devices'][0]['at_peak']"
expect_eq at-peak "$(json d.json "[$P[s]['nvidia_smi_bytes'] // $MiB for s in 'ab']")" "[2000, 812]"
expect_eq alloc-env "$(json d.json "[(e['a'], e['b']) for e in d['allocator_environment'] if e['key'].startswith('PYTORCH')]")" \
	"[(None, None), ('backend:cudaMallocAsync', None), (None, '1')]"
"$GMT_CLI" diff a.gmt b.gmt >d.txt 2>err || fail "diff text exit $?: $(cat err)"
grep -Eq '^    nvidia-smi \(this process\) +1\.95 GiB +400 MiB +-1\.56 GiB$' d.txt || fail "no nvidia-smi row: $(cat d.txt)"
grep -q "^      A: likely cudaMallocAsync pools hold more than they hand out (the pool's reserve)$" d.txt || fail "no pool reserve: $(cat d.txt)"
grep -q '^  nvidia-smi differs by -1.56 GiB at the end where the traced allocations differ by 0 B' d.txt || fail "no verdict: $(cat d.txt)"
grep -Eq '^  PYTORCH_CUDA_ALLOC_CONF +backend:cudaMallocAsync +\(unset\)  \(differs\)$' d.txt || fail "no allocator env: $(cat d.txt)"
grep -Eq '^  TF_GPU_ALLOCATOR +\(unset\) +\(unset\)$' d.txt || fail "unset variables not shown: $(cat d.txt)"
