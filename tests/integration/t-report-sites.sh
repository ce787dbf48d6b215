# Sites are the user's code (analysis/sites.c): on the real H100 traces
# (docs/validation), PyTorch's sites are not c10's allocator; --raw-sites,
# --hide, --focus, --full-names, the table width, --json's site index; the
# shared-runtime and static-runtime builds of one program read alike;
# run --per-tensor sets the frameworks' switches.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

V=$TESTS_DIR/real/2026-11-23-h100
torch=$V/verify-torch-nocache.1167.gmt
[ -f "$torch" ] || skip "no validation traces"

# PyTorch: no site is the caching allocator; top --by function has many rows
"$GMT_CLI" summary "$torch" >s.txt
sed -n '/^top allocation sites/,/^by library/p' s.txt >sites.txt
grep -q 'CUDACachingAllocator' sites.txt && { cat sites.txt; fail "a site is c10's allocator"; }
grep -q 'THPVariable_relu (libtorch_python.so' sites.txt || { cat sites.txt; fail "no THPVariable_relu site"; }
"$GMT_CLI" top --by function -n 0 "$torch" >top.txt
rows=$(grep -c '\[libc10_cuda.so\]' top.txt || true)
[ "$rows" -gt 5 ] || { cat top.txt; fail "top --by function: $rows rows"; }
grep -q 'NativeCachingAllocator' top.txt && fail "top --by function shows the allocator"
# the library column keeps the library that made the call
grep -q '854 MiB  86.9%       43  libc10_cuda.so' s.txt || fail "by library changed"

# --raw-sites: the innermost frames, as before the rules
"$GMT_CLI" summary --raw-sites "$torch" | grep -q 'NativeCachingAllocator::allocate' ||
	fail "--raw-sites does not show the allocator"
# short names by default, whole with --full-names
grep -q '(_object\*' sites.txt && fail "parameter lists in the site column"
"$GMT_CLI" summary --full-names "$torch" | grep -q 'THPVariable_relu(_object\*, _object\*, _object\*)' ||
	fail "--full-names does not give names whole"
# --hide passes a frame over, --focus picks one
"$GMT_CLI" top --by function --hide 'THPVariable_relu' -n 0 "$torch" | grep -q 'THPVariable_relu' &&
	fail "--hide THPVariable_relu still shows it"
"$GMT_CLI" top --by function --focus '^at::detail::empty_generic' -n 0 "$torch" >focus.txt
[ "$(grep -c 'at::detail::empty_generic' focus.txt)" -ge 1 ] || { cat focus.txt; fail "--focus"; }
"$GMT_CLI" top --hide '(' "$torch" 2>err.txt && fail "a bad --hide REGEX was accepted"
grep -q "^gpumemtrace top: --hide '(':" err.txt || { cat err.txt; fail "bad REGEX message"; }

# width: COLUMNS, else 160 when not a terminal; figures are never cut
COLUMNS=80 "$GMT_CLI" summary "$torch" >s80.txt
python3 - s80.txt s.txt <<'PY' || fail "lines wider than the width"
import sys
for path, w in ((sys.argv[1], 80), (sys.argv[2], 160)):
    sites = False  # the site rows (the fixed tables are narrower than 160)
    for l in open(path, encoding="utf-8"):
        l = l.rstrip("\n")
        sites = l.startswith("top allocation sites") or (sites and l != "")
        if len(l) > w and (sites or w == 160) and not l.startswith(("trace ", "process ")):
            print("%s: %d > %d: %s" % (path, len(l), w, l)); sys.exit(1)
PY
# the site keeps its function: the namespaces go first (…autograd::)
grep -q '^     160 MiB        1      304  …autograd::THPVariable_relu (libtorch_python.so…$' s80.txt ||
	fail "COLUMNS=80 cut the figures"
grep -q '…' s80.txt || fail "COLUMNS=80 cut nothing"

# --json: the whole stack, the site's index, the rule that skipped each frame
"$GMT_CLI" summary --json "$torch" >s.json
python3 - s.json <<'PY' || fail "--json site index"
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["devices"][0]["peak_sites"]:
    i, st = s["site_index"], s["stack"]
    assert 0 <= i < len(st), s
    assert st[i]["function"] == s["function"], (st[i]["function"], s["function"])
    assert all(f["skipped_by"] for f in st[:i]), st[:i]
    assert all(f["skipped_by"] is None for f in st[i:])
    assert "(" in s["function"], s["function"]   # whole names
top = d["devices"][0]["peak_sites"][0]
assert any(f["skipped_by"] == "pytorch-allocator" or f["skipped_by"] == "pytorch"
           for f in top["stack"]), top
PY

# the shared and static runtimes: the same calls and sites, every family
# (the pool trim too: each driver call the static runtime makes for a
# runtime API is named as that API)
for p in runtime-basic runtime-basic-static; do
	mkdir -p $p
	(cd $p && traced "$PROG_DIR/$p" malloc pitch 3d managed host register async pool array ipc errors >out.txt 2>&1) ||
		fail "$p failed"
	"$GMT_CLI" summary --json $p/gpumemtrace.*.gmt >$p.json
done
python3 - runtime-basic.json runtime-basic-static.json <<'PY' || fail "shared and static differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["calls"] == b["calls"], (a["calls"], b["calls"])
fa = [(s["function"], s["line"]) for s in a["devices"][0]["peak_sites"]]
fb = [(s["function"], s["line"]) for s in b["devices"][0]["peak_sites"]]
assert fa == fb, (fa, fb)
assert "cudaMalloc" in b["calls"] and "cuMemAlloc_v2" not in b["calls"], b["calls"]
PY
"$GMT_CLI" diff runtime-basic/gpumemtrace.*.gmt runtime-basic-static/gpumemtrace.*.gmt >diff.txt
grep -q '^calls: the same counts for every API' diff.txt || { cat diff.txt; fail "diff of calls"; }
"$GMT_CLI" top --json --by api -n 0 runtime-basic-static/gpumemtrace.*.gmt >api.json
expect_eq "top --by api" "$(json api.json "sorted((r['key'], r['api']) for r in d['devices'][0]['rows'])")" \
	"[('cudaMalloc', 'cudaMalloc'), ('cudaMalloc3D', 'cudaMalloc3D'), ('cudaMallocAsync', 'cudaMallocAsync'), ('cudaMallocAsync_ptsz', 'cudaMallocAsync_ptsz'), ('cudaMallocFromPoolAsync', 'cudaMallocFromPoolAsync'), ('cudaMallocFromPoolAsync_ptsz', 'cudaMallocFromPoolAsync_ptsz'), ('cudaMallocPitch', 'cudaMallocPitch')]"
# --raw-sites keeps the recorded driver names
"$GMT_CLI" summary --raw-sites runtime-basic-static/gpumemtrace.*.gmt | grep -q cuMemAlloc_v2 ||
	fail "--raw-sites renamed the driver calls"

# run --per-tensor: the switches, and what it says
"$GMT_CLI" run --per-tensor --allow-no-trace -- sh -c \
	'echo "$PYTORCH_NO_CUDA_MEMORY_CACHING $XLA_PYTHON_CLIENT_ALLOCATOR $TF_GPU_ALLOCATOR"' \
	>run.out 2>run.err || fail "run --per-tensor failed"
expect_eq "per-tensor env" "$(cat run.out)" "1 platform cuda_malloc_async"
grep -q 'runs slower and its peak differs' run.err || { cat run.err; fail "no slower/peak line"; }
grep -q 'cupy.cuda.set_allocator(None)' run.err || fail "no CuPy line"
echo ok
