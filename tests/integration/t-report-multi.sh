#!/usr/bin/env bash
# Several traces (one per rank): summary, top and leaks show a row per
# process, the totals, and the imbalance between ranks (which is highest).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/report-traces.sh"
report_trace r0.gmt "process pid=11 ppid=1 exe=/work/app arg=app env=RANK=0"
report_small r1.gmt "process pid=22 ppid=1 exe=/work/app arg=app env=RANK=1"

run_json() { # out args...
	local out=$1
	shift
	"$GMT_CLI" "$@" --json r0.gmt r1.gmt >"$out" 2>err || fail "$* exit $?: $(cat err)"
	[ ! -s err ] || fail "$*: unexpected stderr: $(cat err)"
}

run_json s.json summary
expect_eq traces "$(json s.json "[(t['path'], t['rank'], t['devices'][0]['peak_bytes']) for t in d['traces']]")" \
	"[('r0.gmt', 0, 7600), ('r1.gmt', 1, 2000)]"
expect_eq processes "$(json s.json "[(p['label'], p['peak_bytes'], p['live_bytes_at_end']) for p in d['processes']]")" \
	"[('rank 0 (pid 11)', 7600, 4600), ('rank 1 (pid 22)', 2000, 2000)]"
expect_eq totals "$(json s.json "d['totals']['traces'], d['totals']['peak_bytes_sum'], d['totals']['live_bytes_at_end']")" \
	"(2, 9600, 6600)"
expect_eq imbalance "$(json s.json "[d['imbalance']['peak_bytes'][k] for k in ('max', 'max_trace', 'min', 'min_trace', 'mean', 'max_over_min')]")" \
	"[7600, 0, 2000, 1, 4800, 3.8]"
"$GMT_CLI" summary r0.gmt r1.gmt >s.txt 2>err || fail "summary text exit $?"
grep -q 'peak: highest 7.42 KiB in rank 0 (pid 11), lowest 1.95 KiB in rank 1 (pid 22), mean 4.69 KiB; max/min 3.80x' s.txt ||
	fail "no imbalance line: $(cat s.txt)"
grep -Eq '^  1 +rank 1 \(pid 22\) +1\.95 KiB' s.txt || fail "no rank 1 row: $(cat s.txt)"

run_json t.json top --by function --raw-sites # the grouping, not the site rules
expect_eq top-peak "$(json t.json "[(r['key'], r['peak_bytes'], r['traces'], r['max_trace'], r['max_value']) for r in d['devices'][0]['rows']]")" \
	"[('train', 5100, 2, 0, 3100), ('libnccl.so.2+0x100', 4000, 1, 0, 4000), ('cublasLtMatmul', 500, 1, 0, 500)]"
expect_eq top-devpeak "$(json t.json "d['devices'][0]['peak_bytes'], d['imbalance']['peak_bytes']['max_trace']")" "(9600, 0)"
run_json te.json top --by function --sort end --raw-sites
expect_eq top-end "$(json te.json "[(r['key'], r['end_bytes'], r['max_trace'], r['max_value']) for r in d['devices'][0]['rows']]")" \
	"[('cublasLtMatmul', 3500, 0, 3500), ('train', 3100, 1, 2000), ('libnccl.so.2+0x100', 0, 0, 0)]"
"$GMT_CLI" top --by function --raw-sites r0.gmt r1.gmt >t.txt 2>err || fail "top text exit $?"
grep -Eq 'rank 0 \(pid 11\) 3\.03 KiB +train' t.txt || fail "no most-in column: $(cat t.txt)"

run_json l.json leaks --by function --raw-sites
expect_eq leaks-total "$(json l.json "d['live_bytes'], [t['live_bytes'] for t in d['traces']]")" "(6664, [4664, 2000])"
expect_eq leaks-groups "$(json l.json "[(g['key'], g['bytes'], g['traces'], g['max_trace'], g['max_bytes']) for g in d['groups']]")" \
	"[('cublasLtMatmul', 3500, 1, 0, 3500), ('train', 3164, 2, 1, 2000)]"
expect_eq leaks-imbalance "$(json l.json "d['imbalance']['live_bytes']['max_trace'], d['imbalance']['live_bytes']['min']")" "(0, 2000)"

# one unreadable trace among several: exit 3, nothing on stdout
for cmd in summary top leaks; do
	rc=0
	"$GMT_CLI" $cmd r0.gmt nope.gmt >out 2>err || rc=$?
	expect_eq "$cmd-missing" "$rc" 3
	[ "$(wc -l <err)" -eq 1 ] || fail "$cmd: one error line expected: $(cat err)"
	[ ! -s out ] || fail "$cmd: output despite the error"
done
echo ok
