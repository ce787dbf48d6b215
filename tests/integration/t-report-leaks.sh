#!/usr/bin/env bash
# leaks: what is live at the end, grouped by stack (site and callers),
# function, library and API, with counts, bytes, kinds and allocation times;
# an incomplete trace says that "the end" is its last flush.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/report-traces.sh"
report_trace t.gmt

leaks() { # name args...
	local name=$1
	shift
	# --raw-sites: the grouping's figures (t-report-sites has the rules')
	"$GMT_CLI" leaks --json --raw-sites "$@" t.gmt >"$name.json" 2>err || fail "leaks $* exit $?: $(cat err)"
	[ ! -s err ] || fail "leaks $*: unexpected stderr: $(cat err)"
}
groups() { # file fields...
	local f=$1
	shift
	local fields=""
	for k in "$@"; do fields="$fields g['$k'],"; done
	json "$f" "[($fields) for g in d['groups']]"
}

# live at the end: 0x1000 (1000, train<-main), 0x3000 + 0x5000 (500 + 3000,
# cublasLtMatmul), 0x6000 (100, train<-eval), 0x7000 (64 pinned, train<-main)
leaks s
expect_eq totals "$(json s.json "d['complete'], d['live_at'], d['live_bytes'], d['live_allocations']")" \
	"(True, 'exit', 4664, 5)"
expect_eq kinds "$(json s.json "d['by_kind']['device'], d['by_kind']['pinned_host']")" "(4600, 64)"
expect_eq by-stack "$(groups s.json key bytes allocations first_time_ns last_time_ns library)" \
	"[('cublasLtMatmul (libcublasLt.so.12+0x200) <- train <- main', 3500, 2, 30, 70, 'libcublasLt.so.12'), ('train (train.c:10) <- main', 1064, 2, 10, 90, 'app'), ('train (train.c:10) <- eval', 100, 1, 45, 45, 'app')]"
expect_eq site "$(json s.json "d['groups'][1]['site'], d['groups'][1]['callers'], d['groups'][1]['function']")" \
	"('train (train.c:10)', 'main', 'train')"
expect_eq group-kinds "$(json s.json "d['groups'][1]['by_kind']['device'], d['groups'][1]['by_kind']['pinned_host']")" "(1000, 64)"
leaks f --by function
expect_eq by-function "$(groups f.json key bytes allocations)" "[('cublasLtMatmul', 3500, 2), ('train', 1164, 3)]"
leaks l --by library
expect_eq by-library "$(groups l.json key bytes)" "[('libcublasLt.so.12', 3500), ('app', 1164)]"
leaks a --by api
expect_eq by-api "$(groups a.json key bytes allocations)" \
	"[('cuMemAlloc_v2', 3500, 2), ('cudaMalloc', 1100, 2), ('cudaMallocHost', 64, 1)]"
leaks d0 --depth 0
expect_eq depth0 "$(groups d0.json key bytes)" \
	"[('cublasLtMatmul (libcublasLt.so.12+0x200)', 3500), ('train (train.c:10)', 1164)]"
leaks n1 -n 1
expect_eq limit "$(json n1.json "len(d['groups']), d['groups_total']")" "(1, 3)"

"$GMT_CLI" leaks --raw-sites t.gmt >l.txt 2>err || fail "leaks text exit $?"
grep -Eq '^total: 4\.55 KiB in 5 allocations \(device 4\.49 KiB, pinned host 64 B\)' l.txt || fail "no total: $(cat l.txt)"
grep -Eq '3\.42 KiB +2  \+30 ns\.\.\+70 ns +cublasLtMatmul' l.txt || fail "no cublas row: $(cat l.txt)"
grep -q 'INCOMPLETE' l.txt && fail "complete trace called incomplete"

# killed: no trailer; the end is the last flush
"$MKTRACE" k.gmt <<'T'
header start_mono=0
events tid=1
ev api=cudaMalloc t=1000 ptr=0x1000 size=4096 dev=0
ev api=cudaMalloc t=2000000 ptr=0x2000 size=4096
ev api=cudaFree t=3000000 ptr=0x1000
T
rc=0
"$GMT_CLI" leaks --json k.gmt >k.json 2>err || rc=$?
expect_eq killed-rc "$rc" 0
grep -q 'warning: k.gmt: incomplete trace' err || fail "no warning: $(cat err)"
expect_eq killed "$(json k.json "d['complete'], d['live_at'], d['live_bytes'], d['traces'][0]['end_time_ns']")" \
	"(False, 'last_flush', 4096, 3000000)"
expect_eq no-stack "$(groups k.json key bytes library)" "[('(no stack)', 4096, '(no stack)')]"
"$GMT_CLI" leaks k.gmt >k.txt 2>/dev/null
grep -q 'INCOMPLETE TRACE: k.gmt (no trailer).*last flush (+3.0 ms), not at exit' k.txt || fail "no incomplete line: $(cat k.txt)"

rc=0
"$GMT_CLI" leaks --by size t.gmt >out 2>err || rc=$?
expect_eq bad-by "$rc" 2
rc=0
"$GMT_CLI" leaks missing.gmt >out 2>err || rc=$?
expect_eq missing "$rc" 3
grep -q '^gpumemtrace leaks: cannot open missing.gmt' err || fail "missing: $(cat err)"
"$GMT_CLI" leaks --help | grep -q 'examples:' || fail "no examples in help"
echo ok
