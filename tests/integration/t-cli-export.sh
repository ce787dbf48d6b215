# gpumemtrace export: Trace Event JSON, CSV and pprof, each checked against
# its format.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/eco-trace.sh"
eco_trace tr.gmt
"$GMT_CLI" export --format perfetto tr.gmt -o tr.json || fail "perfetto"
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
rc=0; "$GMT_CLI" export -f xml tr.gmt >/dev/null 2>err.txt || rc=$?
expect_eq "bad format" "$rc" 2
grep -q "^gpumemtrace export: " err.txt || fail "error line"
echo ok
