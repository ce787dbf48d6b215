#!/usr/bin/env bash
# growth: known answers by construction. A ladder of doubling chunks (steps,
# chunk sizes, warm-up end), a leak of 1 MiB per second after a 1 GiB
# warm-up (slope, flagged), a flat run with temporaries (not flagged),
# several traces (totals, imbalance), an incomplete trace, error exits.
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
# 95% of 31 MiB is reached by the 16 MiB step (15 MiB before it is not)
expect_eq ladder.warmup "$(json l.json "$d[\"warmup_end_ns\"]")" $((5 * S))
expect_eq ladder.pattern "$(json l.json "$d[\"pattern\"]")" doubling
expect_eq ladder.stopped "$(json l.json "$d[\"growth_stopped\"]")" True
expect_eq ladder.leak "$(json l.json "$d[\"likely_leak\"]")" False
expect_eq ladder.complete "$(json l.json 'd["traces"][0]["complete"]')" True
LC_ALL=C "$GMT_CLI" growth --width 60 ladder.gmt >l.txt 2>err || fail "growth text exit $?"
grep -q 'peak 31.0 MiB at +5.000 s in 5 steps' l.txt || fail "no peak line: $(cat l.txt)"
grep -q 'warm-up ends at +5.000 s' l.txt || fail "no warm-up line: $(cat l.txt)"
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
expect_eq leak.warmup "$(json k.json "$d[\"warmup_end_ns\"]")" $((1 * S))
expect_eq leak.stopped "$(json k.json "$d[\"growth_stopped\"]")" True
expect_eq leak.window "$(json k.json "$d[\"slope_window_start_ns\"]")" $((1 * S))
expect_eq leak.samples "$(json k.json "$d[\"slope_samples\"]")" 21
expect_eq leak.slope "$(json k.json "$d[\"slope_bytes_per_s\"]")" $MiB
expect_eq leak.rise "$(json k.json "$d[\"rise_bytes\"]")" $((20 * MiB))
expect_eq leak.pattern "$(json k.json "($d['pattern'], $d['pattern_block_bytes'])")" "('fixed blocks', $MiB)"
expect_eq leak.flag "$(json k.json "$d[\"likely_leak\"]")" True
expect_eq leak.chunks "$(json k.json "sorted((c['size'], c['count']) for c in $d['chunk_sizes'])")" \
	"[(1048576, 20), (1073741824, 1)]"
"$GMT_CLI" growth leak.gmt >k.txt || fail "growth leak text"
grep -q 'live bytes +1.00 MiB/s (+20.0 MiB over 20.000 s, 21 samples): LIKELY LEAK' k.txt ||
	fail "no leak line: $(grep -i slope k.txt; grep after k.txt)"

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
expect_eq flat.warmup "$(json f.json "$d[\"warmup_end_ns\"]")" $((1 * S))
expect_eq flat.flag "$(json f.json "$d[\"likely_leak\"]")" False
expect_eq flat.small "$(json f.json "abs($d['rise_bytes']) < $MiB")" True

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
grep -q '(75% of the device in one allocation: a preallocation)' p.txt || fail "no prealloc note: $(cat p.txt)"

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
expect_exit() { # name code command...
	local name=$1 want=$2 rc=0
	shift 2
	"$@" >out 2>err || rc=$?
	[ "$rc" -eq "$want" ] || fail "$name: exit $rc, expected $want: $(cat err)"
	[ "$(wc -l <err)" -eq 1 ] || fail "$name: expected one stderr line: $(cat err)"
	grep -q '^gpumemtrace growth: ' err || fail "$name: bad prefix: $(cat err)"
}
echo "not a trace at all, just text" >bad.gmt
expect_exit "no trace" 2 "$GMT_CLI" growth
expect_exit "bad option" 2 "$GMT_CLI" growth --frob ladder.gmt
expect_exit "bad device" 2 "$GMT_CLI" growth --device x ladder.gmt
expect_exit "bad width" 2 "$GMT_CLI" growth --width 3 ladder.gmt
expect_exit "width no value" 2 "$GMT_CLI" growth ladder.gmt --width
expect_exit "missing file" 3 "$GMT_CLI" growth ladder.gmt nosuch.gmt
expect_exit "not a trace" 4 "$GMT_CLI" growth bad.gmt
"$GMT_CLI" growth --help >h.txt || fail "--help exit $?"
grep -q 'warm-up' h.txt && grep -q 'examples' h.txt || fail "help: $(cat h.txt)"

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
sawtooth saw 0
expect_eq saw.flag "$(json saw.json "$d[\"likely_leak\"]")" False
expect_eq saw.slope "$(json saw.json "$d[\"slope_bytes_per_s\"]")" 0
sawtooth sawleak 1
expect_eq sawleak.flag "$(json sawleak.json "$d[\"likely_leak\"]")" True
expect_eq sawleak.slope "$(json sawleak.json "$d[\"slope_bytes_per_s\"]")" $MiB
expect_eq sawleak.end "$(json sawleak.json "$d[\"slope_window_end_ns\"]")" $((21 * S + S / 2 + 1))
echo ok
