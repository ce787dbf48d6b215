# gpumemtrace export: Perfetto's protobuf, Trace Event JSON, CSV and pprof,
# each checked against its format.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/eco-trace.sh"
eco_trace tr.gmt
"$GMT_CLI" export --format chrome-json tr.gmt -o tr.json || fail "chrome-json"
python3 - tr.json <<'PY' || fail "trace event format"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
phs = {}
for e in ev:
    assert e["ph"] in "BEbeiCMX", e
    assert isinstance(e["pid"], int)
    if e["ph"] != "M":
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
    if e["ph"] in "BEi":
        assert isinstance(e["tid"], int)
    if e["ph"] == "C":
        assert all(isinstance(v, (int, float)) for v in e["args"].values()), e
    phs.setdefault(e["ph"], []).append(e)
assert len(phs["B"]) == len(phs["E"]) == 48, (len(phs["B"]), len(phs["E"]))
names = {e["name"] for e in phs["B"]}
assert {"step 0", "forward", "backward", "optimizer"} <= names, names
mem = [e for e in phs["C"] if e["name"] == "GPU 0 memory"]
assert max(e["args"]["device"] for e in mem) == 33206304768, "peak"
assert set(mem[0]["args"]) == {"device", "stream_ordered", "vmm"}
assert any(e["name"] == "GPU 0 NVML process usage" for e in phs["C"])
ooms = [e for e in phs["i"] if e.get("cat") == "oom"]
assert len(ooms) == 1 and ooms[0]["args"]["size"] == 73400320000, ooms
assert any(e["name"] == "process_name" for e in phs["M"])
PY
"$GMT_CLI" export --format perfetto tr.gmt -o tr.pftrace || fail "perfetto"
rc=0; "$GMT_CLI" export --format perfetto tr.gmt >tr2.pftrace || rc=$?
expect_eq "perfetto to a redirected stdout" "$rc" 0
cmp -s tr.pftrace tr2.pftrace || fail "perfetto: -o and stdout differ"
if command -v protoc >/dev/null; then
	# decoded with the messages of Perfetto's schema it uses (field numbers
	# from its public protos): a field it does not know shows as a number
	protoc --decode_raw <tr.pftrace >/dev/null || fail "protoc --decode_raw"
	protoc --proto_path="$TESTS_DIR/eco" --decode=perfetto.protos.Trace \
		"$TESTS_DIR/eco/perfetto_trace.proto" <tr.pftrace >pf.txt || fail "protoc --decode"
	python3 - pf.txt tr.json <<'PY' || fail "perfetto content"
import json, re, sys
def parse(lines, i=0):
    """protoc's text format: a list of (key, value or nested list)."""
    out = []
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if line == "}":
            return out, i
        if line.endswith("{"):
            sub, i = parse(lines, i)
            out.append((line[:-1].strip(), sub))
        else:
            k, v = line.split(": ", 1)
            assert not k.isdigit(), "a field the schema does not have: " + line
            out.append((k, json.loads(v) if v.startswith('"') else v))
    return out, i
def get(m, k, d=None):
    return next((v for kk, v in m if kk == k), d)
packets = [v for k, v in parse(open(sys.argv[1]).read().splitlines())[0]]
assert all(get(p, "trusted_packet_sequence_id") == "1" for p in packets)
tracks, events = {}, []
for p in packets:
    td, te = get(p, "track_descriptor"), get(p, "track_event")
    assert (td is None) != (te is None), p
    if td is not None:
        uuid = get(td, "uuid")
        assert uuid not in tracks, "track described twice"
        tracks[uuid] = td
    else:
        # every event on a track described before it
        assert get(te, "track_uuid") in tracks, te
        events.append((int(get(p, "timestamp", "0")), te))
proc = [t for t in tracks.values() if get(t, "process")]
assert len(proc) == 1 and get(get(proc[0], "process"), "pid") == "4242", proc
pid_uuid = get(proc[0], "uuid")
name = lambda t: get(t, "name")
def kind(te): return get(te, "type")
begins = [te for ts, te in events if kind(te) == "TYPE_SLICE_BEGIN"]
ends = [te for ts, te in events if kind(te) == "TYPE_SLICE_END"]
assert len(begins) == len(ends) == 48, (len(begins), len(ends))
assert {"step 0", "forward", "backward", "optimizer"} <= {name(b) for b in begins}
for b in begins:  # phases on the thread's track
    assert get(get(tracks[get(b, "track_uuid")], "thread"), "pid") == "4242", b
def counter(track_name):
    t = [u for u, d in tracks.items() if name(d) == track_name]
    assert len(t) == 1, (track_name, [name(d) for d in tracks.values()])
    d = tracks[t[0]]
    assert get(get(d, "counter"), "unit") == "UNIT_SIZE_BYTES" and get(d, "parent_uuid") == pid_uuid
    return [(ts, int(get(te, "counter_value"))) for ts, te in events
            if get(te, "track_uuid") == t[0] and kind(te) == "TYPE_COUNTER"]
dev = counter("GPU 0 memory: cudaMalloc / cuMemAlloc")
assert max(v for ts, v in dev) == 33206304768, "peak"
assert counter("GPU 0 NVML process usage"), "NVML"
# only the kinds used have a track
assert not [d for d in tracks.values() if "VMM" in (name(d) or "")]
ooms = [te for ts, te in events if kind(te) == "TYPE_INSTANT" and get(te, "categories") == "oom"]
assert len(ooms) == 1, ooms
ann = {get(a, "name"): a for k, a in ooms[0] if k == "debug_annotations"}
assert get(ann["size"], "uint_value") == "73400320000", ann
assert get(ann["api"], "string_value") == "cudaMalloc", ann
# the same values at the same times as the JSON (microseconds, 3 decimals)
js = [e for e in json.load(open(sys.argv[2]))["traceEvents"]
      if e["ph"] == "C" and e["name"] == "GPU 0 memory"]
want, last = [], 0
for e in js:
    if e["args"]["device"] != last:
        want.append((round(e["ts"] * 1000), e["args"]["device"]))
        last = e["args"]["device"]
assert dev[0] == (0, 0) and dev[1:] == want, (dev[:4], want[:4])
PY
else
	echo "protoc not installed: perfetto decoding not checked (scripts/install-deps.sh installs it)"
fi
"$GMT_CLI" export --format csv tr.gmt >tr.csv || fail "csv"
python3 - tr.csv <<'PY' || fail "csv content"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 250, len(rows)
r = rows[0]
# the site is the user's Python line past PyTorch's allocator (sites.c);
# the library, the one that made the call
assert r["api"] == "cudaMalloc" and r["function"] == "load_model", r
assert r["file"] == "train.py" and r["line"] == "20", r
assert r["library"] == "libtorch_cuda.so", r
assert any(x["result"] == "cudaErrorMemoryAllocation" for x in rows)
PY
"$GMT_CLI" export --format pprof tr.gmt -o tr.pb.gz || fail "pprof"
[ "$(head -c 2 tr.pb.gz | od -An -tx1 | tr -d ' \n')" = 1f8b ] || fail "not gzip"
if command -v protoc >/dev/null; then
	gzip -dc tr.pb.gz | protoc --decode_raw >raw.txt || fail "protoc --decode_raw"
	gzip -dc tr.pb.gz | protoc --proto_path="$TESTS_DIR/eco" --decode=perftools.profiles.Profile \
		"$TESTS_DIR/eco/profile.proto" >prof.txt || fail "protoc --decode"
	python3 - prof.txt <<'PY' || fail "pprof content"
import re, sys
text = open(sys.argv[1]).read()
strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
assert strings[0] == "", "string 0 must be empty"
types = re.findall(r'^sample_type \{\n  type: (\d+)\n  unit: (\d+)', text, re.M)
got = [(strings[int(a)], strings[int(b)]) for a, b in types]
assert got == [("alloc_objects", "count"), ("alloc_space", "bytes"),
               ("inuse_objects", "count"), ("inuse_space", "bytes")], got
vals = [list(map(int, re.findall(r'value: (-?\d+)', s))) for s in text.split("sample {")[1:]]
assert sum(v[1] for v in vals) > sum(v[3] for v in vals) > 0
assert "c10::cuda::CUDACachingAllocator::malloc" in strings and "attention" in strings
assert text.count("location {") >= 10 and "mapping {" in text
PY
else
	echo "protoc not installed: pprof decoding not checked (scripts/install-deps.sh installs it)"
fi
rc=0; "$GMT_CLI" export tr.gmt >/dev/null 2>err.txt || rc=$?
expect_eq "no format" "$rc" 2
script -qc "'$GMT_CLI' export --format perfetto tr.gmt" /dev/null >tty.txt 2>&1 || true
grep -q "perfetto is binary: give -o FILE" tty.txt || fail "perfetto to a terminal: $(cat tty.txt)"
rc=0; "$GMT_CLI" export -f xml tr.gmt >/dev/null 2>err.txt || rc=$?
expect_eq "bad format" "$rc" 2
grep -q "^gpumemtrace export: " err.txt || fail "error line"
echo ok
