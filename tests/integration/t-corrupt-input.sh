# Every command on truncated, bit-flipped, oversized-count and wrong-version
# traces: a documented exit code (0 with a warning for a torn tail, 3, 4),
# a one-line "gpumemtrace CMD: ..." error when it fails, never a signal.
. "$TESTS_DIR/integration/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
. "$TESTS_DIR/integration/cli-commands.sh"
commands=("${cli_commands[@]}")
cli_commands_cover

runs=0
try() { # file what
	for cmd in "${commands[@]}"; do
		local args=("$1") rc=0
		[ "$cmd" = diff ] && args=("$1" "$1")
		$GMT_CLI $cmd "${args[@]}" >/dev/null 2>err.txt || rc=$?
		runs=$((runs + 1))
		# check maps every error to 2 (docs/cli.md): 1 stays "a check failed"
		[ "${cmd%% *}" = check ] && [ $rc -eq 2 ] && rc=4
		case $rc in
		0 | 1) ;;
		3 | 4)
			# one line per trace given: diff reads two
			expect_eq "$2 / $cmd: stderr lines" "$(grep -v ': warning: ' err.txt | sort -u | wc -l)" 1
			grep -q "^gpumemtrace ${cmd%% *}: " err.txt || fail "$2 / $cmd: $(cat err.txt)"
			;;
		*) fail "$2 / $cmd: exit $rc: $(tail -3 err.txt)" ;;
		esac
	done
}

traced "$PROG_DIR/stress" threads 2 2000 >/dev/null
good=$(the_trace)
mv "$good" good.gmt
size=$(stat -c %s good.gmt)
try good.gmt good

# Truncated anywhere: inside the header, a chunk header, a payload.
for cut in 0 20 64 100 $((size / 2)) $((size - 1)); do
	head -c $cut good.gmt >cut.gmt
	try cut.gmt "truncated at $cut"
done

# One bit flipped: header fields, chunk headers, payloads (CRC catches these).
for off in 0 8 10 12 64 68 76 $((size / 2)); do
	python3 -c 'import sys
b = bytearray(open("good.gmt", "rb").read()); b[int(sys.argv[1])] ^= 0x10
open("flip.gmt", "wb").write(b)' $off
	try flip.gmt "bit flipped at $off"
done

# A damaged zstd layer behind a good CRC: good.gmt has compressed chunks
# wherever libzstd.so.1 is installed (t-zstd.sh covers the messages). The
# flush thread compresses: on a loaded machine the program may end before
# it first runs, leaving every chunk raw, so record until two are compressed.
if python3 -c 'import ctypes; ctypes.CDLL("libzstd.so.1")' 2>/dev/null; then
	zgood=good.gmt
	for i in 1 2 3 4 5; do
		[ "$("$GMT_CLI" dump "$zgood" | grep -c ' zstd raw ' || true)" -ge 2 ] && break
		rm -f gpumemtrace.*.gmt
		GPUMEMTRACE_FLUSH_MS=1 traced "$PROG_DIR/stress" threads 2 2000 >/dev/null
		zgood=zgood.gmt
		mv "$(the_trace)" "$zgood"
	done
	for how in magic frame cut rawlen; do
		python3 "$TESTS_DIR/zstd/gmtz.py" damage "$zgood" z.gmt $how
		try z.gmt "zstd $how"
	done
fi

# Wrong versions (the next one, and far ahead), a huge header size.
cur=$(sed -n 's/^#define GMT_FORMAT_VERSION[[:space:]][[:space:]]*\([0-9]*\).*/\1/p' "$TESTS_DIR/../include/gpumemtrace/format.h")
for v in $((cur + 1)) 99 65535; do
	"$MKTRACE" v.gmt <<<"header version=$v" || fail "mktrace"
	rc=0
	$GMT_CLI summary v.gmt 2>err.txt >/dev/null || rc=$?
	expect_eq "version $v exit" $rc 4
	grep -q "version" err.txt || fail "version $v: $(cat err.txt)"
	try v.gmt "version $v"
done
printf 'header header_size=65535\n' | "$MKTRACE" hs.gmt && try hs.gmt "header size"

# Oversized counts and lengths with a valid CRC: every record tag followed by
# varints at their maximum, so only the parser's bounds checks stand between.
for tag in $(seq 1 15); do
	hex=$(printf '%02x' $tag)
	printf 'raw %sffffffffffffffffff01ffffffffffffffffff01ffffffff0f\n' "$hex" | "$MKTRACE" big.gmt
	try big.gmt "oversized tag $tag"
done
echo "$runs runs ok"
