#!/usr/bin/env bash
# Phases from RANGE records: summary's phases table, top --by range, and
# growth per iteration from a repeating top-level range and from MARKs, on a
# hand-built trace with known answers. Traces without ranges show none.
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

# Four train_step iterations on thread 1: forward allocates 1000 B, backward
# allocates 500 B (never freed: +500 B per iteration) and frees forward's.
# Then an "eval" start/end range opened on thread 2 holds thread 1's 300 B;
# thread 2's 100 B at the end is in no phase.
phases_trace() { # OUT USE_MARKS
	{
		cat <<'T'
header start_mono=0 pid=44
module id=1 bias=0 start=0x400000 end=0x500000 path=/work/app
module id=2 bias=0x7f0000000000 start=0x7f0000000000 end=0x7f0000100000 path=/usr/lib/libcudart.so.12
stack parent=0 ip=0x401000 parent=1 ip=0x401100 parent=2 ip=0x7f0000001000
symbol ip=0x401000 module=1 func=main file=main.c line=3
symbol ip=0x401100 module=1 func=train file=train.c line=10
events tid=1
T
		for k in 0 1 2 3; do
			T=$((1000 * k + 100))
			echo "ev api=cudaMalloc t=$((T + 20)) ptr=$((0x100000 + k * 4096)) size=1000 dev=0 stack=3"
			echo "ev api=cudaMalloc t=$((T + 50)) ptr=$((0x200000 + k * 4096)) size=500 stack=3"
			echo "ev api=cudaFree t=$((T + 60)) ptr=$((0x100000 + k * 4096))"
		done
		echo "ev api=cudaMalloc t=4100 ptr=0x300000 size=300 stack=3"
		echo "events tid=2"
		echo "ev api=cudaMalloc t=5000 ptr=0x400000 size=100 dev=0 stack=3"
		for k in 0 1 2 3; do
			T=$((1000 * k + 100))
			if [ "$2" = marks ]; then
				echo "range tid=1 t=$T op=mark text=iteration"
			else
				echo "range tid=1 t=$T op=push text=train_step"
				echo "range tid=1 t=$((T + 10)) op=push text=forward"
				echo "range tid=1 t=$((T + 30)) op=pop"
				echo "range tid=1 t=$((T + 40)) op=push text=backward"
				echo "range tid=1 t=$((T + 70)) op=pop"
				echo "range tid=1 t=$((T + 80)) op=pop"
			fi
		done
		[ "$2" != marks ] || echo "range tid=1 t=3900 op=mark text=iteration"
		echo "range tid=1 t=3950 op=mark text=once"
		echo "range tid=2 t=4000 op=start id=7 text=eval"
		echo "range tid=2 t=4200 op=end id=7"
		echo "trailer t=6000"
	} | "$MKTRACE" "$1"
}
phases_trace p.gmt ranges
phases_trace m.gmt marks

# summary: the phases table
"$GMT_CLI" summary --json p.gmt >s.json 2>err || fail "summary exit $?: $(cat err)"
expect_eq phases "$(json s.json "[(p['name'], p['allocations'], p['bytes_allocated'], p['bytes_freed'], p['net_bytes'], p['peak_bytes']) for p in d['phases']]")" \
	"[('train_step', 0, 0, 0, 0, 3000), ('train_step/forward', 4, 4000, 4000, 0, 2500), ('train_step/backward', 4, 2000, 0, 2000, 3000), ('eval', 1, 300, 0, 300, 2300), ('(no phase)', 1, 100, 0, 100, 2400)]"
expect_eq no-accounting "$(json s.json "d['accounting']")" "None"
"$GMT_CLI" summary p.gmt >s.txt 2>err || fail "summary text exit $?"
# a phase is charged what its own allocations still hold: backward's 500 B a
# step, not forward's 1000 B that backward frees
grep -Eq '^  train_step/backward +4 +1\.95 KiB +0 B +1\.95 KiB +2\.93 KiB$' s.txt || fail "no backward row: $(cat s.txt)"
grep -Eq '^  train_step/forward +4 +3\.91 KiB +3\.91 KiB +0 B +2\.44 KiB$' s.txt || fail "no forward row: $(cat s.txt)"
grep -Eq '^  \(no phase\) +1 +100 B +0 B +100 B +2\.34 KiB$' s.txt || fail "no (no phase) row: $(cat s.txt)"
grep -q 'still open' s.txt && fail "every range closes: $(cat s.txt)"

# Across threads: thread 9 opens no range (PyTorch's autograd thread) and
# allocates 64 B while thread 1's step/backward is open: it inherits it.
# Thread 1's "init" is pushed and never popped (NCCL's
# ncclCommInitRankConfig): flagged, kept by thread 1 (its 16 B), and not
# inherited by thread 9's 32 B after it.
"$MKTRACE" inh.gmt <<'T'
header start_mono=0 pid=46
events tid=9
ev api=cudaMalloc t=30 ptr=0x1000 size=64 dev=0
ev api=cudaMalloc t=70 ptr=0x2000 size=32 dev=0
events tid=1
ev api=cudaMalloc t=80 ptr=0x3000 size=16 dev=0
range tid=1 t=10 op=push text=step
range tid=1 t=20 op=push text=backward
range tid=1 t=40 op=pop
range tid=1 t=50 op=pop
range tid=1 t=60 op=push text=init
trailer t=100
T
"$GMT_CLI" summary --json inh.gmt >i.json 2>err || fail "summary inh exit $?: $(cat err)"
expect_eq inherited "$(json i.json "[(p['name'], p['allocations'], p['inherited_allocations'], p['inherited_bytes'], p['net_bytes']) for p in d['phases']]")" \
	"[('step', 0, 0, 0, 0), ('step/backward', 1, 1, 64, 64), ('init', 1, 0, 0, 16), ('(no phase)', 1, 0, 0, 32)]"
expect_eq open-at-end "$(json i.json "[(r['name'], r['time_ns'], r['tid']) for r in d['phases_open_at_end']]")" "[('init', 60, 1)]"
"$GMT_CLI" summary inh.gmt >i.txt 2>err || fail "summary inh text exit $?"
grep -q '^    init  opened at +0.000000060 s on thread 1$' i.txt || fail "no open range: $(cat i.txt)"
grep -q '^  (1 allocation, 64 B, came from threads with no range open, such as PyTorch.s autograd thread: each' i.txt || fail "no inherited note: $(cat i.txt)"

# top --by range: bytes by phase at the peak (+3150 ns), at the end, in total
"$GMT_CLI" top --json --by range p.gmt >t.json 2>err || fail "top exit $?: $(cat err)"
expect_eq top-range "$(json t.json "d['by'], [(r['phase'], r['peak_bytes'], r['end_bytes'], r['total_bytes'], r['calls']) for r in d['devices'][0]['rows']]")" \
	"('range', [('train_step/backward', 2000, 2000, 2000, 4), ('train_step/forward', 1000, 0, 4000, 4), ('eval', 0, 300, 300, 1), ('(no phase)', 0, 100, 100, 1)])"
"$GMT_CLI" top --by range p.gmt >t.txt 2>err || fail "top text exit $?"
grep -Eq '^ +1000 B +1 +0 B +3\.91 KiB +4  train_step/forward$' t.txt || fail "no forward row: $(cat t.txt)"
# leaks and diff do not group by range
rc=0
"$GMT_CLI" leaks --by range p.gmt >out 2>err || rc=$?
[ "$rc" -eq 2 ] || fail "leaks --by range: exit $rc"

# growth per iteration: from the repeating top-level range...
"$GMT_CLI" growth --json p.gmt >g.json 2>err || fail "growth exit $?: $(cat err)"
M="d['traces'][0]['devices'][0]['markers']"
expect_eq range-markers "$(json g.json "$M['source'], $M['name'], $M['iterations'], $M['growth_per_iteration_bytes'], $M['growth_bytes'], $M['grew']")" \
	"('range', 'train_step', 4, 500, [500, 500, 500, 500], [1, 2, 3, 4])"
expect_eq boundaries "$(json g.json "[(b['time_ns'], b['live_bytes']) for b in $M['boundaries']]")" \
	"[(100, 0), (1100, 500), (2100, 1000), (3100, 1500), (3180, 2000)]"
"$GMT_CLI" growth p.gmt >g.txt 2>err || fail "growth text exit $?"
grep -q '^device 0: UNDETERMINED: memory still rose in the last iteration (4 of 4): too soon to tell a leak from a warm-up$' g.txt &&
	grep -q '^  iterations: 4, from the range "train_step"$' g.txt || fail "no verdict on iterations: $(cat g.txt)"
# ...and from MARKs (the most frequent text; "once" is not enough)
"$GMT_CLI" growth --json m.gmt >gm.json 2>err || fail "growth m exit $?: $(cat err)"
expect_eq mark-markers "$(json gm.json "$M['source'], $M['name'], $M['iterations'], $M['growth_bytes']")" \
	"('mark', 'iteration', 4, [500, 500, 500, 500])"
# no ranges: markers null, no phases
"$MKTRACE" plain.gmt <<'T'
header start_mono=0 pid=45
events tid=1
ev api=cudaMalloc t=10 ptr=0x1000 size=100 dev=0
trailer t=20
T
"$GMT_CLI" growth --json plain.gmt >gp.json 2>err || fail "growth plain exit $?"
expect_eq no-markers "$(json gp.json "$M")" "None"
"$GMT_CLI" summary --json plain.gmt >sp.json 2>err || fail "summary plain exit $?"
expect_eq no-phases "$(json sp.json "d['phases']")" "None"
"$GMT_CLI" summary plain.gmt >sp.txt 2>err || fail "summary plain text exit $?"
! grep -q '^phases' sp.txt || fail "phases without ranges: $(cat sp.txt)"

# Past 24 rows (XLA names a range per compiler pass: 26,755 in one JAX run
# on an H100) the table keeps "(no phase)", then the phases that moved the
# most memory, then the first others, and counts the rest.
{
	echo "header start_mono=0 pid=46"
	echo "events tid=1"
	for k in $(seq 1 30); do echo "ev api=cudaMalloc t=$((k * 100 + 50)) ptr=$((0x100000 * k)) size=$((k * 1000)) dev=0"; done
	echo "ev api=cudaMalloc t=9000 ptr=0x9000000 size=5 dev=0"
	for k in $(seq 1 30); do
		echo "range tid=1 t=$((k * 100)) op=push text=step$k"
		echo "range tid=1 t=$((k * 100 + 60)) op=pop"
	done
	for k in $(seq 1 40); do echo "range tid=1 t=$((5000 + k)) op=mark text=idle$k"; done
	echo "trailer t=10000"
} | "$MKTRACE" many.gmt
"$GMT_CLI" summary many.gmt >many.txt 2>err || fail "summary many exit $?"
sed -n '/^phases/,/^$/p' many.txt >rows.txt
expect_eq rows "$(grep -c '^  step[0-9]' rows.txt) $(grep -c '^  (no phase)' rows.txt)" "23 1"
grep -q '^  step30 ' rows.txt && ! grep -q '^  step7 ' rows.txt || fail "not the largest movers: $(cat rows.txt)"
grep -q '^  (7 more phases with allocations or frees, 0 without' rows.txt || fail "no count of the rest: $(cat rows.txt)"

# A range per training step: growth finds the most frequent top-level range
# by sorting, not pairwise (200,000 steps took minutes pairwise; the
# timeout is a hang guard, not a measurement).
python3 -c '
print("header start_mono=0 pid=48\nevents tid=1\nev api=cudaMalloc t=5 ptr=0x100000 size=4096 dev=0")
for k in range(200000):
    print("range tid=1 t=%d op=push text=train_step\nrange tid=1 t=%d op=pop" % (10 + 10 * k, 15 + 10 * k))
print("trailer t=3000000")' | "$MKTRACE" steps.gmt
timeout 60 "$GMT_CLI" growth steps.gmt >steps.txt 2>err || fail "growth on 200,000 steps: exit $? $(cat err)"
# more than 100,000 iterations are merged (memory bounded): two steps each
grep -q "iterations: 100000 (each joins 2 of the run's 200000), from the range \"train_step\"" steps.txt ||
	fail "no iterations: $(cat steps.txt)"

# A long name is cut between UTF-8 characters, keeping its tail.
long=$(python3 -c 'print("\u00e9" * 50 + "/" + "\u00fc" * 30)')
printf '%s\n' "header start_mono=0 pid=47" "events tid=1" \
	"ev api=cudaMalloc t=150 ptr=0x100000 size=4096 dev=0" \
	"range tid=1 t=100 op=push text=$long" "range tid=1 t=200 op=pop" "trailer t=1000" |
	"$MKTRACE" u8.gmt
"$GMT_CLI" summary u8.gmt >u8.txt 2>err || fail "summary u8 exit $?"
python3 -c 'import sys; open(sys.argv[1], encoding="utf-8").read()' u8.txt || fail "a name cut inside a character"
grep -q '^  \.\.\.é*/ü* ' u8.txt || fail "no ...tail: $(cat u8.txt)"
echo ok
