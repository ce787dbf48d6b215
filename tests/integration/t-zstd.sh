# Compressed chunks (format v3, GMTZ): a compressed trace reads exactly as
# the same trace uncompressed, the tracer writes them and the file shrinks,
# a damaged zstd layer is a corrupt chunk (exit 4, never a crash), and
# without libzstd.so.1 (GPUMEMTRACE_ZSTD_LIB, test-only, names another
# library) the tracer writes plain chunks with one NOTE while the CLI
# refuses compressed traces with one line and exit 3.
. "$TESTS_DIR/integration/lib.sh"
gmtz() { python3 "$TESTS_DIR/zstd/gmtz.py" "$@"; }
python3 -c 'import ctypes; ctypes.CDLL("libzstd.so.1")' 2>/dev/null ||
	skip "libzstd.so.1 not installed"
strip_offsets() { "$GMT_CLI" dump "$1" | sed 's/^@[0-9]* *//' | grep -v -e '^CHUNK' -e '^END'; }

echo "== the tracer writes compressed chunks (events by column), the file shrinks"
# setarch -R: no address randomization, so both runs see the same pointers
for c in 0 1; do
	GPUMEMTRACE_COMPRESS=$c GPUMEMTRACE_OUTPUT=c$c.gmt traced setarch -R "$PROG_DIR/threads" 1 20000 \
		>out$c.txt 2>err$c.txt
	[ ! -s err$c.txt ] || fail "COMPRESS=$c: stderr: $(cat err$c.txt)"
	"$GMT_CLI" summary --json c$c.gmt >s$c.json || fail "COMPRESS=$c: summary"
	"$GMT_CLI" dump c$c.gmt >d$c.txt || fail "COMPRESS=$c: dump"
done
cmp -s out0.txt out1.txt || fail "the program's output changed"
expect_eq "plain chunks with COMPRESS=0" "$(grep -c ' zstd raw ' d0.txt || true)" 0
[ "$(grep -c ' zstd raw ' d1.txt)" -ge 1 ] || fail "no compressed chunk with COMPRESS=1"
grep -Eq '^HEADER version ([3-9]|[1-9][0-9]+) ' d1.txt || fail "not a version 3+ trace"
s0=$(stat -c %s c0.gmt) s1=$(stat -c %s c1.gmt)
[ $((s1 * 10)) -lt $((s0 * 9)) ] || fail "compressed $s1 bytes, not 10% under $s0"
for k in '["events"]' '["lost_events"]' '["complete"]'; do
	expect_eq "summary$k" "$(json s1.json "d$k")" "$(json s0.json "d$k")"
done
expect_eq events "$(json s1.json 'd["events"]')" 40001
expect_eq "EVENTCOLS with COMPRESS=0" "$(grep -c ' EVENTS .*(columns)$' d0.txt || true)" 0
[ "$(grep -c ' EVENTS .*(columns)$' d1.txt)" -ge 1 ] || fail "no EVENTCOLS with COMPRESS=1"
# The same events, whichever way they were written (times and tids differ).
events_of() { grep ' EVENT #' "$1" | sed 's/^@[0-9]* *//; s/ +[0-9.]* / /; s/ tid [0-9]*//'; }
events_of d0.txt >e0.txt
events_of d1.txt >e1.txt
cmp -s e0.txt e1.txt || fail "events differ: $(diff e0.txt e1.txt | head -5)"

echo "== many threads: batches of small pointer deltas (whole pointers are bigger)"
GPUMEMTRACE_OUTPUT=m.gmt traced "$PROG_DIR/threads" 8 100000 >/dev/null ||
	fail "8 threads: the traced program failed"
"$GMT_CLI" summary --json m.gmt >m.json || fail "8 threads: summary"
expect_eq "8 threads: events" "$(json m.json 'd["events"]')" 1600001
expect_eq "8 threads: complete" "$(json m.json 'd["complete"]')" True
# Each event of an EVENTCOLS batch has its own offset in its chunk (its
# head's place), cached by the chunk's validation or not.
"$GMT_CLI" dump m.gmt >m.txt || fail "8 threads: dump"
awk '/ CHUNK #/ {c = $3} / EVENT #/ {print c, $1}' m.txt | sort | uniq -d >dups.txt
[ ! -s dups.txt ] || fail "events share dump offsets in a chunk: $(head -3 dups.txt)"

echo "== a trace compressed reads exactly as uncompressed"
gmtz compress c0.gmt z.gmt
"$GMT_CLI" dump z.gmt | grep -q '^@[0-9]* *CHUNK #1 .* zstd raw [0-9]* bytes$' ||
	fail "dump shows no compressed CHUNK line"
strip_offsets c0.gmt >a.txt
strip_offsets z.gmt >b.txt
cmp -s a.txt b.txt || fail "dump differs: $(diff a.txt b.txt | head -5)"
for cmd in summary "summary --json" top leaks; do
	"$GMT_CLI" $cmd c0.gmt | sed 's/c0\.gmt/T/g' >a.txt
	"$GMT_CLI" $cmd z.gmt | sed 's/z\.gmt/T/g' >b.txt
	cmp -s a.txt b.txt || fail "$cmd differs: $(diff a.txt b.txt | head -5)"
done

echo "== a damaged zstd layer is a corrupt chunk"

declare -A why=([magic]="not a zstd frame" [frame]="" [cut]="does not decompress"
	[rawlen]="raw length says")
for how in magic frame cut rawlen; do
	off2=$(gmtz damage z.gmt bad-$how.gmt $how)
	for cmd in summary dump "summary --json" top; do
		rc=0
		"$GMT_CLI" $cmd bad-$how.gmt >/dev/null 2>err.txt || rc=$?
		expect_eq "$how: $cmd exit" $rc 4
		expect_eq "$how: $cmd stderr lines" "$(wc -l <err.txt)" 1
		grep -q "corrupt trace: bad chunk at offset $off2 (.*${why[$how]}" err.txt ||
			fail "$how: $cmd: $(cat err.txt)"
	done
done

echo "== no libzstd: the tracer writes plain chunks and says so once"
GPUMEMTRACE_ZSTD_LIB=libgmt-no-such-zstd.so.1 GPUMEMTRACE_OUTPUT=n.gmt \
	traced "$PROG_DIR/threads" 1 20000 >outn.txt 2>errn.txt
cmp -s out0.txt outn.txt || fail "no libzstd: the program's output changed"
[ ! -s errn.txt ] || fail "no libzstd: stderr: $(cat errn.txt)"
"$GMT_CLI" dump n.gmt >dn.txt || fail "no libzstd: dump"
expect_eq "no libzstd: compressed chunks" "$(grep -c ' zstd raw ' dn.txt || true)" 0
expect_eq "no libzstd: NOTEs" "$(grep -c 'NOTE .*zstd not available: chunks uncompressed' dn.txt)" 1
expect_eq "no libzstd: events" "$(grep -c ' EVENT #' dn.txt)" 40001

echo "== no libzstd: the CLI refuses compressed traces, reads plain ones"
for cmd in summary dump "summary --json" top diff; do
	rc=0
	args=(z.gmt)
	[ "$cmd" != diff ] || args=(z.gmt z.gmt)
	GPUMEMTRACE_ZSTD_LIB=libgmt-no-such-zstd.so.1 "$GMT_CLI" $cmd "${args[@]}" \
		>out.txt 2>err.txt || rc=$?
	expect_eq "$cmd exit" $rc 3
	expect_eq "$cmd stderr lines" "$(wc -l <err.txt)" 1
	[ ! -s out.txt ] || fail "$cmd printed a report: $(head -3 out.txt)"
	grep -q "cannot read z.gmt: has zstd-compressed chunks and libzstd.so.1 cannot be loaded" \
		err.txt || fail "$cmd: $(cat err.txt)"
done
GPUMEMTRACE_ZSTD_LIB=libgmt-no-such-zstd.so.1 "$GMT_CLI" summary c0.gmt >/dev/null ||
	fail "no libzstd: an uncompressed trace does not read"
echo ok
