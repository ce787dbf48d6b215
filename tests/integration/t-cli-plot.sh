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
# A command over 80 bytes is cut to 77 and "...", never inside a UTF-8
# character: "python3 " is 8 bytes, so byte 77 is the second of an "é".
long=$(printf 'é%.0s' $(seq 60))
printf '%s\n' "process pid=7 host=h exe=/bin/x arg=python3 arg=$long" "device ord=0 name=G total=0x40000000" \
	"events tid=7 base=1000" "ev api=cudaMalloc t=1100 ptr=0x7f0000000000 size=4096" >long.gmt.txt
"$MKTRACE" long.gmt <long.gmt.txt || fail "mktrace"
"$GMT_CLI" plot long.gmt -o long.svg || fail "plot of a long command"
python3 - long.svg <<'PY' || fail "long command's title"
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]).getroot().find(".//{http://www.w3.org/2000/svg}text[@id='title']").text
assert t == "gpumemtrace: python3 " + "\u00e9" * 34 + "... on h", t
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
# The time axis spans the activity: a 100 s trace whose allocations sit
# between +50 s and +51 s shows +49.980 s to +51.020 s (2% around), not 0 to
# 100 s; --from/--to choose the window (the peak at +50.5 s is outside
# 10..20 s: no peak mark); a bad or empty window is a usage error.
S=1000000000
"$BUILD/tests/unit-tools/mktrace" idle.gmt <<T
header start_mono=0 pid=71
device ord=0 name=sim total=0x40000000
events tid=1
ev api=cudaMalloc t=$((50 * S)) ptr=0x1000 size=0x100000 dev=0
ev api=cudaMalloc t=$((50 * S + S / 2)) ptr=0x200000 size=0x200000 dev=0
ev api=cudaFree t=$((51 * S)) ptr=0x200000
trailer t=$((100 * S))
T
"$GMT_CLI" plot idle.gmt -o idle.svg || fail "plot idle"
python3 - idle.svg <<'PY' || fail "activity window"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = {e.get("id"): "".join(e.itertext()) for e in root.iter() if e.get("id")}
assert texts["window"] == "showing +49.980 s to +51.020 s of a 1m40.0s trace (the activity; --from/--to choose)", texts["window"]
ticks = ["".join(e.itertext()) for e in root.iter() if e.get("class") == "xtick"]
assert ticks and all(49.9 < float(t.split()[0]) < 51.1 for t in ticks), ticks
assert "peak" in texts, "peak mark"
PY
"$GMT_CLI" plot --from 10 --to 20s idle.gmt -o w.svg || fail "plot --from/--to"
python3 - w.svg <<'PY' || fail "chosen window"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = {e.get("id"): "".join(e.itertext()) for e in root.iter() if e.get("id")}
assert texts["window"] == "showing +10.000 s to +20.000 s of a 1m40.0s trace (--from/--to)", texts["window"]
ticks = ["".join(e.itertext()) for e in root.iter() if e.get("class") == "xtick"]
assert ticks[0] == "10 s" and ticks[-1] == "20 s", ticks
assert "peak" not in texts, "the peak is outside the window"
PY
"$GMT_CLI" plot --from 50500ms idle.gmt -o w2.svg || fail "plot --from alone"
grep -q 'showing +50.500 s to +51.020 s' w2.svg || fail "--from alone: $(grep -o 'showing[^<]*' w2.svg)"
for bad in "--from abc" "--from 30 --to 20" "--to -1"; do
	rc=0
	# shellcheck disable=SC2086
	"$GMT_CLI" plot $bad idle.gmt >/dev/null 2>err.txt || rc=$?
	expect_eq "plot $bad" "$rc" 2
	[ "$(wc -l <err.txt)" -eq 1 ] || fail "plot $bad: $(cat err.txt)"
done
# the framework's counter lines stay inside the axis: a reading at exit,
# after the last event, was drawn past its right edge (standin-jax's at
# x=14503076 on an 870-wide axis)
for t in "$TESTS_DIR"/verdicts/traces/standin-*.counters.gmt; do
	"$GMT_CLI" plot -o c.svg "$t" || fail "plot $t"
	grep -q 'id="framework-reserved"' c.svg || fail "${t##*/}: no counter line"
	python3 - c.svg "${t##*/}" <<'PY' || fail "counter lines past the axis"
import re, sys
s = open(sys.argv[1]).read()
total = re.search(r'id="total"[^>]* d="([^"]*)"', s).group(1)
right = max(float(v) for v in re.findall(r'([0-9.]+) [0-9.]+', total))
for m in re.finditer(r'<polyline id="(framework-[a-z]+)"[^>]*points="([^"]*)"', s):
    xs = [float(p.split(',')[0]) for p in m.group(2).split()]
    if xs and max(xs) > right + 0.05:
        sys.exit("%s: %s reaches x=%s, the axis ends at %s" % (sys.argv[2], m.group(1), max(xs), right))
PY
done
if command -v rsvg-convert >/dev/null; then
	rsvg-convert m.svg -o m.png || fail "rsvg-convert failed"
	[ "$(head -c 8 m.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"
else
	echo "rsvg-convert not installed: PNG rendering not checked (scripts/install-deps.sh installs it)"
fi
echo ok
