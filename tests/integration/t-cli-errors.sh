#!/usr/bin/env bash
# Exit codes and error lines: every error is exactly one line on stderr,
# prefixed "gpumemtrace CMD: " (or "gpumemtrace: " before a command).
. "$(dirname "$0")/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE missing: make unit-tests"

"$MKTRACE" good.gmt <<'T'
header start_mono=100
device ord=0 name=G total=1000
events tid=1
ev api=cudaMalloc t=200 ptr=0x1000 size=10 dev=0
chunk
ev api=cudaMalloc t=300 ptr=0x2000 size=20 dev=0
chunk
note text=bye
trailer t=400
T

# usage
expect_run "no args" 2 '^gpumemtrace: no command given' "$GMT_CLI"
expect_run "unknown command" 2 "^gpumemtrace: unknown command 'frobnicate'" "$GMT_CLI" frobnicate
expect_run "unknown top option" 2 "^gpumemtrace: unknown option '--frob'" "$GMT_CLI" --frob
expect_run "summary no trace" 2 '^gpumemtrace summary: missing TRACE' "$GMT_CLI" summary
expect_run "summary --json no trace" 2 '^gpumemtrace summary: missing TRACE' "$GMT_CLI" summary --json
expect_run "summary bad flag" 2 "^gpumemtrace summary: unknown option '--bogus'" "$GMT_CLI" summary --bogus good.gmt
expect_run "summary --json=1" 2 "^gpumemtrace summary: option '--json' takes no value" "$GMT_CLI" summary --json=1 good.gmt
expect_run "summary two traces" 0 "" "$GMT_CLI" summary good.gmt good.gmt # one row per process (t-report-multi)
expect_run "dump bad flag" 2 "^gpumemtrace dump: unknown option '-x'" "$GMT_CLI" dump -x good.gmt
expect_run "dump no args" 2 '^gpumemtrace dump: missing TRACE' "$GMT_CLI" dump

# help and version: stdout, exit 0
expect_run "--help" 0 "" "$GMT_CLI" --help
grep -q '^  summary' out || fail "--help lists no summary: $(cat out)"
grep -q '4  invalid or corrupt trace' out || fail "--help has no exit codes"
expect_run "help" 0 "" "$GMT_CLI" help
expect_run "help summary" 0 "" "$GMT_CLI" help summary
grep -q 'usage: gpumemtrace summary' out || fail "help summary: $(cat out)"
expect_run "summary --help" 0 "" "$GMT_CLI" summary --help
grep -q -- '--json' out || fail "summary --help: $(cat out)"
expect_run "dump --help" 0 "" "$GMT_CLI" dump --help
expect_run "--version" 0 "" "$GMT_CLI" --version
grep -Eq '^gpumemtrace [0-9]' out || fail "--version: $(cat out)"
expect_run "help nothing" 2 "^gpumemtrace: unknown command 'nothing'" "$GMT_CLI" help nothing

# input that cannot be read: 3
for cmd in summary dump; do
	expect_run "$cmd missing file" 3 "^gpumemtrace $cmd: cannot open nope.gmt: No such file or directory$" \
		"$GMT_CLI" $cmd nope.gmt
done
expect_run "directory" 3 "^gpumemtrace summary: cannot open \.: Is a directory" "$GMT_CLI" summary .
# A FIFO with no writer, or a device: one line and 3 at once, never a hang
# (the open used to block before the check; check says 2, as documented).
mkfifo fifo.gmt
for cmd in summary dump top growth fragmentation oom leaks accounting plot flamegraph; do
	expect_run "$cmd fifo" 3 "^gpumemtrace $cmd: cannot open fifo.gmt: not a regular file$" \
		timeout 5 "$GMT_CLI" $cmd fifo.gmt
done
expect_run "diff fifo" 3 "^gpumemtrace diff: cannot open fifo.gmt: not a regular file$" \
	timeout 5 "$GMT_CLI" diff good.gmt fifo.gmt
expect_run "check fifo" 2 "^gpumemtrace check: cannot open fifo.gmt: not a regular file$" \
	timeout 5 "$GMT_CLI" check --max-peak 1GiB fifo.gmt
expect_run "export fifo" 3 "^gpumemtrace export: cannot open fifo.gmt: not a regular file$" \
	timeout 5 "$GMT_CLI" export --format csv fifo.gmt
expect_run "device" 3 "^gpumemtrace summary: cannot open /dev/null: not a regular file$" \
	timeout 5 "$GMT_CLI" summary /dev/null
if [ "$(id -u)" != 0 ]; then
	cp good.gmt locked.gmt && chmod 000 locked.gmt
	expect_run "permission" 3 '^gpumemtrace summary: cannot open locked.gmt: Permission denied' \
		"$GMT_CLI" summary locked.gmt
fi

# not a trace, corrupt header, future version: 4
echo "just some text, long enough to be a header if it were one; it is not." >text.gmt
expect_run "not a trace" 4 '^gpumemtrace summary: text.gmt: not a trace' "$GMT_CLI" summary --json text.gmt
[ ! -s out ] || fail "not a trace: unexpected stdout"
: >empty.gmt
expect_run "empty file" 4 '^gpumemtrace summary: empty.gmt: not a trace' "$GMT_CLI" summary empty.gmt
head -c 30 good.gmt >short.gmt
expect_run "short header" 4 '^gpumemtrace dump: short.gmt: not a trace: truncated header' "$GMT_CLI" dump short.gmt
"$MKTRACE" future.gmt <<'T'
header version=99
note text="from the future"
T
expect_run "future version" 4 '^gpumemtrace summary: future.gmt: unsupported future version 99' \
	"$GMT_CLI" summary --json future.gmt
expect_run "future version dump" 4 '^gpumemtrace dump: future.gmt: unsupported future version 99' \
	"$GMT_CLI" dump future.gmt
python3 - <<'P'
b = bytearray(open("good.gmt", "rb").read())
b[12] = 2                      # the endianness byte
open("endian.gmt", "wb").write(b)
b = bytearray(open("good.gmt", "rb").read())
mid = b.index(b"GMTC", 64 + 16)  # the second chunk
b[mid + 20] ^= 0x01            # a payload bit
open("flipped.gmt", "wb").write(b)
P
expect_run "corrupt header" 4 '^gpumemtrace summary: endian.gmt: corrupt header' "$GMT_CLI" summary endian.gmt

# corruption mid-file: results for the readable part, one error line, exit 4
expect_run "bit flip" 4 '^gpumemtrace summary: flipped.gmt: corrupt trace: bad chunk at offset [0-9]+ \(CRC mismatch.*\); [0-9]+ bytes unreadable; results cover the readable part$' \
	"$GMT_CLI" summary --json flipped.gmt
cp out flipped.json
expect_eq "flip: complete" "$(json flipped.json 'd["complete"]')" False
expect_eq "flip: corrupt" "$(json flipped.json 'd["corrupt"]')" True
expect_eq "flip: peak" "$(json flipped.json 'd["devices"][0]["peak_bytes"]')" 10

# a torn tail is not an error: exit 0, a warning, complete false
size=$(stat -c %s good.gmt)
for cut in 1 5 17 $((size - $(grep -obUaP 'GMTC' good.gmt | tail -1 | cut -d: -f1) - 1)); do
	head -c $((size - cut)) good.gmt >torn.gmt
	expect_run "torn -$cut" 0 '^gpumemtrace summary: warning: torn.gmt: incomplete trace: torn tail' \
		"$GMT_CLI" summary --json torn.gmt
	cp out torn.json
	expect_eq "torn -$cut: complete" "$(json torn.json 'd["complete"]')" False
	expect_eq "torn -$cut: torn" "$(json torn.json 'd["torn_tail"]')" True
	expect_eq "torn -$cut: peak" "$(json torn.json 'd["devices"][0]["peak_bytes"]')" 30
	expect_eq "torn -$cut: events" "$(json torn.json 'd["events"]')" 2
done
expect_run "torn dump" 0 '^gpumemtrace dump: warning: torn.gmt: incomplete trace: torn tail' "$GMT_CLI" dump torn.gmt
grep -q '^END .*INCOMPLETE.*torn tail' out || fail "torn dump: $(tail -1 out)"
expect_run "torn text" 0 '^gpumemtrace summary: warning:' "$GMT_CLI" summary torn.gmt

# a trace cut at a chunk boundary, before its trailer: a warning too
"$MKTRACE" notrailer.gmt <<'T'
events tid=1
ev api=cudaMalloc t=200 ptr=0x1000 size=10 dev=0
T
expect_run "no trailer" 0 '^gpumemtrace summary: warning: notrailer.gmt: incomplete trace: no trailer' \
	"$GMT_CLI" summary --json notrailer.gmt
expect_eq "no trailer: complete" "$(json out 'd["complete"]')" False
expect_eq "no trailer: torn" "$(json out 'd["torn_tail"]')" False
echo ok
