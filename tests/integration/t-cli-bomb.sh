#!/usr/bin/env bash
# A decompression bomb: a 3 KB trace whose two zstd chunks expand to 32 MiB,
# 4.2M cudaMalloc events never freed. Before the cap, summary held all of
# them live (405 MB RSS, 6 s) and export wrote 486 MB of JSON. Now the
# reader stops at the first chunk that would take the file past 256 times
# its size on disk: every command exits 4 (check 2) with one line naming
# GPUMEMTRACE_MAX_EXPANSION, before decompressing it. A real compressed
# trace still reads, and the variable moves the limit.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/integration/cli-commands.sh"
cli_commands_cover
python3 -c 'import ctypes; ctypes.CDLL("libzstd.so.1")' 2>/dev/null || skip "no libzstd.so.1"
MKTRACE=$BUILD/tests/unit-tools/mktrace
"$MKTRACE" head.gmt <<T
header start_mono=1000000000 pid=51
process pid=51 ppid=1 exe=/bin/prog arg=prog
device ord=0 name=sim total=0x40000000
T
python3 "$TESTS_DIR/zstd/gmtz.py" bomb head.gmt bomb.gmt 2
size=$(stat -c %s bomb.gmt)
[ "$size" -lt 8192 ] || fail "the bomb is $size bytes"

for cmd in "${cli_commands[@]}"; do
	args=(bomb.gmt)
	[ "$cmd" = diff ] && args=(bomb.gmt bomb.gmt)
	rc=0
	timeout 60 $GMT_CLI $cmd "${args[@]}" >out 2>err || rc=$?
	want=4
	[ "${cmd%% *}" = check ] && want=2
	expect_eq "$cmd: exit" $rc $want
	expect_eq "$cmd: stderr lines" "$(sort -u err | wc -l)" 1
	grep -q "^gpumemtrace ${cmd%% *}: bomb.gmt: corrupt trace: .*decompress to more than 256 times the file's $size bytes.*GPUMEMTRACE_MAX_EXPANSION=0" err ||
		fail "$cmd: $(cat err)"
	# nothing of the bomb's events was read (what is written is the head)
	out_size=$(stat -c %s out)
	for f in p.svg f.svg p.pb.gz named.gmt; do
		[ -f $f ] && out_size=$((out_size + $(stat -c %s $f))) && rm -f $f
	done
	[ "$out_size" -lt 100000 ] || fail "$cmd wrote $out_size bytes"
done
$GMT_CLI summary --json bomb.gmt >s.json 2>/dev/null || true
expect_eq "events read" "$(json s.json "d['events']")" 0

# A real compressed trace (the golden train.gmt, every chunk GMTZ) reads as
# before; a factor of 1 refuses it, with the factor in the line.
python3 "$TESTS_DIR/zstd/gmtz.py" compress "$TESTS_DIR/golden/train.gmt" z.gmt
$GMT_CLI summary z.gmt >/dev/null 2>err || fail "compressed golden: $(cat err)"
[ ! -s err ] || fail "compressed golden: $(cat err)"
rc=0
GPUMEMTRACE_MAX_EXPANSION=1 $GMT_CLI summary z.gmt >/dev/null 2>err || rc=$?
expect_eq "factor 1: exit" $rc 4
grep -q "more than 1 times the file's" err || fail "factor 1: $(cat err)"
# a bad value: one line, and the default
GPUMEMTRACE_MAX_EXPANSION=lots $GMT_CLI summary z.gmt >/dev/null 2>err || fail "bad value: exit"
expect_eq "bad value" "$(cat err)" \
	"gpumemtrace: ignoring GPUMEMTRACE_MAX_EXPANSION='lots' (want 0, no limit, or a factor up to 1000000000); using 256"
echo ok
