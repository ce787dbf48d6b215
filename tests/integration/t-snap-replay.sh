#!/usr/bin/env bash
# replay and whatif: a PyTorch allocator history through the caching
# allocator's model. The stand-in snapshots (tests/python/snapgen.py) follow
# the rules, so the model makes every choice the allocator made; histories
# of the stand-in torch's own allocator (tests/python/standins/torch, its
# rules written apart from model/torchalloc.c, by address) through
# `run --framework-history` too. whatif sets the recorded settings against
# asked ones; usage and input errors have their exit codes.
. "$(dirname "$0")/lib.sh"
G=$GMT_CLI
GEN=$TESTS_DIR/python/snapgen.py
command -v python3 >/dev/null || skip "python3 is needed to make the pickles"
json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

# 1. a stand-in snapshot: every choice the allocator's, the peak exact
python3 "$GEN" s.pickle --steps 20 || fail "snapgen"
"$G" replay s.pickle >o || fail "replay: $(cat o)"
grep -q "device 0: 43 allocations; the model made the allocator's choice in 43 (100.00%)" o ||
	fail "replay: $(head -5 o)"
grep -q "reserved peak: the model 62.0 MiB, recorded 62.0 MiB (exact)" o || fail "replay peak: $(cat o)"
grep -q "no divergence" o || fail "replay: a divergence: $(cat o)"
"$G" replay --json s.pickle >r.json || fail "replay --json"
expect_eq "fidelity" "$(json r.json 'd["devices"][0]["fidelity"]')" 1.0
expect_eq "new segments chosen" "$(json r.json 'd["devices"][0]["same_new_segment"]')" 3
# the snapshot's end, as _memory_viz.py stats sums it (t-snap-memviz runs it)
python3 - s.pickle r.json <<'PY' || fail "replay's end figures differ from the pickle's"
import json, pickle, sys
snap, ours = pickle.load(open(sys.argv[1], "rb")), json.load(open(sys.argv[2]))["devices"][0]["end"]
blocks = [b for s in snap["segments"] for b in s["blocks"]]
want = {"segments": len(snap["segments"]),
        "reserved_bytes": sum(s["total_size"] for s in snap["segments"]),
        "allocated_bytes": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
        "requested_bytes": sum(b["requested_size"] for b in blocks if b["state"] == "active_allocated"),
        "pending_free_bytes": sum(b["size"] for b in blocks if b["state"] == "active_pending_free"),
        "inactive_bytes": sum(b["size"] for b in blocks if b["state"] == "inactive")}
sys.exit(0 if want == ours else print(want, ours) or 1)
PY
grep -q "at the snapshot: 3 segments, 62.0 MiB reserved, 42.0 MiB asked by live tensors, 20.0 MiB free" o ||
	fail "replay's end line: $(tail -2 o)"
# the same from the imported trace
"$G" import s.pickle -o s.gmt || fail "import"
"$G" replay --json s.gmt | sed 's/s\.gmt/S/' >t.json
sed 's/s\.pickle/S/' r.json | cmp -s - t.json || fail "replay of the trace differs from the pickle's"

# 1a. segment_allocs ahead of their allocs (a reordered history): the
# segment no alloc took at once is still reserved: the recorded peak is the
# snapshot's 62 MiB, not 60 (the 2 MiB one was lost before)
python3 - <<'PY' || fail "reorder the pickle"
import pickle
d = pickle.load(open("s.pickle", "rb"))
tr = d["device_traces"][0]
assert [e["action"] for e in tr[:3]] == ["segment_alloc", "alloc", "segment_alloc"]
tr[1], tr[2] = tr[2], tr[1]
pickle.dump(d, open("ro.pickle", "wb"))
PY
"$G" replay ro.pickle >o || fail "replay ro: $(cat o)"
grep -q "reserved peak: the model 62.0 MiB, recorded 62.0 MiB (exact)" o ||
	fail "reordered segments: $(cat o)"
grep -q "choice in 43 (100.00%)" o || fail "reordered segments: fidelity $(cat o)"

# 1b. an allocator that chose otherwise: the second step's 4 MiB tensor put
# 1 MiB into the free block, not at its start: the first divergence, named
python3 - <<'PY' || fail "edit the pickle"
import pickle
d = pickle.load(open("s.pickle", "rb"))
tr = d["device_traces"][0]
allocs = [i for i, e in enumerate(tr) if e["action"] == "alloc" and e["size"] == 4 << 20]
old = tr[allocs[1]]["addr"]
for e in tr[allocs[1]:]:
    if e["addr"] == old and e["action"] != "alloc" or e is tr[allocs[1]]:
        e["addr"] = old + (1 << 20)
    if e["action"] == "free_completed" and e["addr"] == old + (1 << 20):
        break
pickle.dump(d, open("x.pickle", "wb"))
PY
"$G" replay x.pickle >o || fail "replay x: $(cat o)"
grep -q "first divergence: entry 12, 4.00 MiB requested on stream 0 at step (/home/user/train.py:57)" o ||
	fail "no divergence named: $(cat o)"
grep -q "the model: the cached block at 0x7f0006fffe00; the allocator: the cached block at 0x7f00070ffe00" o ||
	fail "the choices: $(cat o)"

# 2. a wrapped history: the state before it rebuilt, still exact
python3 "$GEN" w.pickle --steps 20 --wrap 4 || fail "snapgen --wrap"
"$G" replay w.pickle >o || fail "replay wrapped"
grep -q "the history starts mid-run: 2 segments (42.0 MiB) and 2 blocks" o || fail "wrapped: $(cat o)"
grep -q "(100.00%)" o || fail "wrapped: not every choice: $(cat o)"

# 3. the stand-in torch's own allocator, recorded by run --framework-history
py=$(python3 -c 'import sys; print(sys.executable)')
LD_LIBRARY_PATH=$SIM_DIR SIMCUDA_CAPACITY=1G GPUMEMTRACE_SAMPLE_MS=0 \
	PYTHONPATH=$TESTS_DIR/python/standins:$TESTS_DIR/python/usersite \
	"$G" run -q --framework-history -o "$PWD/h.gmt" -- "$py" "$TESTS_DIR/python/history-train.py" \
	leak >/dev/null 2>err || fail "run --framework-history: $(tail -1 err)"
"$G" replay --json h.gmt >h.json || fail "replay of a recorded history: $(cat h.json)"
expect_eq "recorded history: fidelity" "$(json h.json 'd["devices"][0]["fidelity"]')" 1.0
expect_eq "recorded history: order" "$(json h.json 'd["order"]')" either

# 4. whatif: expandable segments on a history that splits its segments
"$G" whatif s.pickle --alloc-conf expandable_segments:True >o || fail "whatif: $(cat o)"
grep -q "asked: *expandable_segments:True" o || fail "whatif: $(head -4 o)"
grep -q "reserved peak *62.0 MiB" o || fail "whatif: no recorded peak: $(cat o)"
"$G" whatif --json s.pickle --alloc-conf max_split_size_mb:30 --device-size 1GiB >w.json ||
	fail "whatif --json"
expect_eq "whatif device size" "$(json w.json 'd["devices"][0]["device_size"]')" 1073741824
rc=0; "$G" whatif s.pickle >o 2>e || rc=$?
expect_eq "whatif without a question" "$rc" 2
rc=0; "$G" whatif s.pickle --alloc-conf expandable_segments:maybe 2>e || rc=$?
expect_eq "whatif bad conf" "$rc" 2
grep -q "expandable_segments: 'maybe' is not True or False" e || fail "bad conf: $(cat e)"
# a misspelt key is refused, never read as the defaults (a new user's
# expandable_segment:True showed defaults against defaults); PyTorch's keys
# the model passes over are accepted
rc=0; "$G" whatif s.pickle --alloc-conf expandable_segment:True 2>e || rc=$?
expect_eq "whatif misspelt key" "$rc" 2
grep -q "'expandable_segment' is not one of PyTorch's allocator options" e || fail "misspelt key: $(cat e)"
"$G" whatif s.pickle --alloc-conf 'backend:native,roundup_power2_divisions:[64:8,>:1],expandable_segments:True' >o ||
	fail "whatif with PyTorch's other keys: $(cat o)"
rc=0; "$G" whatif s.pickle --fraction 1.5 2>e || rc=$?
expect_eq "whatif bad fraction" "$rc" 2

# 4b. an OOM in the history: replay names it, says whether the run went on,
# and whether the model (on the device size the oom entry implies) refuses
# it too; on a larger device it does not: said, not hidden behind 100%
python3 "$GEN" oom.pickle --oom || fail "snapgen --oom"
"$G" replay oom.pickle >o || fail "replay oom: $(cat o)"
grep -q "OUT OF MEMORY: the allocator refused 1 request; the first, entry 23: 128 MiB asked on stream 0 with 3.00 MiB free on the device, at step (/home/user/train.py:57)" o ||
	fail "replay: the oom not named: $(cat o)"
grep -q "the program went on (caught it): 1 allocation after the last" o || fail "oom, caught: $(cat o)"
grep -q "the model, on a 65.0 MiB device (estimated from the oom entry): refuses it too: reproduced" o ||
	fail "oom, reproduced: $(cat o)"
"$G" replay --device-size 1GiB oom.pickle >o || fail "replay oom 1GiB"
grep -q "serves it: NOT reproduced" o || fail "oom on 1 GiB: $(cat o)"
"$G" replay --json oom.pickle >o.json || fail "replay --json oom"
expect_eq "oom json request" "$(json o.json 'd["devices"][0]["recorded"]["first_oom"]["request_bytes"]')" 134217728
expect_eq "oom json reproduced" "$(json o.json 'd["devices"][0]["model"]["ooms_recorded_too"]')" 1
python3 - <<'PY' || fail "cut the pickle at its oom"
import pickle
d = pickle.load(open("oom.pickle", "rb"))
tr = d["device_traces"][0]
del tr[[i for i, e in enumerate(tr) if e["action"] == "oom"][0] + 1:]
pickle.dump(d, open("oomend.pickle", "wb"))
PY
"$G" replay oomend.pickle >o || fail "replay oomend"
grep -q "the history ends in it" o || fail "oom at the end: $(cat o)"

# 4c. a device with segments but no entries: its end state is listed (the
# totals are memviz's, every device's segments), no 0% fidelity for it
python3 "$GEN" two.pickle --devices 2 || fail "snapgen --devices 2"
python3 - <<'PY' || fail "empty device 1's history"
import pickle
d = pickle.load(open("two.pickle", "rb"))
d["device_traces"][1] = []
pickle.dump(d, open("two1.pickle", "wb"))
PY
"$G" replay two1.pickle >o || fail "replay two1: $(cat o)"
grep -q "device 1: no history entries (none recorded on it, or its ring kept none): nothing to replay" o ||
	fail "device without entries: $(cat o)"
expect_eq "device 1's segments listed" "$(grep -c 'at the snapshot: 3 segments, 62.0 MiB reserved' o)" 2
grep -q "device 1: 0 allocations" o && fail "device without entries: a 0% fidelity: $(cat o)"

# 5. no history: a driver-only trace, an end-state-only snapshot
python3 - <<'PY'
import pickle
pickle.dump({"segments": [], "device_traces": [], "allocator_settings": {}}, open("e.pickle", "wb"))
PY
rc=0; "$G" replay e.pickle 2>e || rc=$?
expect_eq "replay without history" "$rc" 3
grep -q "no allocator history" e || fail "no history: $(cat e)"
exit 0
