#!/usr/bin/env bash
# dump prints every record, one line each, and how the read ended.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

"$MKTRACE" all.gmt <<'T'
header start_mono=1000000000 start_wall=1700000000000000000 pid=42 features=1
process pid=42 ppid=1 wall=1700000000000000000 host=box exe=/bin/app arg=app arg="a b" env=CUDA_VISIBLE_DEVICES=1
module id=1 bias=0 start=0x400000 end=0x500000 path=/bin/app buildid=00ff10
device ord=0 name="Sim GPU" total=1073741824 cc=9.0 driver=12040
stack parent=0 ip=0x400123
thread tid=7 name=worker
events tid=7 base=1000000000
ev api=cudaMallocPitch t=1000000500 ptr=0x7f0000000000 size=51200 dev=0 stack=1 aux=512 aux2=500
ev api=cudaMalloc t=1000001000 size=1099511627776 result=2 dev=1
ev api=cuMemCreate t=1000002000 ptr=0x99 size=2097152 aux=1
ev api=999 t=1000003000
lost tid=7 count=4 t=1000004000
symbol ip=0x400123 module=1 func=main file=app.c line=3
note level=1 text="a \"quoted\" note"
fwsnap seq=1 t=1000004500 wall=1700000000004500000 tid=7 reason=oom max=1000 set=expandable_segments=False
fwtrace seq=1 dev=0 gap=1
fwe action=alloc addr=0x7f0000000000 size=1000 us=1700000000004400 stack=1
fwe action=oom addr=1048576 size=20971520 us=1700000000004401
fwe action=annotate addr=0x7f0000000000 us=1700000000004402
fwseg seq=1 addr=0x7f0000000000 total=2097152 flags=2 stack=1
fwblk addr=0x7f0000000000 size=1024 req=1000 state=active_allocated stack=1
fwblk addr=0x7f0000000400 size=2096128 state=inactive
chunk
fwoom tid=7 t=1000004500 how=observer source=torch ord=0 v:alloc_size=20971520 v:device_free=0 msg="CUDA out of memory.\nTried"
exit t=1000004900 how=_exit status=3
trailer t=1000005000 events=4 lost=4 nodes=1 reason=1
T
"$GMT_CLI" dump all.gmt >d.txt 2>err || fail "dump exit $?: $(cat err)"
[ ! -s err ] || fail "stderr: $(cat err)"
has() { grep -Fq -- "$1" d.txt || fail "dump lacks '$1':
$(cat d.txt)"; }
has "HEADER version $("$GMT_CLI" --version | sed -n 's/.*trace format \([0-9]*\).*/\1/p') header_size 64 endian 1 (little) features 0x1 (stacks) pid 42 start_wall 2023-11-14T22:13:20.000000000Z start_mono 1000000000"
has 'CHUNK #0 seq 0'
has 'PROCESS pid 42 ppid 1 start_wall 2023-11-14T22:13:20.000000000Z host "box" exe "/bin/app" argv[2] ["app", "a b"] env[1] {"CUDA_VISIBLE_DEVICES": "1"}'
has 'MODULE id 1 [0x400000, 0x500000) load_bias 0x0 path "/bin/app" build_id 00ff10'
has 'DEVICE 0 name "Sim GPU" uuid - total 1073741824 (1.00 GiB) cc 9.0 driver 12040'
has 'STACK 1 nodes: #1 parent 0 ip 0x400123'
has 'THREAD tid 7 name "worker"'
has 'EVENTS tid 7 base +0.000000000 count 4'
has 'EVENT #0 +0.000000500 tid 7 cudaMallocPitch dev 0 ptr 0x7f0000000000 size 51200 (50.0 KiB) pitch 512 width 500 stack 1 ok'
has 'EVENT #1 +0.000001000 tid 7 cudaMalloc dev 1 ptr 0x0 size 1099511627776 (1.00 TiB) stack 0 FAILED 2 (cudaErrorMemoryAllocation)'
has 'EVENT #2 +0.000002000 tid 7 cuMemCreate dev 1 ptr 0x99 size 2097152 (2.00 MiB) location 1 (device) stack 0 ok'
has 'EVENT #3 +0.000003000 tid 7 api#999 dev 1 ptr 0x0 size 0 stack 0 ok'
has 'LOST tid 7 count 4 at +0.000004000'
has 'SYMBOL 0x400123 module 1 function "main" file "app.c" line 3'
has 'NOTE warning "a \"quoted\" note"'
has 'FWSNAP +0.000004500 tid 7 seq 1 reason oom source "torch" wall 2023-11-14T22:13:20.004500000Z flags 0x3 history python-stacks max_entries 1000 settings 1'
has '          "expandable_segments" "False"'
has 'FWTRACE seq 1 dev 0 flags 0x1 gap base_time_us 1700000000004400 count 3'
has '#0 alloc addr 0x7f0000000000 size 1000 (1000 B) stream 0x0 time_us 1700000000004400 stack 1'
has '#1 oom device_free 1048576 (1.00 MiB) size 20971520 (20.0 MiB) stream 0x0 time_us 1700000000004401 stack 0'
has '#2 annotate addr 0x7f0000000000 size 0 (0 B) stream 0x0 time_us 1700000000004402 stack 0'
has 'FWSEG seq 1 dev 0 addr 0x7f0000000000 total 2097152 (2.00 MiB) stream 0x0 flags 0x2 small pool 0,0 stack 1 blocks 2'
has 'block 0x7f0000000000 size 1024 (1.00 KiB) requested 1000 active_allocated stack 1'
has 'block 0x7f0000000400 size 2096128 (2.00 MiB) requested 0 inactive stack 0'
has 'FWOOM +0.000004500 tid 7 how observer source "torch" type "" ordinal 0 count 2 message "CUDA out of memory.\nTried"'
has '          "alloc_size" 20971520 (20.0 MiB)'
has '          "device_free" 0'
has 'EXIT +0.000004900 how _exit status 3 signal 0'
has 'TRAILER end +0.000005000 events 4 lost 4 stack_nodes 1 reason 1 (_exit)'
tail -n 1 d.txt | grep -Eq '^END 2 chunks, 15 records, 4 events, ([0-9]+) of \1 bytes readable, complete$' ||
	fail "last line: $(tail -n 1 d.txt)"
# one line per record: 1 header + 1 comment + 2 chunks + 15 records + 4
# events + END, and the lines below some: FWOOM 2, FWSNAP 1, FWTRACE 3,
# FWSEG 2
expect_eq lines "$(wc -l <d.txt)" 32

# a reader that stops early is not an error (lib.sh sets pipefail)
{ echo "events tid=1"; seq 1 20000 | awk '{ printf "ev api=cudaMalloc t=%d ptr=%d size=64 dev=0\n", $1, $1 * 4096 }'; } |
	"$MKTRACE" big.gmt
"$GMT_CLI" dump big.gmt | head -n 3 >head.txt || fail "dump | head: exit $?"
expect_eq "head lines" "$(wc -l <head.txt)" 3
"$GMT_CLI" dump big.gmt | grep -q 'EVENT #0 ' || fail "dump | grep -q: exit $?"
echo ok
