# gpumemtrace flamegraph: folded stacks at the peak and at the end, an
# interactive SVG and HTML page with Python frames.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/eco-trace.sh"
eco_trace tr.gmt
"$GMT_CLI" flamegraph --folded tr.gmt >peak.folded || fail "folded"
# every line: frames outermost first, then bytes; the total is the peak (30.9 GiB)
total=$(python3 -c 'import sys; print(sum(int(l.split()[-1]) for l in open(sys.argv[1])))' peak.folded)
expect_eq "bytes at the peak" "$total" 33206304768
grep -q '^<module> (train.py);init_process_group (c10d.py);ncclCommInitRank;cudaMalloc 2147483648$' peak.folded \
	|| fail "nccl stack: $(cat peak.folded)"
"$GMT_CLI" flamegraph --folded --at end tr.gmt >end.folded
grep -q "backward" end.folded && fail "gradients are freed by the end"
grep -q "step (adamw.py)" end.folded || fail "optimizer state live at the end"
"$GMT_CLI" flamegraph tr.gmt -o f.svg || fail "svg"
python3 - f.svg <<'PY' || fail "SVG structure"
import sys, xml.etree.ElementTree as ET
S = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
frames = [g for g in root.iter(S + "g") if g.get("class") == "frame"]
titles = [g.find(S + "title").text for g in frames]
assert titles[0].startswith("all (30.9 GiB, 100.00%)"), titles[0]
assert any(t.startswith("attention (model.py)") for t in titles), "python frame"
assert root.find(S + "script") is not None, "no script"
ids = {e.get("id") for e in root.iter()}
assert {"fg-search", "fg-reset", "title"} <= ids, ids
PY
"$GMT_CLI" flamegraph tr.gmt -o f.html
head -1 f.html | grep -q "<!DOCTYPE html>" || fail "html"
grep -q '<svg id="fg-svg"' f.html || fail "html holds the svg"
if command -v rsvg-convert >/dev/null; then
	rsvg-convert f.svg -o f.png || fail "rsvg-convert failed"
fi
rc=0; "$GMT_CLI" flamegraph --at middle tr.gmt >/dev/null 2>err.txt || rc=$?
expect_eq "bad --at" "$rc" 2
grep -q "^gpumemtrace flamegraph: " err.txt || fail "error line"
echo ok
