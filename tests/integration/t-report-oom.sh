#!/usr/bin/env bash
# oom: known answers by construction. Out-of-memory failures followed by the
# MEMINFO record the tracer writes (enough free and others holding more:
# other processes; little free and little held: other processes; most of it
# held: this process), one without it (this process and the request exceed
# the total), a request above the device's total, the verdict, live bytes by
# library and site, other failures, several traces, an incomplete trace,
# error exits. The cases' finer rules: tests/unit/test-oom.c.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"
MiB=1048576
GiB=$((1024 * MiB))
S=1000000000

# MEMINFO tid time device free total api, as a raw record (tag 11)
meminfo() {
	python3 - "$@" <<'P'
import sys
def v(n):
    out = b""
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])
tid, t, dev, free, total, api = (int(x) for x in sys.argv[1:])
z = (dev << 1) ^ (dev >> 63)
print("raw " + (v(11) + v(tid) + v(t) + v(z) + v(free) + v(total) + v(api)).hex())
P
}

{
	echo "header start_mono=$S pid=31"
	echo "process pid=31 ppid=1 exe=/usr/bin/python3 arg=python3 arg=train.py"
	echo "module id=1 bias=0x7f0000000000 start=0x7f0000000000 end=0x7f0000100000 path=/usr/lib/libnccl.so.2"
	echo "module id=2 bias=0 start=0x400000 end=0x500000 path=/usr/bin/python3"
	echo "symbol ip=0x401000 module=2 func=train file=train.py line=7"
	echo "stack parent=0 ip=0x7f0000001234 parent=0 ip=0x401000"
	echo "device ord=0 name=G total=$((16 * GiB))"
	echo "events tid=1"
	echo "ev api=cudaMalloc t=$((2 * S)) ptr=0x100000000 size=$GiB dev=0 stack=1"
	# A: 4 GiB free, 2 GiB asked: enough; others hold 11 GiB, this 1 GiB
	echo "ev api=cudaMalloc t=$((3 * S)) size=$((2 * GiB)) result=2 stack=2"
	meminfo 1 $((3 * S + 100)) 0 $((4 * GiB)) $((16 * GiB)) 40
	# B: 100 MiB free, this process holds 1 GiB: other processes
	echo "events tid=1"
	echo "ev api=cuMemAlloc_v2 t=$((4 * S)) size=$((2 * GiB)) result=2 dev=0 stack=2"
	meminfo 1 $((4 * S + 100)) 0 $((100 * MiB)) $((16 * GiB)) 1
	echo "events tid=1"
	echo "ev api=cudaMalloc t=$((5 * S)) ptr=0x200000000 size=$((14 * GiB)) dev=0 stack=2"
	# C: 500 MiB free, this process holds 15 GiB: this process
	echo "ev api=cudaMalloc t=$((6 * S)) size=$((2 * GiB)) result=2 stack=2"
	meminfo 1 $((6 * S + 100)) 0 $((500 * MiB)) $((16 * GiB)) 40
	# D: another thread, no MEMINFO: 15 GiB held + 2 GiB asked > 16 GiB
	echo "events tid=2"
	echo "ev api=cudaMalloc t=$((7 * S)) size=$((2 * GiB)) result=2 dev=0"
	# not out-of-memory: listed briefly
	echo "events tid=1"
	echo "ev api=cudaFree t=$((8 * S)) ptr=0x999 result=1 dev=0"
	echo "ev api=cudaFree t=$((8 * S + 1)) ptr=0x998 result=1"
	echo "trailer t=$((9 * S))"
} | "$MKTRACE" oom.gmt

"$GMT_CLI" oom --json oom.gmt >o.json 2>err || fail "oom exit $?: $(cat err)"
[ ! -s err ] || fail "unexpected stderr: $(cat err)"
o='d["traces"][0]'
expect_eq total "$(json o.json "($o['ooms_total'], $o['failed_allocations_total'])")" "(4, 4)"
expect_eq meminfos "$(json o.json "$o['meminfo_records']")" 3
expect_eq cases "$(json o.json "[x['case'] for x in $o['ooms']]")" \
	"['other-processes', 'other-processes', 'this-process', 'this-process']"
expect_eq verdict "$(json o.json "($o['verdict'], d['verdict'])")" "('other-processes', 'other-processes')"
expect_eq basics "$(json o.json "[(x['time_ns'], x['api'], x['size'], x['result_name'], x['tid']) for x in $o['ooms']]")" \
	"[(2000000000, 'cudaMalloc', $((2 * GiB)), 'cudaErrorMemoryAllocation', 1), (3000000000, 'cuMemAlloc_v2', $((2 * GiB)), 'CUDA_ERROR_OUT_OF_MEMORY', 1), (5000000000, 'cudaMalloc', $((2 * GiB)), 'cudaErrorMemoryAllocation', 1), (6000000000, 'cudaMalloc', $((2 * GiB)), 'cudaErrorMemoryAllocation', 2)]"
expect_eq free "$(json o.json "[x['meminfo'] and x['meminfo']['free_bytes'] for x in $o['ooms']]")" \
	"[$((4 * GiB)), $((100 * MiB)), $((500 * MiB)), None]"
expect_eq held "$(json o.json "[x['figures']['held_bytes'] for x in $o['ooms']]")" "[$GiB, $GiB, $((15 * GiB)), $((15 * GiB))]"
expect_eq other "$(json o.json "[x['figures']['other_processes_bytes'] for x in $o['ooms']]")" \
	"[$((11 * GiB)), $((15 * GiB - 100 * MiB)), $((GiB - 500 * MiB)), None]"
expect_eq site "$(json o.json "$o['ooms'][0]['site']")" "train (train.py:7)"
expect_eq libs "$(json o.json "[(l['library'], l['bytes']) for l in $o['ooms'][2]['by_library']]")" \
	"[('python3', $((14 * GiB))), ('libnccl.so.2', $GiB)]"
expect_eq sites "$(json o.json "[(s['stack_id'], s['site'], s['bytes'], s['allocations']) for s in $o['ooms'][2]['top_sites']]")" \
	"[(2, 'train (train.py:7)', $((14 * GiB)), 1), (1, 'libnccl.so.2+0x1234', $GiB, 1)]"
expect_eq others "$(json o.json "($o['other_failures_total'], [(x['api'], x['result'], x['count']) for x in $o['other_failures']])")" \
	"(2, [('cudaFree', 1, 2)])"

"$GMT_CLI" oom oom.gmt >o.txt 2>err || fail "oom text exit $?"
grep -q 'case: other-processes: 4.00 GiB free of 16.0 GiB after the failure, enough for the 2.00 GiB asked' o.txt || fail "A: $(cat o.txt)"
grep -q 'case: other-processes: 100 MiB free of 16.0 GiB, 2.00 GiB asked; other processes held' o.txt || fail "B: $(cat o.txt)"
grep -q 'case: this-process: 500 MiB free of 16.0 GiB, 2.00 GiB asked; this process held 15.0 GiB' o.txt || fail "C: $(cat o.txt)"
grep -q 'free unknown (no MEMINFO record, no NVML sample)' o.txt || fail "D: $(cat o.txt)"
grep -q '^  verdict: other-processes$' o.txt || fail "verdict: $(cat o.txt)"
grep -q 'by library: python3 14.0 GiB, libnccl.so.2 1.00 GiB' o.txt || fail "libs: $(cat o.txt)"

# no MEMINFO and a process holding little: unknown; then 32 GiB on a 16 GiB
# device: larger than the device, whatever the free memory
{
	echo "header start_mono=$S pid=32"
	echo "device ord=0 name=G total=$((16 * GiB))"
	echo "ev api=cudaMalloc t=$((2 * S)) ptr=0x100000000 size=$GiB dev=0"
	echo "ev api=cudaMalloc t=$((3 * S)) size=$((2 * GiB)) result=2"
	echo "ev api=cudaMalloc t=$((4 * S)) size=$((32 * GiB)) result=2"
	echo "trailer t=$((5 * S))"
} | "$MKTRACE" small.gmt
"$GMT_CLI" oom --json oom.gmt small.gmt >m.json 2>err || fail "multi exit $?: $(cat err)"
expect_eq small "$(json m.json '[x["case"] for x in d["traces"][1]["ooms"]]')" "['unknown', 'exceeds-device-total']"
expect_eq small.meminfo "$(json m.json 'd["traces"][1]["ooms"][0]["meminfo"]')" None
expect_eq small.verdict "$(json m.json '(d["traces"][1]["verdict"], d["verdict"])')" "('unknown', 'other-processes')"
expect_eq totals "$(json m.json '(d["totals"]["processes"], d["totals"]["ooms_total"])')" "(2, 6)"
"$GMT_CLI" oom oom.gmt small.gmt >m.txt || fail "multi text"
grep -q 'out-of-memory failures per process' m.txt || fail "no per-process table: $(cat m.txt)"

# on the simulator: progs/oom asks 8 MiB of a 1 MiB device; that is larger
# than the device (it read 'real exhaustion'), and its retry fails the same
SIMCUDA_CAPACITY=1M traced "$PROG_DIR/oom" >/dev/null 2>&1 || true
"$GMT_CLI" oom --json "$(the_trace)" >s.json 2>err || fail "sim exit $?: $(cat err)"
expect_eq sim "$(json s.json '([x["case"] for x in d["traces"][0]["ooms"]], d["verdict"])')" \
	"(['exceeds-device-total', 'exceeds-device-total'], 'exceeds-device-total')"

# nothing failed, but CuPy's limit is set (recorded in the PROCESS record):
# its OOM makes no driver call, and the report says it cannot see one
{
	echo "header start_mono=$S pid=33"
	echo "process pid=33 ppid=1 exe=/usr/bin/python3 arg=python3 env=CUPY_GPU_MEMORY_LIMIT=1073741824"
	echo "ev api=cudaMalloc t=$((2 * S)) ptr=0x100000000 size=$MiB dev=0"
	echo "trailer t=$((3 * S))"
} | "$MKTRACE" cupy.gmt
"$GMT_CLI" oom --json cupy.gmt >c.json 2>err || fail "cupy exit $?: $(cat err)"
expect_eq cupy "$(json c.json '(d["verdict"], [x["reason"] for x in d["traces"][0]["invisible"]])')" \
	"('none', ['cupy-limit'])"
"$GMT_CLI" oom cupy.gmt >c.txt
grep -q 'not visible here: CUPY_GPU_MEMORY_LIMIT=1073741824 is set: CuPy refuses' c.txt || fail "cupy: $(cat c.txt)"

# JAX's preallocated pool on the H100 (one 59.4 GiB cuMemCreate, 75% of the
# device): nothing failed, and the report says it could not see an OOM there
V=$TESTS_DIR/real/2026-11-22-h100
"$GMT_CLI" oom --json "$V/jax-default.1043.gmt" >j.json 2>err || fail "jax exit $?: $(cat err)"
expect_eq jax "$(json j.json '(d["verdict"], [x["reason"] for x in d["traces"][0]["invisible"]])')" \
	"('none', ['preallocated'])"

# a trace without failures, and an incomplete one
printf 'header start_mono=1\nev api=cudaMalloc t=5 ptr=0x1000 size=4096 dev=0\n' | "$MKTRACE" torn.gmt
"$GMT_CLI" oom torn.gmt >t.txt 2>err || fail "incomplete exit $?"
grep -q 'no allocation failed' t.txt || fail "no none line: $(cat t.txt)"
grep -q 'incomplete' t.txt || fail "no incomplete note: $(cat t.txt)"

# errors
echo "not a trace" >bad.gmt
expect_exit "no trace" 2 "$GMT_CLI" oom
expect_exit "device not taken" 2 "$GMT_CLI" oom --device 0 oom.gmt
expect_exit "json=1" 2 "$GMT_CLI" oom --json=1 oom.gmt
expect_exit "missing file" 3 "$GMT_CLI" oom nosuch.gmt
expect_exit "not a trace" 4 "$GMT_CLI" oom bad.gmt
echo ok
