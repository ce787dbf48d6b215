#!/usr/bin/env bash
# top: ranks allocation sites by bytes at the peak, at the end, in total and
# by calls, grouped by stack (with depth), function, library and API, on a
# hand-built trace whose stacks go through the program, libnccl and
# libcublasLt. Exact numbers from --json; bad flags exit 2, a missing file 3.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/report-traces.sh"
report_trace t.gmt


top() { # name args...: top --json into name.json
	local name=$1
	shift
	# --raw-sites: these figures are of the grouping (the site rules have
	# theirs at the end and in t-report-sites)
	"$GMT_CLI" top --json --raw-sites "$@" t.gmt >"$name.json" 2>err || fail "top $* exit $?: $(cat err)"
	[ ! -s err ] || fail "top $*: unexpected stderr: $(cat err)"
}
rows() { # file fields...: the rows of device 0 as tuples
	local f=$1
	shift
	local fields=""
	for k in "$@"; do fields="$fields r['$k'],"; done
	json "$f" "[($fields) for r in d['devices'][0]['rows']]"
}

top lib --by library
expect_eq peak "$(json lib.json "d['devices'][0]['peak_bytes'], d['devices'][0]['peak_time_ns']")" "(7600, 45)"
expect_eq by-library "$(rows lib.json key peak_bytes peak_allocations end_bytes total_bytes calls failed)" \
	"[('libnccl.so.2', 4000, 1, 0, 4000, 1, 0), ('app', 3100, 3, 1100, 3100, 3, 1), ('libcublasLt.so.12', 500, 1, 3500, 3500, 2, 0)]"
top lib-end --by library --sort end
expect_eq sort-end "$(rows lib-end.json key end_bytes end_allocations)" \
	"[('libcublasLt.so.12', 3500, 2), ('app', 1100, 2), ('libnccl.so.2', 0, 0)]"
top lib-total --by library --sort total
expect_eq sort-total "$(rows lib-total.json key total_bytes)" \
	"[('libnccl.so.2', 4000), ('libcublasLt.so.12', 3500), ('app', 3100)]"
top lib-calls --by library --sort=calls
expect_eq sort-calls "$(rows lib-calls.json key calls)" \
	"[('app', 3), ('libcublasLt.so.12', 2), ('libnccl.so.2', 1)]"

top fn --by function
expect_eq by-function "$(rows fn.json key peak_bytes library)" \
	"[('libnccl.so.2+0x100', 4000, 'libnccl.so.2'), ('train', 3100, 'app'), ('cublasLtMatmul', 500, 'libcublasLt.so.12')]"

top api --by api
expect_eq by-api "$(rows api.json key peak_bytes end_bytes total_bytes calls failed)" \
	"[('cudaMalloc', 7100, 1100, 7100, 4, 1), ('cuMemAlloc_v2', 500, 3500, 3500, 2, 0)]"

# stack keys: the site and --depth callers; depth 0 merges the two train paths
top s0 --depth 0
expect_eq depth0 "$(rows s0.json key peak_bytes)" \
	"[('libnccl.so.2+0x100', 4000), ('train (train.c:10)', 3100), ('cublasLtMatmul (libcublasLt.so.12+0x200)', 500)]"
top s1 --depth 1 --sort end
expect_eq depth1 "$(rows s1.json key end_bytes)" \
	"[('cublasLtMatmul (libcublasLt.so.12+0x200) <- train', 3500), ('train (train.c:10) <- main', 1000), ('train (train.c:10) <- eval', 100), ('libnccl.so.2+0x100 <- main', 0)]"
top s3
expect_eq default-depth "$(json s3.json "d['depth'], d['by'], d['sort'], d['devices'][0]['rows'][3]['key']")" \
	"(3, 'stack', 'peak', 'train (train.c:10) <- eval')"
top lim -n 1 --by library
expect_eq limit "$(json lim.json "len(d['devices'][0]['rows']), d['devices'][0]['rows_total']")" "(1, 3)"
expect_eq ndevices "$(json lib.json "[x['index'] for x in d['devices']]")" "[0]"

# the tables
"$GMT_CLI" top --by library t.gmt >top.txt 2>err || fail "top text exit $?"
grep -Eq '^device 0: peak 7\.42 KiB at \+45 ns' top.txt || fail "no device line: $(cat top.txt)"
grep -Eq '3\.91 KiB +1 +0 B +3\.91 KiB +1  libnccl\.so\.2$' top.txt || fail "no nccl row: $(cat top.txt)"
"$GMT_CLI" top --raw-sites t.gmt >top.txt 2>err || fail "top text exit $?"
grep -q 'train (train.c:10) <- main  \[app\]' top.txt || fail "no train row: $(cat top.txt)"
# the site rules: NCCL's and cuBLASLt's allocations are their callers'
# (main, train); the library column still says who made the call
"$GMT_CLI" top --json --by function t.gmt >rules.json 2>err || fail "top rules exit $?"
expect_eq rules "$(rows rules.json key peak_bytes library)" \
	"[('main', 4000, 'libnccl.so.2'), ('train', 3600, 'app')]"
"$GMT_CLI" top --help >help.txt || fail "top --help"
grep -q 'examples:' help.txt || fail "no examples in help"

# errors: one line, exit 2 for usage, 3 for a missing file
expect_run bad-by 2 "^gpumemtrace top: --by: unknown grouping 'file'" "$GMT_CLI" top --by file t.gmt
expect_run bad-sort 2 "^gpumemtrace top: --sort: unknown order 'size'" "$GMT_CLI" top --sort size t.gmt
expect_run bad-depth 2 "^gpumemtrace top: option '--depth' wants a number" "$GMT_CLI" top --depth x t.gmt
expect_run no-value 2 "^gpumemtrace top: option '--by' needs a value" "$GMT_CLI" top t.gmt --by
expect_run json-value 2 "^gpumemtrace top: option '--json' takes no value" "$GMT_CLI" top --json=1 t.gmt
expect_run unknown 2 "^gpumemtrace top: unknown option '--bogus'" "$GMT_CLI" top --bogus t.gmt
expect_run no-trace 2 "^gpumemtrace top: missing TRACE" "$GMT_CLI" top --json
expect_run missing 3 "^gpumemtrace top: cannot open nope.gmt: No such file" "$GMT_CLI" top t.gmt nope.gmt
echo ok
