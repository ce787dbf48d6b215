# run --framework-history: the helper (python/gpumemtrace/_counters/
# sitecustomize.py) turns on the stand-in PyTorch's allocator history
# (tests/python/standins/torch: the real API's shapes; its allocator follows
# the documented caching rules, _caching.py) once the program initialised
# CUDA, and writes its snapshots at each OOM and at exit as FWSNAP, FWTRACE
# and FWSEG records: every entry once, with the program's Python lines,
# segments and blocks; the program's own recording wins and is flushed
# before it changes; the program's output never changes.
. "$TESTS_DIR/integration/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
py=$(python3 -c 'import sys; print(sys.executable)')
prog=$TESTS_DIR/python/history-train.py
export LD_LIBRARY_PATH=$SIM_DIR SIMCUDA_CAPACITY=1G GPUMEMTRACE_SAMPLE_MS=0
export PYTHONPATH=$TESTS_DIR/python/standins:$TESTS_DIR/python/usersite

run_case() { # case flag... -> out.$case, err.$case, $case.gmt, d.$case
	local c=$1
	shift
	rm -f "$c.gmt" # an existing file would make the library pick another name
	"$GMT_CLI" run -q "$@" -o "$PWD/$c.gmt" -- "$py" "$prog" "$c" >"out.$c" 2>"err.$c" ||
		fail "$c: run exit $?: $(cat "err.$c")"
	"$GMT_CLI" dump "$c.gmt" >"d.$c" || fail "$c: dump"
}
for c in leak oom own; do
	"$py" "$prog" "$c" >"plain.$c" 2>&1 || fail "$c untraced: $(cat "plain.$c")"
	run_case "$c" --framework-history
	diff "plain.$c" "out.$c" || fail "$c: the program's output changed with the history"
	grep -q "user sitecustomize ran" "out.$c" || fail "$c: the program's own sitecustomize did not run"
	! grep -q "gpumemtrace:" "err.$c" || fail "$c: the helper spoke: $(cat "err.$c")"
done
entries() { grep -cE "^ +#[0-9]+ $2 " "d.$1" || true; }

# leak: one snapshot at exit; 1 + 30 x 8 allocations, each entry once
grep -q 'FWSNAP .* seq 1 reason exit source "torch" .* flags 0x3 history python-stacks max_entries 100000' d.leak ||
	fail "leak: no exit snapshot: $(grep FWSNAP d.leak)"
expect_eq "leak: FWSNAP records" "$(grep -c ' FWSNAP ' d.leak)" 1
expect_eq "leak: alloc entries" "$(entries leak alloc)" 241
expect_eq "leak: free_requested entries" "$(entries leak free_requested)" 210
grep -q 'PYFRAME .* function "step" file ".*history-train.py" line 23' d.leak ||
	fail "leak: the leak's Python line is not among the frames"
grep -q '"expandable_segments" "False"' d.leak || fail "leak: no allocator settings"
# the blocks at exit: the 30 kept tensors and the weights are active
expect_eq "leak: active blocks at exit" "$(grep -c ' active_allocated ' d.leak)" 31

# The reports, --tensors: at the device's peak (74 MiB of segments: the
# weights' 12 MiB, three 20 MiB large segments, one 2 MiB small one), the
# tensors: the weights (12 MiB), one step's activations (4 x 3 MiB) and
# gradients (3 x 600 KiB), 25 kept tensors of 1 MiB + 4 KiB; the rest is
# what no tensor asked for (free blocks and rounding). Rows add up to the
# peak. total and calls: each line's tensor allocations over the history
# (the segments' driver calls give way to them).
"$GMT_CLI" top leak.gmt >top0.txt || fail "top"
grep -q "PyTorch's allocator history is in the trace: --tensors" top0.txt || fail "top: no hint"
COLUMNS=200 "$GMT_CLI" top --tensors leak.gmt >top.txt || fail "top --tensors: $(cat top.txt)"
grep -Eq '^ +25\.1 MiB +25 +30\.1 MiB +30\.1 MiB +30  step \(.*history-train.py:23\)' top.txt ||
	fail "top --tensors: the kept tensors' line: $(cat top.txt)"
grep -Eq '^ +12\.0 MiB +4 +0 B +360 MiB +120  .*history-train.py:21\)' top.txt ||
	fail "top --tensors: the activations' total and calls: $(cat top.txt)"
grep -Eq "^ +23\.1 MiB +0 .*\(PyTorch's cache: free blocks and rounding\)" top.txt || fail "top --tensors: the cache row"
grep -Eq '^ +12\.0 MiB +1 +12\.0 MiB +12\.0 MiB +1  <module> \(.*history-train.py:31\)' top.txt ||
	fail "top --tensors: the weights"
"$GMT_CLI" top --tensors --json leak.gmt >top.json || fail "top --tensors --json"
expect_eq "top --tensors: rows add up to the peak" \
	"$(PYTHONPATH= json top.json 'sum(r["peak_bytes"] for r in d["devices"][0]["rows"])')" \
	"$(PYTHONPATH= json top.json 'd["devices"][0]["peak_bytes"]')"
expect_eq "top --tensors: total calls = the history's alloc entries" \
	"$(PYTHONPATH= json top.json 'sum(r["calls"] for r in d["devices"][0]["rows"])')" 241
expect_eq "top --tensors: total bytes = the tensors' requests, no segment's" \
	"$(PYTHONPATH= json top.json 'sum(r["total_bytes"] for r in d["devices"][0]["rows"])')" \
	$((12582912 + 30 * (4 * 3145728 + 3 * 614400 + 1052672)))
expect_eq "top --tensors --json: the cache row's basis" \
	"$(PYTHONPATH= json top.json 'd["tensor_bytes"] + "|" + d["cache_row"]')" \
	"requested|(PyTorch's cache: free blocks and rounding)"
# one basis where a user compares them: top's cache row at the end is what
# fragmentation calls no tensor asked for; its free blocks are less by the
# tensors' rounding
"$GMT_CLI" fragmentation --json leak.gmt >f.json || fail "fragmentation --json"
expect_eq "top's cache row at the end = fragmentation's unrequested bytes" \
	"$(PYTHONPATH= json top.json '[r["end_bytes"] for r in d["devices"][0]["rows"] if r["key"] == d["cache_row"]][0]')" \
	"$(PYTHONPATH= json f.json 'd["traces"][0]["devices"][0]["framework_blocks"]["last"]["unrequested_bytes"]')"
expect_eq "fragmentation: free blocks + the tensors' rounding = unrequested" \
	"$(PYTHONPATH= json f.json '(lambda b: b["free_bytes"] + b["allocated_bytes"] - b["requested_bytes"] == b["unrequested_bytes"] and b["free_bytes"] < b["unrequested_bytes"])(d["traces"][0]["devices"][0]["framework_blocks"]["last"])')" True
COLUMNS=200 "$GMT_CLI" top --tensors --sort total -n 1 leak.gmt >top-total.txt || fail "top --tensors --sort total"
grep -Eq ' 360 MiB +120  .*history-train.py:21\)' top-total.txt ||
	fail "top --tensors --sort total: the activations first: $(cat top-total.txt)"
! grep -q "note: .*history begins" top.txt || fail "top --tensors: a whole history said to begin late"
COLUMNS=200 "$GMT_CLI" summary leak.gmt >s.txt || fail "summary"
grep -q "device 0 at its peak (74.0 MiB): 50.9 MiB in 33 tensors (as requested), 23.1 MiB of PyTorch's cache beyond them: free blocks and rounding (segments 74.0 MiB)" s.txt ||
	fail "summary: $(grep -A3 'allocator history' s.txt)"
grep -q "at the end 42.1 MiB in 31 tensors" s.txt || fail "summary: the end"
"$GMT_CLI" summary --json leak.gmt >s.json || fail "summary --json"
expect_eq "summary json: the cache beyond the tensors' requests at the peak" \
	"$(PYTHONPATH= json s.json 'd["framework_history"]["devices"][0]["at_peak"]["unrequested_bytes"]')" \
	$((74 * 1048576 - 12582912 - 4 * 3145728 - 3 * 614400 - 25 * 1052672))
"$GMT_CLI" flamegraph --tensors --folded leak.gmt >fg.txt || fail "flamegraph --tensors"
expect_eq "flamegraph --tensors: the peak" "$(awk '{s += $NF} END {print s}' fg.txt)" 77594624
grep -q "step (history-train.py);(.*)\? [0-9]" fg.txt || grep -q ';step (history-train.py) [0-9]*$' fg.txt ||
	fail "flamegraph --tensors: no tensor frame: $(cat fg.txt)"
grep -q "(PyTorch's cache: free blocks and rounding) [0-9]*$" fg.txt || fail "flamegraph --tensors: no cache leaf"

# growth: the driver sees a few 20 MiB segments; the tensors keep exactly
# the kept tensor per step (1 MiB + 4 KiB, as asked), on the line that keeps it
"$GMT_CLI" growth --json leak.gmt >g.json || fail "growth --json"
expect_eq "growth: tensors' verdict" "$(PYTHONPATH= json g.json 'd["traces"][0]["devices"][0]["tensors"]["verdict"]')" leak
expect_eq "growth: tensors kept per iteration" \
	"$(PYTHONPATH= json g.json 'd["traces"][0]["devices"][0]["tensors"]["bytes_per_iteration"]')" 1052672
expect_eq "growth: the line that keeps them" \
	"$(PYTHONPATH= json g.json 'd["traces"][0]["devices"][0]["tensors"]["sites"][0]["line"]')" 23
expect_eq "growth: iterations from the tensors' own repeats" \
	"$(PYTHONPATH= json g.json 'd["traces"][0]["devices"][0]["tensors"]["iterations_source"]')" tensors
COLUMNS=200 "$GMT_CLI" growth leak.gmt >g.txt || fail "growth"
grep -q "tensors (PyTorch's own history): LEAK: +1.00 MiB per iteration" g.txt || fail "growth: $(grep tensors g.txt)"
"$GMT_CLI" growth --json "$TESTS_DIR/golden/leak.gmt" | grep -q '"tensors"' && fail "growth: a key without the history"

# fragmentation: PyTorch's blocks at its OOM: the cache had given back its
# empty segments (the OOM path), so every free byte sits in a segment that
# holds a tensor; reserved = the weights' 12 MiB + three 20 MiB segments
"$GMT_CLI" fragmentation --json oom.gmt >f.json || fail "fragmentation --json"
fb() { PYTHONPATH= json f.json "d['traces'][0]['devices'][0]['framework_blocks']['at_first_oom']['$1']"; }
expect_eq "fragmentation: reserved at the OOM" "$(fb reserved_bytes)" $((72 * 1048576))
expect_eq "fragmentation: reason" "$(fb reason)" oom
expect_eq "fragmentation: free = reserved - blocks" "$(fb free_bytes)" $(($(fb reserved_bytes) - $(fb allocated_bytes)))
expect_eq "fragmentation: all free is split" "$(fb inactive_split_bytes)" "$(fb free_bytes)"
expect_eq "fragmentation: empty segments" "$(fb empty_segments)" 0
[ "$(fb largest_free_block)" -lt "$(fb free_bytes)" ] || fail "fragmentation: the largest free block"
COLUMNS=200 "$GMT_CLI" fragmentation oom.gmt >f.txt || fail "fragmentation"
grep -q "PyTorch's blocks (its own snapshot at its OOM" f.txt || fail "fragmentation: $(cat f.txt)"
grep -q "largest free block .*: a request above it needs a new segment" f.txt || fail "fragmentation: largest"

# oom: the OOM's snapshot holds the oom entry; the exit's adds nothing twice
grep -q 'FWSNAP .* seq 1 reason oom ' d.oom || fail "oom: no snapshot at the OOM"
grep -q 'FWSNAP .* seq 2 reason exit ' d.oom || fail "oom: no snapshot at exit"
expect_eq "oom: oom entries" "$(entries oom oom)" 1
grep -qE '^ +#[0-9]+ oom device_free [0-9]+ .* size 4294967296 ' d.oom || fail "oom: the entry's figures"
expect_eq "oom: alloc entries" "$(entries oom alloc)" 241
grep -q 'FWSEG seq 2 ' d.oom || fail "oom: no segments at exit"
# flamegraph --at oom --tensors: the lines holding memory when the 4 GiB
# request failed: the 30 kept tensors and the weights, beside the cache
"$GMT_CLI" flamegraph --at oom --tensors --folded oom.gmt >fg-oom.txt || fail "flamegraph --at oom"
expect_eq "flamegraph --at oom: the kept tensors' line" \
	"$(awk '/^<module> \(history-train.py\);step \(history-train.py\) [0-9]+$/ {print $NF}' fg-oom.txt)" $((30 * 1052672))
expect_eq "flamegraph --at oom: the weights' line" \
	"$(awk '/^<module> \(history-train.py\) [0-9]+$/ {print $NF}' fg-oom.txt)" 12582912
rc=0
"$GMT_CLI" flamegraph --at oom leak.gmt >/dev/null 2>err.fg-leak || rc=$?
expect_eq "flamegraph --at oom without an OOM: exit 2" "$rc" 2
grep -q "no device allocation failed in the trace" err.fg-leak || fail "flamegraph --at oom: $(cat err.fg-leak)"

# own: the program's max_entries 50 wins (bound unknown: 0), its turning
# the history off is preceded by a snapshot, flagged where entries dropped
grep -q 'FWSNAP .* seq 1 reason change .* max_entries 0 ' d.own || fail "own: no snapshot before the change: $(grep FWSNAP d.own)"
grep -q 'FWTRACE seq 1 dev 0 flags 0x1 gap ' d.own || fail "own: the dropped entries are not flagged"
n=$(entries own '[a-z_]+')
[ "$n" -le 50 ] && [ "$n" -ge 40 ] || fail "own: $n entries, not the program's last 50"

# without the flag: nothing
run_case plain
! grep -q ' FWSNAP ' d.plain || fail "plain: history records without the flag"
# --history-entries N: the bound, and the flag implied
"$GMT_CLI" run -q --history-entries 100 -o "$PWD/b.gmt" -- "$py" "$prog" leak >/dev/null 2>err.b ||
	fail "--history-entries: $(cat err.b)"
"$GMT_CLI" dump b.gmt >d.b
grep -q 'FWSNAP .* max_entries 100 settings' d.b || fail "--history-entries: the bound"
grep -q 'FWTRACE seq 1 dev 0 flags 0x1 gap ' d.b || fail "--history-entries: a full history is flagged"
expect_eq "--history-entries: entries" "$(grep -cE '^ +#[0-9]+ ' d.b)" 100
COLUMNS=400 "$GMT_CLI" top --tensors b.gmt >top-b.txt || fail "top --tensors b.gmt"
grep -q "note: .*b.gmt: PyTorch's history begins at .*: the tensors' total and calls count from there" top-b.txt ||
	fail "top --tensors: a late history not said: $(cat top-b.txt)"

# the cudaMallocAsync backend keeps no history: said once, the program unchanged
export PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
run_case leak --framework-history
unset PYTORCH_CUDA_ALLOC_CONF
diff plain.leak out.leak || fail "async: output changed"
grep -q 'FWSNAP .* reason requested source "torch" .* flags 0x0 .* settings 1' d.leak || fail "async: $(grep FWSNAP d.leak)"
grep -q '"backend" "cudaMallocAsync"' d.leak || fail "async: the backend is not named"
! grep -q ' FWTRACE ' d.leak || fail "async: entries"
echo ok
