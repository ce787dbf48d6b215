# gpumemtrace plot: a well-formed SVG with axes, legend, peak, OOM marks,
# phases and the NVML line; renders to PNG where rsvg-convert exists.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/eco-trace.sh"
eco_trace tr.gmt
"$GMT_CLI" plot tr.gmt -o m.svg || fail "plot failed"
python3 - m.svg <<'PY' || fail "SVG structure"
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
ids = {e.get("id") for e in root.iter()}
for want in ("title", "axes", "x-axis", "y-axis", "legend", "peak", "layers", "total", "nvml", "phases"):
    assert want in ids, "missing #" + want
title = root.find(".//s:text[@id='title']", ns).text
assert title == "gpumemtrace: python train.py --batch 64 on gpu-node-07", title
texts = ["".join(e.itertext()) for e in root.iter("{http://www.w3.org/2000/svg}text")]
assert any(t.startswith("peak 30.9 GiB at") for t in texts), "peak label"
assert any(t.endswith(" GiB") for t in texts), "byte units on the y axis"
assert any(t == "1 s" for t in texts), "time ticks"
ooms = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "oom"]
assert len(ooms) == 1, "one OOM mark, got %d" % len(ooms)
phases = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if (g.get("class") or "").startswith("phase")]
assert len(phases) >= 12, "phases: %d" % len(phases)
assert any("cudaMalloc / cuMemAlloc" in t for t in texts), "legend kinds"
PY
"$GMT_CLI" plot --by library tr.gmt >lib.svg || fail "plot --by library"
grep -q "libnccl.so.2 (2.00 GiB)" lib.svg || fail "library legend"
python3 -c 'import sys,xml.etree.ElementTree as E; E.parse(sys.argv[1])' lib.svg || fail "lib.svg not XML"
# usage errors
rc=0; "$GMT_CLI" plot --by colour tr.gmt >/dev/null 2>err.txt || rc=$?
expect_eq "bad --by" "$rc" 2
grep -q "^gpumemtrace plot: " err.txt || fail "error line: $(cat err.txt)"
rc=0; "$GMT_CLI" plot --device 5 tr.gmt >/dev/null 2>err.txt || rc=$?
expect_eq "no such device" "$rc" 2
rc=0; "$GMT_CLI" plot missing.gmt >/dev/null 2>&1 || rc=$?
expect_eq "missing trace" "$rc" 3
"$GMT_CLI" plot --help | grep -q "^examples:" || fail "help has no examples"
if command -v rsvg-convert >/dev/null; then
	rsvg-convert m.svg -o m.png || fail "rsvg-convert failed"
	[ "$(head -c 8 m.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"
else
	echo "rsvg-convert not installed: PNG rendering not checked (scripts/install-deps.sh installs it)"
fi
echo ok
