#!/usr/bin/env bash
# PyTorch memory snapshots (torch.cuda.memory._dump_snapshot's pickle) are
# read by every command, recognised by content: stand-in snapshots pickled
# by Python's own pickle at protocols 2 to 5 read alike (a wrapped history,
# two devices, expandable segments, an oom entry, no time_us, annotations);
# `import` writes the same trace, 0600; every hostile pickle gets one line
# and exit 4, and nothing from it runs; C++ frames leave the sites the
# user's Python lines.
. "$(dirname "$0")/lib.sh"
G=$GMT_CLI
GEN=$TESTS_DIR/python/snapgen.py
command -v python3 >/dev/null || skip "python3 is needed to make the pickles"

# 1. protocols 2-5: the same summary, the same segments
for p in 2 3 4 5; do
	python3 "$GEN" "s$p.pickle" --protocol $p || fail "snapgen protocol $p"
	"$G" summary --json "s$p.pickle" >"s$p.json" || fail "summary of protocol $p"
	sed -i "s/s$p\\.pickle/S.pickle/g" "s$p.json"
done
for p in 2 3 5; do
	cmp -s s4.json "s$p.json" || fail "protocol $p reads unlike protocol 4: $(diff s4.json s$p.json | head -5)"
done
"$G" dump s2.pickle >d
grep -q 'NOTE info "PyTorch memory snapshot (pickle protocol 2): 3 segments at its end, 24 history entries' d ||
	fail "no import note: $(grep NOTE d)"
expect_eq "segments as cudaMalloc" "$(grep -c 'EVENT .* cudaMalloc dev 0' d)" 3
grep -q 'PYFRAME [0-9]* function "forward" file "/home/user/model.py" line 42' d || fail "no model.py frame"
# the site is the user's line, past the installed package's frame
"$G" top s4.pickle | grep -q "forward (/home/user/model.py:42)" || fail "top: no model.py:42 site"
grep -q 'PROCESS .*"PYTORCH_CUDA_ALLOC_CONF"' d && fail "an empty allocator conf recorded"
# the history itself: one snapshot (FWSNAP, reason import), its entries, its segments
grep -q 'FWSNAP .* seq 1 reason import source "torch" .* flags 0x3 history python-stacks' d ||
	fail "no FWSNAP: $(grep FWSNAP d)"
expect_eq "FWTRACE entries" "$(grep 'FWTRACE seq 1 dev 0' d | sed 's/.*count //')" 24
expect_eq "FWSEG records" "$(grep -c 'FWSEG seq 1 dev 0' d)" 3
grep -q '"expandable_segments" "False"' d || fail "FWSNAP settings: $(grep -A8 FWSNAP d)"

# 2. a wrapped history: the segments made before its window are rebuilt
python3 "$GEN" w.pickle --wrap 4 || fail "snapgen --wrap"
"$G" dump w.pickle >d
grep -q 'NOTE warning "the history starts mid-run .*: 2 segments (42.0 MiB) were reserved before its first entry' d ||
	fail "wrapped: no mid-run note: $(grep NOTE d)"
"$G" summary w.pickle >o
grep -q "62.0 MiB" o || fail "wrapped: the peak lacks the rebuilt segments: $(grep -A2 'peak at' o)"
grep -q "history starts mid-run" o || fail "summary does not show the mid-run warning"

# 3. two devices, merged in time order; no time_us; expandable; an oom entry
python3 "$GEN" two.pickle --devices 2 || fail "snapgen --devices"
"$G" summary two.pickle | grep -cE '^  [01] ' | grep -q 2 || fail "two devices: $("$G" summary two.pickle | head -12)"
python3 "$GEN" nt.pickle --no-time || fail "snapgen --no-time"
"$G" dump nt.pickle | grep -q 'NOTE warning "the snapshot.s entries carry no time_us' || fail "no time: no note"
python3 "$GEN" x.pickle --expandable --oom || fail "snapgen --expandable"
"$G" dump x.pickle >d
expect_eq "expandable: cuMemCreate" "$(grep -c 'EVENT .* cuMemCreate' d)" 3
expect_eq "expandable: cuMemMap" "$(grep -c 'EVENT .* cuMemMap' d)" 3
grep -q '"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"' d || fail "the allocator conf is not the run's"
"$G" summary x.pickle | grep -q "VMM physical (cuMemCreate) *62.0 MiB" || fail "expandable: not VMM bytes"
# the oom entry: oom and explain name it (a fraction OOM makes no driver
# call: the history is the only witness); the program went on: caught
"$G" oom x.pickle >o || fail "oom on a pickle: $(cat o)"
grep -q "verdict: caught" o || fail "oom on a pickle: $(head -5 o)"
grep -q "PyTorch raised an out-of-memory error for 128 MiB on device 0 (no driver call failed)" o ||
	fail "oom on a pickle: the oom entry not named: $(cat o)"
grep -q "an oom entry of the allocator's history, which goes on after it" o || fail "oom: $(cat o)"
grep -q "asked 128 MiB, device free 3.00 MiB" o || fail "oom figures: $(cat o)"
# the history ending in it, the device with room: the fraction's limit
python3 - <<'PY' || fail "make the fraction oom"
import pickle
d = pickle.load(open("x.pickle", "rb"))
tr = d["device_traces"][0]
k = [i for i, e in enumerate(tr) if e["action"] == "oom"][0]
del tr[k + 1:]
tr[k]["device_free"] = 10 << 30
pickle.dump(d, open("xf.pickle", "wb"))
PY
"$G" oom xf.pickle >o || fail "oom xf: $(cat o)"
grep -q "verdict: limit" o || fail "fraction oom: $(head -8 o)"
grep -q "(torch.cuda.set_per_process_memory_fraction) does so; 62.0 MiB reserved then: the limit was below 190 MiB" o || fail "fraction oom: $(cat o)"
"$G" explain xf.pickle >o || fail "explain xf"
grep -q "\[oom-limit, device 0\]" o || fail "explain: the fraction oom: $(head -20 o)"
grep -q "this trace cannot show it" o && fail "explain: a history's OOMs said invisible: $(cat o)"
python3 "$GEN" a.pickle --annotations || fail "snapgen --annotations"
expect_eq "annotations as ranges" "$("$G" dump a.pickle | grep -c 'RANGE .*start .*"\(forward\|backward\)"')" 2

# torch 2.14's user metadata (_set_memory_metadata: a range while it holds,
# a phase) and annotate entries (_annotate_tensor: a mark naming the tensor)
python3 - <<'PY' || fail "make the metadata pickle"
import pickle
d = pickle.load(open("s4.pickle", "rb"))
tr = d["device_traces"][0]
n = len(tr)
for i, e in enumerate(tr):
    e["user_metadata"] = "warmup" if i < n // 2 else "train step"
a = [e for e in tr if e["action"] == "alloc"][1]
tr.insert(n - 1, {"action": "annotate", "addr": a["addr"], "size": 0, "stream": 0,
                  "time_us": tr[n - 2]["time_us"] + 1, "user_metadata": "packed for backward"})
pickle.dump(d, open("md.pickle", "wb"))
PY
"$G" dump md.pickle >d || fail "dump md"
grep -q 'RANGE .* start id 1 source api text "warmup"' d || fail "metadata range: $(grep RANGE d)"
grep -q 'RANGE .* start id 2 source api text "train step"' d || fail "metadata change: $(grep RANGE d)"
expect_eq "metadata ranges closed" "$(grep -c 'RANGE .* end id' d)" 2
grep -q 'RANGE .* mark id 0 source api text "annotate 0x7f0002200000: packed for backward"' d ||
	fail "annotate mark: $(grep RANGE d)"
"$G" summary md.pickle | grep -qE '^  warmup +3 +62.0 MiB' || fail "metadata phase: $("$G" summary md.pickle | grep -A4 ^phases)"
"$G" export --format chrome-json -o md.json md.pickle || fail "export md"
grep -q '"annotate 0x7f0002200000: packed for backward"' md.json || fail "annotate not in the export"

# 4. import: the same trace, 0600, written whole
"$G" import s4.pickle -o s4.gmt || fail "import"
expect_eq "import mode" "$(stat -c %a s4.gmt)" 600
"$G" summary --json s4.gmt | sed 's/s4\.gmt/S/g; s/s4\.pickle/S/g' >i.json
"$G" summary --json s4.pickle | sed 's/s4\.pickle/S/g' >p.json
cmp -s i.json p.json || fail "import differs from reading the pickle: $(diff i.json p.json | head -5)"
# identical steps compress past the reader's expansion limit (256x):
# import stores such chunks uncompressed, so its trace reads whole
python3 "$GEN" steps.pickle --steps 20000 || fail "snapgen --steps"
"$G" import steps.pickle -o steps.gmt || fail "import steps"
"$G" summary steps.gmt >s.txt 2>&1 || fail "summary of the imported steps: $(tail -2 s.txt)"
grep -q "format 5, complete" s.txt || fail "imported steps: $(head -1 s.txt)"
rc=0; "$G" import s4.gmt -o x.gmt 2>e || rc=$?
expect_eq "import of a trace, exit" "$rc" 4
grep -q "not a PyTorch memory snapshot" e || fail "import of a trace: $(cat e)"
rc=0; "$G" import s4.pickle 2>e || rc=$?
expect_eq "import without -o" "$rc" 2

# 5. hostile pickles: one line, exit 4, nothing imported or run
python3 - <<'EOF'
import pickle, collections
def w(name, data): open(name, "wb").write(data)
# every code opcode, and the data opcodes a snapshot never has
w("global.pickle", b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.")
w("stack_global.pickle", pickle.dumps(collections.OrderedDict(a=1), protocol=4))
w("complex.pickle", pickle.dumps(complex(1, 2), protocol=2))
w("reduce.pickle", b"\x80\x02N)R.")
for name, op in [("build", b"b"), ("inst", b"i"), ("obj", b"o"), ("newobj", b"\x81"),
                 ("newobj_ex", b"\x92"), ("persid", b"P"), ("binpersid", b"Q"),
                 ("ext1", b"\x82"), ("ext2", b"\x83"), ("ext4", b"\x84"),
                 ("empty_set", b"\x8f"), ("next_buffer", b"\x97")]:
    w(name + ".pickle", b"\x80\x04N" + op + b".")
x = []
for i in range(100):
    x = [x]
w("deep.pickle", pickle.dumps(x, protocol=4))
w("huge.pickle", b"\x80\x04\x8d" + (1 << 40).to_bytes(8, "little") + b"abc.")
w("memo.pickle", b"\x80\x02h\x05.")
w("cycle.pickle", b"\x80\x02]q\x00h\x00a.")
s = open("s4.pickle", "rb").read()
w("truncated.pickle", s[: len(s) // 2])
w("proto6.pickle", b"\x80\x06N.")
w("notsnap.pickle", pickle.dumps({"a": [1, 2, 3]}, protocol=4))
w("badseg.pickle", pickle.dumps({"segments": [{"device": 0}], "device_traces": []}, protocol=4))
# a history on 100 devices: each would be another read of the whole file
w("devices.pickle", pickle.dumps({"segments": [], "device_traces": [
    [{"action": "alloc", "addr": 1, "size": 1, "stream": 0}] for _ in range(100)]}, protocol=4))
EOF
for f in global stack_global complex reduce build inst obj newobj newobj_ex persid binpersid ext1 ext2 ext4 \
	empty_set next_buffer deep huge memo cycle truncated proto6 notsnap badseg devices; do
	rc=0; "$G" summary "$f.pickle" >o 2>e || rc=$?
	expect_eq "$f: exit" "$rc" 4
	expect_eq "$f: one line" "$(wc -l <e)" 1
	[ -s o ] && fail "$f: output from a refused pickle: $(head -3 o)"
done
grep -q "refused pickle opcode REDUCE (0x52)" <("$G" dump reduce.pickle 2>&1) || fail "reduce: the opcode not named"
grep -q "refused pickle opcode GLOBAL (0x63)" <("$G" dump global.pickle 2>&1) || fail "global: the opcode not named"
grep -q "nested deeper than 64" <("$G" dump deep.pickle 2>&1) || fail "deep: $("$G" dump deep.pickle 2>&1)"
grep -q "truncated pickle" <("$G" dump truncated.pickle 2>&1) || fail "truncated: $("$G" dump truncated.pickle 2>&1)"
grep -q "memo index 5 out of range" <("$G" dump memo.pickle 2>&1) || fail "memo: $("$G" dump memo.pickle 2>&1)"
grep -q "holds no 'segments' or 'device_traces'" <("$G" dump notsnap.pickle 2>&1) || fail "not a snapshot"
grep -q "without an integer 'address'" <("$G" dump badseg.pickle 2>&1) || fail "bad segment"
# the memory budget: a snapshot larger than it is refused, not grown into
python3 "$GEN" big.pickle --steps 20000 --distinct-frames || fail "snapgen --steps"
rc=0; GPUMEMTRACE_PICKLE_MAX_MB=1 "$G" summary big.pickle >o 2>e || rc=$?
expect_eq "budget: exit" "$rc" 4
grep -q "more than 1 MiB held at once (GPUMEMTRACE_PICKLE_MAX_MB)" e || fail "budget: $(cat e)"
"$G" summary big.pickle >/dev/null || fail "big.pickle within the default budget"

# C++ frames (stacks="all"), as real 2.x snapshots hold them: the allocator's
# own frames first, some with no file (""), the interpreter's C between the
# Python frames. The sites are the same Python lines as without them (the
# importer once took a frame without a file for a Python one, and every site
# read NativeCachingAllocator::malloc).
python3 "$GEN" py.pickle --steps 5 || fail "snapgen"
python3 "$GEN" cpp.pickle --steps 5 --cpp-frames || fail "snapgen --cpp-frames"
sites() { "$G" top --json "$1" | python3 -c 'import json,sys
for r in json.load(sys.stdin)["devices"][0]["rows"]: print(r["peak_bytes"], r["key"], r["site_rule"])'; }
sites py.pickle >py.sites || fail "top py.pickle"
sites cpp.pickle >cpp.sites || fail "top cpp.pickle"
grep -q "forward (/home/user/model.py:42)" cpp.sites || fail "C++ frames: $(cat cpp.sites)"
cmp -s py.sites cpp.sites || fail "C++ frames change the sites: $(diff py.sites cpp.sites)"
exit 0
