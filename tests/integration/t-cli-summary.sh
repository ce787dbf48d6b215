#!/usr/bin/env bash
# summary --json on hand-built traces: peak, peak time, live at the end,
# calls, failed calls, devices without a DEVICE record, process, lost events.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

"$MKTRACE" basic.gmt <<'T'
header start_mono=1000000000 pid=4242
process pid=4242 ppid=7 host=box exe=/usr/bin/python3 arg=python3 arg=train.py arg="--name=a \"b\"" env=CUDA_VISIBLE_DEVICES=0,1
device ord=0 name="Sim GPU \"0\"" total=17179869184 cc=8.0 driver=12040
events tid=100
ev api=cudaMalloc      t=1000001000 ptr=0x10000000 size=1000 dev=0
ev api=cuMemAlloc_v2   t=1000002000 ptr=0x20000000 size=3000
ev api=cudaMalloc      t=1000002500 size=99999999999 result=2
ev api=cudaFree        t=1000003000 ptr=0x10000000
ev api=cudaMalloc      t=1000004000 ptr=0x30000000 size=500
ev api=cudaMalloc      t=1000005000 ptr=0x40000000 size=7000 dev=1
ev api=cudaFree        t=1000006000 ptr=0x40000000 result=1
ev api=cuMemFree_v2    t=1000007000 ptr=0x40000000 result=0
ev api=cudaMallocManaged t=1000008000 ptr=0x50000000 size=1000000 dev=0 aux=1
ev api=cudaMallocHost  t=1000009000 ptr=0x60000000 size=4096 dev=-1
chunk
lost tid=100 count=3 t=1000009500
trailer t=1000010000 events=10 lost=3
T

"$GMT_CLI" summary --json basic.gmt >s.json 2>err || fail "summary exit $?: $(cat err)"
[ ! -s err ] || fail "unexpected stderr: $(cat err)"
cur=$(sed -n 's/^#define GMT_FORMAT_VERSION[[:space:]][[:space:]]*\([0-9]*\).*/\1/p' "$TESTS_DIR/../include/gpumemtrace/format.h")
expect_eq format_version "$(json s.json 'd["format_version"]')" "$cur"
expect_eq complete "$(json s.json 'd["complete"]')" True
expect_eq pid "$(json s.json 'd["process"]["pid"]')" 4242
expect_eq ppid "$(json s.json 'd["process"]["ppid"]')" 7
expect_eq command "$(json s.json 'd["process"]["command"]')" 'python3 train.py --name=a "b"'
expect_eq events "$(json s.json 'd["events"]')" 10
expect_eq lost "$(json s.json 'd["lost_events"]')" 3
expect_eq ndevices "$(json s.json 'len(d["devices"])')" 2

d0='d["devices"][0]'
expect_eq dev0.index "$(json s.json "$d0[\"index\"]")" 0
expect_eq dev0.name "$(json s.json "$d0[\"name\"]")" 'Sim GPU "0"'
expect_eq dev0.total "$(json s.json "$d0[\"total_bytes\"]")" 17179869184
# live: 1000 -> 4000 -> (failed) -> 3000 -> 3500: the peak is 4000 at +2000 ns
expect_eq dev0.peak "$(json s.json "$d0[\"peak_bytes\"]")" 4000
expect_eq dev0.peak_time "$(json s.json "$d0[\"peak_time_ns\"]")" 2000
expect_eq dev0.live_end "$(json s.json "$d0[\"live_bytes_at_end\"]")" 3500
expect_eq dev0.count_end "$(json s.json "$d0[\"live_allocations_at_end\"]")" 2

# device 1 has no DEVICE record; its cudaFree failed, cuMemFree_v2 freed it
d1='d["devices"][1]'
expect_eq dev1.index "$(json s.json "$d1[\"index\"]")" 1
expect_eq dev1.name "$(json s.json "$d1[\"name\"]")" ""
expect_eq dev1.total "$(json s.json "$d1[\"total_bytes\"]")" 0
expect_eq dev1.peak "$(json s.json "$d1[\"peak_bytes\"]")" 7000
expect_eq dev1.peak_time "$(json s.json "$d1[\"peak_time_ns\"]")" 5000
expect_eq dev1.live_end "$(json s.json "$d1[\"live_bytes_at_end\"]")" 0
expect_eq dev1.count_end "$(json s.json "$d1[\"live_allocations_at_end\"]")" 0

# managed and pinned memory are not device memory
expect_eq managed "$(json s.json 'd["memory"]["managed"]["live_bytes_at_end"]')" 1000000
expect_eq pinned "$(json s.json 'd["memory"]["pinned_host"]["peak_bytes"]')" 4096

c='d["calls"]'
expect_eq cudaMalloc "$(json s.json "[$c[\"cudaMalloc\"][k] for k in ('count','failed','bytes')]")" "[4, 1, 8500]"
expect_eq cuMemAlloc "$(json s.json "[$c[\"cuMemAlloc_v2\"][k] for k in ('count','failed','bytes')]")" "[1, 0, 3000]"
expect_eq cudaFree "$(json s.json "[$c[\"cudaFree\"][k] for k in ('count','failed','bytes')]")" "[2, 1, 0]"
expect_eq cuMemFree "$(json s.json "[$c[\"cuMemFree_v2\"][k] for k in ('count','failed','bytes')]")" "[1, 0, 0]"
expect_eq ncalls "$(json s.json "len($c)")" 6
expect_eq failures "$(json s.json '[(f["time_ns"], f["api"], f["size"], f["result_name"]) for f in d["failures"]]')" \
	"[(2500, 'cudaMalloc', 99999999999, 'cudaErrorMemoryAllocation'), (6000, 'cudaFree', 0, 'cudaErrorInvalidValue')]"

# the human table says the same
"$GMT_CLI" summary basic.gmt >s.txt 2>err || fail "summary (text) exit $?"
grep -q 'Sim GPU' s.txt || fail "no device name in: $(cat s.txt)"
grep -Eq '^ +cudaMalloc +4 +1 ' s.txt || fail "no cudaMalloc row in: $(cat s.txt)"
grep -q 'cudaErrorMemoryAllocation' s.txt || fail "no failure in: $(cat s.txt)"

# a trace with no events at all
"$MKTRACE" empty.gmt <<'T'
header start_mono=5 pid=9
trailer t=10
T
"$GMT_CLI" summary --json empty.gmt >e.json || fail "empty summary exit $?"
expect_eq empty.devices "$(json e.json 'd["devices"]')" "[]"
expect_eq empty.calls "$(json e.json 'd["calls"]')" "{}"
expect_eq empty.pid "$(json e.json 'd["process"]')" "{'pid': 9, 'ppid': 0, 'command': '', 'exe': '', 'hostname': ''}"
echo ok
