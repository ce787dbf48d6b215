#!/usr/bin/env bash
# growth: known answers by construction. A ladder of doubling chunks (steps,
# chunk sizes, then a steady state: no leak), a leak of 1 MiB per second
# after a 1 GiB warm-up (a staircase in time: leak, its rate), a flat run
# with temporaries (no leak), several traces (totals, imbalance), an
# incomplete trace, error exits, a training loop's sawtooth with and
# without a leak (iterations found from the repeating temporary).
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"
MiB=1048576
S=1000000000

# ---- ladder: 1, 2, 4, 8, 16 MiB at +1..+5 s, a free, then a steady state ----
{
	echo "header start_mono=$S pid=11"
	echo "device ord=0 name=G total=$((1024 * MiB))"
	echo "events tid=1"
	for i in 0 1 2 3 4; do
		echo "ev api=cudaMalloc t=$(((2 + i) * S)) ptr=$((0x10000000 + i * 0x10000000)) size=$(((1 << i) * MiB)) dev=0"
	done
	echo "ev api=cudaFree t=$((7 * S)) ptr=0x10000000"
	# steady state: 1 MiB temporaries that never top the peak
	for i in $(seq 0 9); do
		echo "ev api=cudaMalloc t=$(((8 + i) * S)) ptr=0x90000000 size=$MiB"
		echo "ev api=cudaFree t=$(((8 + i) * S + S / 2)) ptr=0x90000000"
	done
	echo "trailer t=$((20 * S))"
} | "$MKTRACE" ladder.gmt
"$GMT_CLI" growth --json ladder.gmt >l.json 2>err || fail "growth exit $?: $(cat err)"
[ ! -s err ] || fail "unexpected stderr: $(cat err)"
d='d["traces"][0]["devices"][0]'
expect_eq ladder.index "$(json l.json "$d[\"index\"]")" 0
expect_eq ladder.peak "$(json l.json "$d[\"peak_bytes\"]")" $((31 * MiB))
expect_eq ladder.peak_time "$(json l.json "$d[\"peak_time_ns\"]")" $((5 * S))
expect_eq ladder.end "$(json l.json "$d[\"live_bytes_at_end\"]")" $((30 * MiB))
expect_eq ladder.nsteps "$(json l.json "$d[\"steps_total\"]")" 5
expect_eq ladder.steps "$(json l.json "[(s['time_ns'], s['peak_bytes'], s['step_bytes'], s['size'], s['api']) for s in $d['steps']]")" \
	"[(1000000000, 1048576, 1048576, 1048576, 'cudaMalloc'), (2000000000, 3145728, 2097152, 2097152, 'cudaMalloc'), (3000000000, 7340032, 4194304, 4194304, 'cudaMalloc'), (4000000000, 15728640, 8388608, 8388608, 'cudaMalloc'), (5000000000, 32505856, 16777216, 16777216, 'cudaMalloc')]"
expect_eq ladder.chunks "$(json l.json "sorted((c['size'], c['count']) for c in $d['chunk_sizes'])")" \
	"[(1048576, 1), (2097152, 1), (4194304, 1), (8388608, 1), (16777216, 1)]"
expect_eq ladder.pattern "$(json l.json "$d[\"pattern\"]")" doubling
# a 1 MiB allocation (no stack) comes back 11 times after a free: the
# ladder's first, then the 10 temporaries: 10 iterations. The first holds
# the ladder (its lowest: 1 MiB at +1 s), the others 30 MiB at their
# lowest: no rise in the last 8, enough (8) for no leak
expect_eq ladder.iterations "$(json l.json "($d['iterations'], $d['iteration_source'])")" "(10, 'pattern')"
expect_eq ladder.verdict "$(json l.json "($d['verdict'], $d['level_bytes'], $d['rate_bytes_per_s'])")" "('no-leak', $((30 * MiB)), None)"
expect_eq ladder.leak "$(json l.json "$d[\"likely_leak\"]")" False
expect_eq ladder.complete "$(json l.json 'd["traces"][0]["complete"]')" True
LC_ALL=C "$GMT_CLI" growth --width 60 ladder.gmt >l.txt 2>err || fail "growth text exit $?"
# the level between iterations, beside the peak inside one; prose wrapped
sed -n 4,5p l.txt | sed 's/^  //' | paste -sd' ' | grep -q '^device 0 (1.00 GiB): NO LEAK: steady between iterations at 30.0 MiB (peak within a step 31.0 MiB) for the last 8 of 10 iterations (the last rise was in iteration 2)$' ||
	fail "no verdict line first: $(cat l.txt)"
grep -q 'peak 31.0 MiB at +5.000 s after 5 rises (doubling)' l.txt || fail "no peak line: $(cat l.txt)"
grep -q 'live bytes over time' l.txt || fail "no chart: $(cat l.txt)"
[ "$(grep -c ' |' l.txt)" -eq 8 ] || fail "chart not 8 rows: $(cat l.txt)"
[ "$(grep ' |' l.txt | awk 'length($0) > 60' | wc -l)" -eq 0 ] || fail "chart wider than 60: $(cat l.txt)"

# ---- leak: 1 GiB at +1 s, then 1 MiB more every second, +2..+21 s ----
{
	echo "header start_mono=$S pid=12"
	echo "device ord=0 name=G total=$((16 * 1024 * MiB))"
	echo "events tid=1"
	echo "ev api=cudaMalloc t=$((2 * S)) ptr=0x100000000 size=$((1024 * MiB)) dev=0"
	for i in $(seq 1 20); do
		echo "ev api=cuMemAlloc_v2 t=$(((2 + i) * S)) ptr=$((0x200000000 + i * MiB)) size=$MiB"
	done
	echo "trailer t=$((23 * S))"
} | "$MKTRACE" leak.gmt
"$GMT_CLI" growth --json leak.gmt >k.json 2>err || fail "growth leak exit $?: $(cat err)"
expect_eq leak.peak "$(json k.json "$d[\"peak_bytes\"]")" $((1044 * MiB))
expect_eq leak.steps "$(json k.json "$d[\"steps_total\"]")" 21
# no iterations (nothing repeats while free): the high-water mark in time,
# rising every second to the end: a staircase, 3 MiB over its last 3 s
expect_eq leak.iterations "$(json k.json "($d['iterations'], $d['iteration_source'])")" "(0, 'none')"
expect_eq leak.verdict "$(json k.json "$d[\"verdict\"]")" leak
expect_eq leak.rate "$(json k.json "($d['rate_bytes_per_step'], $d['rate_bytes_per_s'])")" "(None, $MiB)"
expect_eq leak.pattern "$(json k.json "($d['pattern'], $d['pattern_block_bytes'])")" "('fixed blocks', $MiB)"
expect_eq leak.flag "$(json k.json "$d[\"likely_leak\"]")" True
expect_eq leak.chunks "$(json k.json "sorted((c['size'], c['count']) for c in $d['chunk_sizes'])")" \
	"[(1048576, 20), (1073741824, 1)]"
"$GMT_CLI" growth leak.gmt >k.txt || fail "growth leak text"
grep -q '^device 0 (16.0 GiB): LEAK: +1.00 MiB/s: grew in steps every ~1.000 s up to +21.000 s' k.txt ||
	fail "no leak line: $(cat k.txt)"
grep -q 'held by .*: 4.00 MiB in 4 allocations made since +18.000 s, still live' k.txt ||
	fail "no site line: $(cat k.txt)"
grep -q 'more: gpumemtrace growth --json leak.gmt .*; gpumemtrace leaks leak.gmt' k.txt ||
	fail "no more line: $(cat k.txt)"

# ---- flat: the same warm-up, then 10 MiB allocated and freed every second ----
{
	echo "header start_mono=$S pid=13"
	echo "events tid=1"
	echo "ev api=cudaMalloc t=$((2 * S)) ptr=0x100000000 size=$((1024 * MiB)) dev=0"
	for i in $(seq 1 20); do
		echo "ev api=cudaMalloc t=$(((2 + i) * S)) ptr=0x300000000 size=$((10 * MiB))"
		echo "ev api=cudaFree t=$(((2 + i) * S + S / 2)) ptr=0x300000000"
	done
	echo "trailer t=$((23 * S))"
} | "$MKTRACE" flat.gmt
"$GMT_CLI" growth --json flat.gmt >f.json 2>err || fail "growth flat exit $?: $(cat err)"
expect_eq flat.peak "$(json f.json "$d[\"peak_bytes\"]")" $((1034 * MiB))
expect_eq flat.steps "$(json f.json "$d[\"steps_total\"]")" 2
expect_eq flat.verdict "$(json f.json "($d['verdict'], $d['iterations'], $d['level_bytes'])")" "('no-leak', 19, $((1024 * MiB)))"
expect_eq flat.flag "$(json f.json "$d[\"likely_leak\"]")" False

# ---- a 75% preallocation ----
{
	echo "header start_mono=$S pid=14"
	echo "device ord=0 name=G total=$((16 * 1024 * MiB))"
	echo "ev api=cudaMalloc t=$((2 * S)) ptr=0x100000000 size=$((12 * 1024 * MiB)) dev=0"
	echo "ev api=cudaMalloc t=$((3 * S)) ptr=0x500000000 size=$((2 * MiB))"
	echo "trailer t=$((4 * S))"
} | "$MKTRACE" prealloc.gmt
"$GMT_CLI" growth --json prealloc.gmt >p.json || fail "growth prealloc"
expect_eq prealloc "$(json p.json "($d['pattern'], $d['pattern_block_bytes'])")" "('preallocation', $((12 * 1024 * MiB)))"
"$GMT_CLI" growth prealloc.gmt >p.txt || fail "growth prealloc text"
grep -q '(preallocation, 12.0 GiB, 75% of the device in one allocation)' p.txt || fail "no prealloc note: $(cat p.txt)"
# two allocations and no event after the second: nothing to tell a
# steady state by
expect_eq prealloc.verdict "$(json p.json "$d['verdict']")" undetermined

# ---- several traces: a section each, totals and imbalance ----
"$GMT_CLI" growth --json ladder.gmt leak.gmt flat.gmt >m.json 2>err || fail "growth multi exit $?"
expect_eq multi.n "$(json m.json 'len(d["traces"])')" 3
expect_eq multi.processes "$(json m.json 'd["totals"]["processes"]')" 3
expect_eq multi.sum "$(json m.json 'd["totals"]["peak_bytes_sum"]')" $(((31 + 1044 + 1034) * MiB))
expect_eq multi.max "$(json m.json '(d["totals"]["imbalance"]["max"], d["totals"]["imbalance"]["max_trace"])')" "($((1044 * MiB)), 1)"
"$GMT_CLI" growth ladder.gmt leak.gmt >m.txt 2>err || fail "growth multi text exit $?"
grep -q 'peaks per process' m.txt || fail "no per-process table: $(cat m.txt)"
grep -q 'max/min' m.txt || fail "no imbalance: $(cat m.txt)"

# ---- --device selects one device; one the trace lacks is exit 2 ----
"$GMT_CLI" growth --json --device 0 ladder.gmt >dv.json || fail "growth --device"
expect_eq device.sel "$(json dv.json '[x["index"] for x in d["traces"][0]["devices"]]')" "[0]"
rc=0
"$GMT_CLI" growth --json --device 3 ladder.gmt >dv.json 2>err || rc=$?
expect_eq device.absent "$rc $(wc -l <err)" "2 1"

# ---- an incomplete trace says so ----
printf 'header start_mono=1\nev api=cudaMalloc t=5 ptr=0x1000 size=4096 dev=0\n' | "$MKTRACE" torn.gmt
"$GMT_CLI" growth torn.gmt >t.txt 2>err || fail "growth incomplete exit $?"
grep -q 'incomplete' t.txt || fail "no incomplete note: $(cat t.txt)"
grep -q 'warning: torn.gmt: incomplete trace' err || fail "no warning: $(cat err)"
"$GMT_CLI" growth --json torn.gmt 2>/dev/null >t.json
expect_eq torn.complete "$(json t.json 'd["traces"][0]["complete"]')" False

# ---- errors: one line, documented exit codes ----
echo "not a trace at all, just text" >bad.gmt
expect_exit "no trace" 2 "$GMT_CLI" growth
expect_exit "bad option" 2 "$GMT_CLI" growth --frob ladder.gmt
expect_exit "bad device" 2 "$GMT_CLI" growth --device x ladder.gmt
expect_exit "bad width" 2 "$GMT_CLI" growth --width 3 ladder.gmt
expect_exit "width no value" 2 "$GMT_CLI" growth ladder.gmt --width
expect_exit "missing file" 3 "$GMT_CLI" growth ladder.gmt nosuch.gmt
expect_exit "not a trace" 4 "$GMT_CLI" growth bad.gmt
"$GMT_CLI" growth --help >h.txt || fail "--help exit $?"
grep -q 'undetermined' h.txt && grep -q 'examples' h.txt || fail "help: $(cat h.txt)"

# ---- a training loop's sawtooth, then the model freed at exit ----
# 100 MiB of weights; every second 10 MiB allocated and freed; with "leak",
# 1 MiB more kept each second. The teardown must not hide the leak, and the
# sawtooth alone must not look like one.
sawtooth() { # name leak(0|1)
	{
		echo "header start_mono=$S pid=14"
		echo "events tid=1"
		echo "ev api=cudaMalloc t=$((2 * S)) ptr=0x100000000 size=$((100 * MiB)) dev=0"
		for i in $(seq 1 20); do
			echo "ev api=cudaMalloc t=$(((2 + i) * S)) ptr=0x300000000 size=$((10 * MiB))"
			echo "ev api=cudaFree t=$(((2 + i) * S + S / 2)) ptr=0x300000000"
			[ "$2" = 1 ] && echo "ev api=cudaMalloc t=$(((2 + i) * S + S / 2 + 1)) ptr=$((0x400000000 + i * MiB)) size=$MiB"
		done
		echo "ev api=cudaFree t=$((23 * S)) ptr=0x100000000"
		echo "trailer t=$((24 * S))"
	} | "$MKTRACE" "$1.gmt"
	"$GMT_CLI" growth --json "$1.gmt" >"$1.json" || fail "growth $1"
}
# The 10 MiB temporary repeats 20 times: 19 iterations, a second each.
sawtooth saw 0
expect_eq saw.verdict "$(json saw.json "($d['verdict'], $d['iterations'], $d['iteration_source'])")" "('no-leak', 19, 'pattern')"
sawtooth sawleak 1
# each iteration's lowest is 1 MiB above the one before: a leak of 1 MiB
# per iteration, 1 MiB/s, held by the 1 MiB allocations
expect_eq sawleak.verdict "$(json sawleak.json "($d['verdict'], $d['likely_leak'])")" "('leak', True)"
expect_eq sawleak.rate "$(json sawleak.json "($d['rate_bytes_per_step'], $d['rate_bytes_per_s'])")" "($MiB, $MiB)"
expect_eq sawleak.floors "$(json sawleak.json "$d['markers']['floor_bytes'][:3]")" "[$((100 * MiB)), $((101 * MiB)), $((102 * MiB))]"
# ---- the real H100 traces (docs/validation): their true answers ----
# tests/gpu/torch_train.py keeps nothing per step: no leak in any of
# PyTorch's allocators (cudaMallocAsync, no caching), iterations from its
# "train_step" range; the warm-up ends in iteration 12 (10 warm-up steps).
# JAX preallocates 75% of the device, and tests/gpu/jax_run.py keeps 4 MiB
# every 10 steps inside it, which no driver call shows: undetermined.
# NCCL: a few allocations, then a steady state. The plain program: a few
# allocations, then its 1 PiB request fails and it ends 3.3 ms after its
# last rise: a run that ended in an OOM, undetermined. The golden leak.gmt keeps 1 MiB per step: a leak,
# found from the repeating 32 MiB temporary (no ranges).
VAL=$TESTS_DIR/real
verdict() { # name trace expected-verdict expected-iterations expected-source
	"$GMT_CLI" growth --json "$2" >v.json 2>err || fail "growth $1 exit $?: $(cat err)"
	expect_eq "real.$1" "$(json v.json "($d['verdict'], $d['iterations'], $d['iteration_source'])")" "('$3', $4, '$5')"
}
verdict torch-async "$VAL/2026-11-22-h100/torch-async.837.gmt" no-leak 310 ranges
verdict torch-nocache "$VAL/2026-11-23-h100/torch-nocache.941.gmt" no-leak 310 ranges
verdict verify-nocache "$VAL/2026-11-23-h100/verify-torch-nocache.1167.gmt" no-leak 60 ranges
verdict jax "$VAL/2026-11-22-h100/jax-default.1043.gmt" undetermined 182 ranges
verdict nccl "$VAL/2026-11-22-h100/nccl.969.gmt" no-leak 0 none
verdict plain "$VAL/2026-11-23-h100/plain-shared.643.gmt" undetermined 0 none
verdict golden-leak "$TESTS_DIR/golden/leak.gmt" leak 15 pattern
expect_eq golden-leak.rate "$(json v.json "$d['rate_bytes_per_step']")" $MiB
# never a level above the peak, a negative time, or a rise "to 0 B"
"$GMT_CLI" growth "$VAL/2026-11-22-h100/torch-async.837.gmt" >ta.txt || fail "growth torch-async text"
sed -n 4,5p ta.txt | sed 's/^  //' | paste -sd' ' | grep -q '^device 0 (79.2 GiB): NO LEAK: steady between iterations at 451 MiB (peak within a step 982 MiB) for the last 298 of 310 iterations (the last rise was in iteration 12)$' ||
	fail "torch-async verdict line: $(cat ta.txt)"
! grep -Eq 'LEAK.*NO LEAK|after -|to 0 B' ta.txt || fail "contradiction: $(cat ta.txt)"
# the end named, with its time: NCCL's sampler read at exit at +6.419 s
# (the trace closes later, at 7.2 s): not "the end of the trace"
"$GMT_CLI" growth --json "$VAL/2026-11-23-h100/nccl.1021.gmt" >n.json || fail "growth nccl"
json n.json "$d['verdict_reason']" | grep -q "to the process's exit (+6.419 s)$" ||
	fail "nccl's end: $(json n.json "$d['verdict_reason']")"
# the chart's axis: no negative time (an event stamped before the trace's
# start), the end label ending under the last column (--width 60: 46)
LC_ALL=C "$GMT_CLI" growth --width 60 "$VAL/2026-11-22-h100/before-fixes-plain-shared.gmt" >bf.txt ||
	fail "growth before-fixes"
axis=$(grep -A1 '^        0 B |' bf.txt | tail -1)
expect_eq axis.start "$(echo "$axis" | awk '{print $1}')" "+0"
expect_eq axis.end "${#axis}" $((13 + 46))
# prose wrapped to the text width when piped: no line over 160 columns
# (issue: reasons up to 226), nor over 80 with COLUMNS=80
for w in 160 80; do
	for tr in "$VAL/2026-11-22-h100/torch-async.837.gmt" "$TESTS_DIR/golden/leak.gmt" "$TESTS_DIR/verdicts/traces/torch.oom-exceeds.gmt"; do
		COLUMNS=$w LC_ALL=C "$GMT_CLI" growth --width 60 "$tr" >w.txt || fail "growth $tr"
		# (the trace's header is the shared head's; a path alone may be longer)
		sed 's/\xe2\x80\xa6/./g' w.txt | awk -v w=$w 'NR > 2 && length($0) > w && NF > 1 { exit 1 }' ||
			fail "a line over $w columns: $(cat w.txt)"
	done
done
echo ok
