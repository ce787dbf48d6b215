#!/usr/bin/env bash
# What a new user would misread, on the verdict corpus and the H100 traces:
# leaks of a framework's cache or pool say so; check notes (and with
# --fail-on-oom fails) a run that died of OOM, and notes a torn trace
# (exit 3 without --allow-lost: partial data);
# fragmentation's cache sentence follows the allocator mode and its "end"
# is the trace's end; oom drops a figure larger than the device's use and
# says what to do under a cache; summary's failed calls carry oom's case;
# one time for a leak group allocated at one printed time; plot's empty
# window names the trace's length.
. "$(dirname "$0")/lib.sh"
V=$TESTS_DIR/verdicts/traces
H=$TESTS_DIR/real/2026-11-22-h100
G=$GMT_CLI

# 1. leaks: the cache's segments, the preallocated pool; none without a cache
"$G" leaks "$V/torch.clean.gmt" >o
grep -q "^note: these are PyTorch's caching allocator's segments, held until exit, not necessarily leaked tensors; see \`gpumemtrace growth\`" o ||
	fail "leaks torch.clean: no cache note: $(head -4 o)"
"$G" leaks "$V/jax.clean.gmt" | grep -q "^note: these are JAX's preallocated pool" || fail "leaks jax.clean: no pool note"
"$G" leaks "$V/torch-nocache.clean.gmt" | grep -q "^note:" && fail "leaks torch-nocache: a cache note without a cache"
"$G" leaks --json "$V/torch.clean.gmt" | grep -q '"held_by": "PyTorch' || fail "leaks --json: no held_by"

# 2. check: a run that died of OOM passes its peak, with a note; --fail-on-oom fails it
rc=0; "$G" check --max-peak 10GiB "$V/torch.oom-exhaust.gmt" >o || rc=$?
expect_eq "check oom, exit" "$rc" 0
grep -q "^note: .*torch.oom-exhaust.gmt: 1 out-of-memory error not recovered by retry (this-process)" o ||
	fail "check: no OOM note: $(cat o)"
rc=0; "$G" check --fail-on-oom "$V/torch.oom-exhaust.gmt" >o || rc=$?
expect_eq "check --fail-on-oom, exit" "$rc" 1
grep -q "^FAIL  no-oom" o || fail "no no-oom line: $(cat o)"
rc=0; "$G" check --fail-on-oom "$V/torch.oom-recovered.gmt" >o || rc=$?
expect_eq "check --fail-on-oom, recovered" "$rc" 0
grep -q "^note:" o && fail "a recovered OOM noted: $(cat o)"
"$G" check --fail-on-oom --json "$V/torch.oom-exhaust.gmt" >o || true
grep -q '"unrecovered_ooms": 1, "oom_case": "this-process"' o ||
	fail "check --json: no unrecovered_ooms"
f=$V/torch.clean.gmt
# half the file: torn among the events (the last chunk, after a complete
# trailer, holds only the symbols: a trace cut there still reads whole)
head -c $(($(stat -c %s "$f") / 2)) "$f" >torn.gmt
# partial data gets no verdict (exit 3) unless --allow-lost
rc=0; "$G" check --max-peak 10GiB torn.gmt >o 2>/dev/null || rc=$?
expect_eq "torn, exit" "$rc" 3
rc=0; "$G" check --allow-lost --max-peak 10GiB torn.gmt >o 2>/dev/null || rc=$?
expect_eq "torn --allow-lost, exit" "$rc" 0
grep -q "^note: torn.gmt: incomplete trace" o || fail "no incomplete-trace note: $(cat o)"
rc=0; "$G" check --device 5 --max-peak 1GiB "$f" 2>e || rc=$?
expect_eq "check --device 5" "$rc" 2
grep -q "no device 5 in the trace (its devices: 0)$" e || fail "check --device 5: $(cat e)"

# 3. fragmentation: no promise of a missing option; the sentence follows the mode
for t in torch.clean torch-async.clean; do
	"$G" fragmentation "$V/$t.gmt" | tr '\n' ' ' | tr -s ' ' >"$t.o"
	grep -q "later --framework-counters" "$t.o" && fail "$t: a later option promised"
	grep -q "counters (gpumemtrace run --framework-counters) show it" "$t.o" || fail "$t: no counters line"
done
grep -q "under PyTorch's caching allocator, a tensor's free makes none" torch.clean.o || fail "torch.clean: $(cat torch.clean.o)"
grep -q "every free is a cudaFreeAsync" torch-async.clean.o || fail "torch-async: $(cat torch-async.clean.o)"
grep -q "freeing a tensor makes none\|tensor's free makes none" torch-async.clean.o && fail "torch-async: no driver call claimed"

# 4. one end: fragmentation's "at the end" is summary's duration
if [ -f "$H/torch-async.837.gmt" ]; then
	"$G" fragmentation "$H/torch-async.837.gmt" | grep -q "at the end (+14.542 s)" ||
		fail "fragmentation's end is not the trace's: $("$G" fragmentation "$H/torch-async.837.gmt" | grep 'at the end')"
	"$G" summary "$H/torch-async.837.gmt" | grep -q "^duration  14.542" || fail "summary's duration moved"
fi

# 5. oom: a figure above the device's use is named, not used; what to do next
"$G" oom "$V/torch.oom-fragmented.gmt" | tr '\n' ' ' | tr -s ' ' >o
grep -q "held 1.20 GiB per NVML" o && fail "oom: an impossible figure used: $(cat o)"
grep -q "NVML's per-process 1.20 GiB is more than the device's total: inconsistent, not used" o || fail "oom: not named: $(cat o)"
grep -q "would not fit even without them" o && fail "oom: old wording"
grep -q "next: PyTorch's cache .*\`gpumemtrace fragmentation\` .*expandable_segments:True.*max_split_size_mb" o ||
	fail "oom: no next step: $(cat o)"

# 7. summary: the failed calls carry oom's case
"$G" summary "$V/torch.oom-recovered.gmt" >o
expect_eq "recovered rows" "$(grep -c 'cudaErrorMemoryAllocation (2)  recovered-by-retry$' o)" 2
grep -q "\`gpumemtrace oom\` gives each one's figures" o || fail "summary: no oom pointer"

# 8. one time for a group whose first and last print alike; plot's trace length
if [ -f "$H/torch-async.837.gmt" ]; then
	"$G" leaks "$H/torch-async.837.gmt" >o
	grep -Eq '(\+[0-9.]+ [a-z]+)\.\.\1 ' o && fail "leaks: a time twice: $(grep -E '(\+[0-9.]+ [a-z]+)\.\.\1 ' o)"
	grep -q " +8.841 s  " o || fail "leaks: no single time: $(head -8 o)"
fi
rc=0; "$G" plot --from 20s "$f" >/dev/null 2>e || rc=$?
expect_eq "plot empty window" "$rc" 2
grep -qE "empty window: .* \(the trace lasts [0-9.]+ ms\)" e || fail "plot: $(cat e)"
echo ok
