#!/usr/bin/env bash
# An OOM on a PyTorch allocator history without the helper's counters (the
# emulator's `run --framework-history` trace, an imported snapshot) is
# judged on the history's own evidence, not "rerun with
# --framework-counters": the snapshot taken at the OOM gives free in the
# cache (inactive blocks), the largest free block and the request, so the
# emulator's fragmented cache reads `fragmentation` with the EMU figures at
# the OOM; a snapshot pickle's oom entry (no failed call at all) is an
# error with the history's figures replayed to it (the program went on after
# it: caught).
. "$(dirname "$0")/lib.sh"
G=$GMT_CLI
T=$TESTS_DIR/verdicts/traces/torch.oom-fragmented-history.gmt

"$G" oom --json "$T" >o.json || fail "oom --json"
expect_eq "verdict" "$(json o.json 'd["traces"][0]["verdict"]')" fragmentation
expect_eq "one error" "$(json o.json 'd["traces"][0]["ooms_total"]')" 1
expect_eq "how" "$(json o.json 'd["traces"][0]["ooms"][1]["framework"]["how"]')" history-blocks
# EMU at the OOM: reserved 910163968, allocated 149678080 (traces/*.txt)
f='d["traces"][0]["ooms"][1]["framework"]["figures"]'
expect_eq "reserved" "$(json o.json "$f[\"pool_bytes\"]")" 910163968
expect_eq "allocated" "$(json o.json "$f[\"in_use_bytes\"]")" 149678080
expect_eq "free in the cache" "$(json o.json "$f[\"pool_free_bytes\"]")" 760485888
largest=$(json o.json "$f[\"largest_free_block_bytes\"]")
[ "$largest" -lt 314572800 ] || fail "largest free block $largest, not below the 300 MiB asked"
"$G" explain "$T" >x.txt || fail "explain"
grep -q "^1\. \[oom-fragmentation, device 0\]" x.txt || fail "explain: $(head -12 x.txt)"
grep -q "framework-counters" <(sed -n '/^1\./,/^2\./p' x.txt) &&
	fail "explain still asks for --framework-counters: $(sed -n '/^1\./,/^2\./p' x.txt)"

command -v python3 >/dev/null || skip "python3 is needed to make the pickle"
python3 "$TESTS_DIR/python/snapgen.py" oom.pickle --oom || fail "snapgen --oom"
"$G" oom --json oom.pickle >p.json || fail "oom --json on a pickle"
expect_eq "pickle: verdict" "$(json p.json 'd["traces"][0]["verdict"]')" caught
f='d["traces"][0]["ooms"][0]["framework"]'
expect_eq "pickle: how" "$(json p.json "$f[\"how\"]")" history
# snapgen: 40 MiB + 20 MiB + 2 MiB of segments, 40 MiB - 300 in tensors
# at the entry (the activations freed); the entry asks 128 MiB, 3 MiB free
expect_eq "pickle: asked" "$(json p.json "$f[\"figures\"][\"request_bytes\"]")" 134217728
expect_eq "pickle: device free" "$(json p.json "$f[\"figures\"][\"free_bytes\"]")" 3145728
expect_eq "pickle: reserved" "$(json p.json "$f[\"figures\"][\"pool_bytes\"]")" 65011712
"$G" oom oom.pickle | grep -q "next: PyTorch's cache may hold" &&
	fail "the working set from the history still gets the cache-may-hold note"
exit 0
