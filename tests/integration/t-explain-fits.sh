#!/usr/bin/env bash
# explain's advice fits the framework's mode and its verdicts the run, on
# the real H100 traces (issue 27.3 and 27.4):
# - PYTORCH_NO_CUDA_MEMORY_CACHING (torch-nocache.941): PyTorch counts
#   nothing, so memory_reserved()/memory_allocated() are not "its own
#   figure", and no memory fraction is enforced (each tensor is a cudaMalloc:
#   an OOM is a failed driver call), so no oom-invisible note for it;
# - a script with no steps (nccl.1021: one all_reduce) is not told about a
#   warm-up or an optimizer's state;
# - explain A A: "the same", not "B needed 0 B more ... the findings below";
# - the same program built shared and static: one program, not two
#   libraries; the tracer's own library is not a difference;
# - 8.81 MiB in use outside the process on an idle H100 is the driver's
#   reserve, not "other processes";
# - growth counts rises of the high-water mark, not "steps", beside
#   iterations;
# - fragmentation's "at the end" is the trace's end in text and JSON alike.
. "$TESTS_DIR/integration/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
V1=$TESTS_DIR/real/2026-11-22-h100
V2=$TESTS_DIR/real/2026-11-23-h100

finding() { # json id expr: expr over the finding f with that id (None: absent)
	json "$1" "next(($3 for f in d['traces'][0]['findings'] if f['id'] == '$2'), None)"
}
cmp_finding() { # json id expr, over explain A B's comparison
	json "$1" "next(($3 for f in d['comparison']['findings'] if f['id'] == '$2'), None)"
}

# ---- no caching: the mode's own figures and OOMs ----
"$GMT_CLI" explain --json "$V2/torch-nocache.941.gmt" >nc.json || fail "explain nocache"
expect_eq "nocache: no cache figures" \
	"$(finding nc.json smi-breakdown "('own figure is torch.cuda.memory_reserved' in f['change'], 'read 0' in f['change'])")" \
	"(False, True)"
expect_eq "nocache: no fraction note" "$(finding nc.json oom-invisible 'f["id"]')" None
"$GMT_CLI" oom --json "$V2/torch-nocache.941.gmt" >nco.json || fail "oom nocache"
! grep -q pytorch-fraction nco.json || fail "oom names the fraction without caching"
# with its cache the note stays
"$GMT_CLI" explain --json "$V1/torch-async.837.gmt" >as.json || fail "explain async"
expect_eq "async: fraction note" "$(finding as.json oom-invisible "'set_per_process_memory_fraction' in str(f['evidence'])")" True

# ---- no steps: no warm-up story ----
"$GMT_CLI" explain --json "$V2/nccl.1021.gmt" >n.json || fail "explain nccl"
expect_eq "nccl: no warm-up" \
	"$(finding n.json warm-up "('warm-up' in f['answer'], 'optimizer' in f['change'], 'no repeating steps' in f['change'])")" \
	"(False, False, True)"
# a training loop keeps its warm-up
expect_eq "torch: warm-up" "$(finding nc.json warm-up "'(the warm-up)' in f['answer']")" True

# ---- explain A A ----
"$GMT_CLI" explain --json "$V2/nccl.1021.gmt" "$V2/nccl.1021.gmt" >aa.json || fail "explain A A"
expect_eq "A A: the same" \
	"$(cmp_finding aa.json compare-peak "(f['answer'].startswith('A and B needed the same'), 'findings below' in f['change'])")" \
	"(True, False)"
expect_eq "A A: one finding" "$(json aa.json "len(d['comparison']['findings'])")" 1

# ---- shared against static; the tracer's own build ----
"$GMT_CLI" explain --json "$V2/plain-shared.643.gmt" "$V2/plain-static.718.gmt" >ss.json ||
	fail "explain shared static"
expect_eq "shared/static: no sites" "$(cmp_finding ss.json compare-sites 'f["id"]')" None
expect_eq "shared/static: libs" "$(cmp_finding ss.json compare-libs "[e['text'] for e in f['evidence']]")" \
	"['the program: plain-shared in A, plain-static in B', 'libcudart.so.13: only in A']"
expect_eq "shared/static: same peak" \
	"$(cmp_finding ss.json compare-peak "('A and B needed the same' in f['answer'], 'none of it changed the peak' in f['change'])")" \
	"(True, True)"
"$GMT_CLI" explain --json "$V1/before-fixes-plain-shared.gmt" "$V1/plain-shared.596.gmt" >tr.json ||
	fail "explain two tracer builds"
! grep -q 'libgpumemtrace' <<<"$(json tr.json "[e['text'] for f in d['comparison']['findings'] for e in f['evidence']]")" ||
	fail "the tracer's own library is a difference: $(json tr.json 'd["comparison"]')"

# ---- the driver's reserve ----
"$GMT_CLI" oom "$V2/plain-shared.643.gmt" >o.txt || fail "oom"
grep -q "the driver's reserve 8.81 MiB" o.txt || fail "no reserve: $(cat o.txt)"
! grep -q 'other processes' o.txt || fail "other processes: $(cat o.txt)"
"$GMT_CLI" explain --json "$V2/plain-shared.643.gmt" >ps.json || fail "explain plain"
expect_eq "explain: reserve" \
	"$(finding ps.json oom-exceeds-device-total "any(\"the driver's reserve 8.81 MiB\" in e['text'] for e in f['evidence'])")" True

# ---- rises, not steps ----
"$GMT_CLI" growth "$V2/torch-nocache.941.gmt" >g.txt || fail "growth"
grep -q '^  peak 982 MiB at +[0-9.]* s after [0-9]* rises (mixed)' g.txt || fail "peak line: $(cat g.txt)"
grep -q 'iterations: 310' g.txt || fail "iterations: $(cat g.txt)"

# ---- leaks' note names only the pool's bytes (27.5): torch-async.837 said
# all 193 MiB were "PyTorch's stream-ordered pool allocations", 128 MiB of
# them cuBLAS's own cuMemAlloc ----
"$GMT_CLI" leaks "$V1/torch-async.837.gmt" >l.txt || fail "leaks"
grep -q "^note: 65.0 MiB of these are PyTorch's stream-ordered pool allocations" l.txt ||
	fail "leaks note: $(head -5 l.txt)"
"$GMT_CLI" leaks --json "$V1/torch-async.837.gmt" >l.json || fail "leaks json"
expect_eq "leaks held_by_bytes" "$(json l.json '[d["traces"][0]["held_by_bytes"], d["traces"][0]["live_bytes"]]')" \
	"[68157440, 202690068]"

# ---- one instant for "at the end" (27.6): fragmentation's JSON named the
# last event (torch-async.837: 10.03 s) where its text and summary name the
# trace's end (+14.542 s) ----
for t in "$V1"/*.gmt "$V2"/*.gmt; do
	"$GMT_CLI" summary --json "$t" >s.json || fail "summary $t"
	"$GMT_CLI" fragmentation --json "$t" >f.json || fail "fragmentation $t"
	end=$(json s.json 'd.get("traces", [d])[0]["duration_ns"]')
	fe=$(json f.json '{x["segments_at_end"]["time_ns"] for x in d.get("traces", [d])[0]["devices"] if x["segments_at_end"]}')
	[ "$fe" = "{$end}" ] || [ "$fe" = "set()" ] || fail "$t: segments_at_end $fe, duration $end"
done
echo ok
