# The reader's worker thread (GPUMEMTRACE_READER_THREADS=1) against the
# serial reader (=0): the same stdout, stderr and exit code for several
# commands on good, torn, corrupt, unknown-tag and damaged-zstd traces, each
# of many chunks so that the worker prepares ahead of the one being read.
. "$TESTS_DIR/integration/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
commands=(dump "summary --json" leaks growth)

traced "$PROG_DIR/stress" threads 2 100000 >/dev/null
mv "$(the_trace)" good.gmt
size=$(stat -c %s good.gmt)
chunks=$($GMT_CLI dump good.gmt | grep -c ' CHUNK #' || true)
[ "$chunks" -ge 8 ] || fail "good.gmt: $chunks chunks, want several"

flip() { # src dst offset
	python3 -c 'import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[int(sys.argv[3])] ^= 0x10
open(sys.argv[2], "wb").write(b)' "$@"
}
traces=(good.gmt "$TESTS_DIR"/golden/*.gmt "$TESTS_DIR"/fuzz/regressions/*.gmt)
head -c $((size / 2)) good.gmt >cut-half.gmt
head -c $((size - 3)) good.gmt >cut-end.gmt
flip good.gmt flip-mid.gmt $((size / 2))
flip good.gmt flip-late.gmt $((size - size / 5))
cp good.gmt zero-tail.gmt && head -c 5000 /dev/zero >>zero-tail.gmt
traces+=(cut-half.gmt cut-end.gmt flip-mid.gmt flip-late.gmt zero-tail.gmt)
if python3 -c 'import ctypes; ctypes.CDLL("libzstd.so.1")' 2>/dev/null; then
	for how in magic frame cut rawlen; do
		python3 "$TESTS_DIR/zstd/gmtz.py" damage good.gmt "z-$how.gmt" $how
		traces+=("z-$how.gmt")
	done
fi
# an unknown tag cuts its chunk short; the chunks after it still count
{
	echo "thread tid=1 name=a"
	for i in $(seq 1 6); do
		echo "events tid=1 base=$((i * 1000))"
		echo "ev api=cudaMalloc t=$((i * 1000 + 1)) ptr=0x$((i * 1000)) size=4096"
		[ $i = 3 ] && echo "raw 3f0102"
		echo "chunk"
	done
	echo "trailer t=9000 events=6 lost=0 nodes=0"
} | "$MKTRACE" unknown.gmt || fail mktrace
traces+=(unknown.gmt)

runs=0
for t in "${traces[@]}"; do
	for cmd in "${commands[@]}"; do
		for n in 0 1; do
			rc=0
			GPUMEMTRACE_READER_THREADS=$n $GMT_CLI $cmd "$t" >"out$n.txt" 2>"err$n.txt" || rc=$?
			echo "$rc" >"rc$n.txt"
		done
		for f in out rc err; do
			cmp -s "${f}0.txt" "${f}1.txt" ||
				fail "$(basename "$t") / $cmd: $f differs with the worker: $(diff "${f}0.txt" "${f}1.txt" | head -5)"
		done
		runs=$((runs + 1))
	done
done
# the corrupt ones above did stop the reader (and say so)
GPUMEMTRACE_READER_THREADS=1 $GMT_CLI summary flip-mid.gmt >/dev/null 2>err.txt || true
grep -q "CRC mismatch" err.txt || fail "flip-mid: $(cat err.txt)"
GPUMEMTRACE_READER_THREADS=1 $GMT_CLI dump unknown.gmt >d.txt 2>&1 || true
grep -qi "unknown" d.txt || fail "unknown.gmt: no unknown-tag note: $(tail -3 d.txt)"
# A bad value: one line on stderr, the default used, the same output.
GPUMEMTRACE_READER_THREADS=yes $GMT_CLI summary flip-mid.gmt >bad.txt 2>bad-err.txt || true
$GMT_CLI summary flip-mid.gmt >good.txt 2>good-err.txt || true
cmp -s bad.txt good.txt || fail "a bad GPUMEMTRACE_READER_THREADS changed the output"
expect_eq "bad GPUMEMTRACE_READER_THREADS: stderr lines" "$(wc -l <bad-err.txt)" $(($(wc -l <good-err.txt) + 1))
grep -q "^gpumemtrace: ignoring GPUMEMTRACE_READER_THREADS='yes' (want 0 or 1)$" bad-err.txt ||
	fail "bad GPUMEMTRACE_READER_THREADS: $(cat bad-err.txt)"
echo "$runs comparisons ok"
