# A trace with a whole chunk cut out or repeated (every CRC good) is
# damaged, never complete: the chunk sequence numbers and the trailer's
# event count give it away. Every report says so (a "damaged trace" line,
# exit 4; "complete": false and "damaged" in --json); check fails with 2
# (its code for every error). Undamaged traces still read complete.
. "$TESTS_DIR/integration/lib.sh"
V=$TESTS_DIR/real/2026-11-22-h100
G=$TESTS_DIR/golden

# chunkedit SRC DST cut|dup N: drops or repeats chunk N (docs/trace-format.md)
chunkedit() {
	python3 - "$@" <<'PY'
import struct, sys
src, dst, op, idx = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
b = open(src, 'rb').read()
hs = struct.unpack_from('<H', b, 10)[0]
chunks, off = [], hs
while off + 16 <= len(b):
    n = struct.unpack_from('<I', b, off + 4)[0]
    chunks.append(b[off:off + 16 + n])
    off += 16 + n
assert off == len(b) and 0 <= idx < len(chunks)
if op == 'cut':
    del chunks[idx]
else:
    chunks.insert(idx, chunks[idx])
open(dst, 'wb').write(b[:hs] + b''.join(chunks))
PY
}

damaged() { # file why-substring
	local rc=0
	$GMT_CLI summary "$1" >s.txt 2>err.txt || rc=$?
	expect_eq "$1: summary exit" $rc 4
	grep -q "(format [0-9]*, INCOMPLETE: damaged)" s.txt || fail "$1: $(head -1 s.txt)"
	expect_eq "$1: stderr" "$(wc -l <err.txt)" 1
	grep -q "^gpumemtrace summary: $1: damaged trace: .*$2" err.txt || fail "$1: $(cat err.txt)"
	rc=0
	$GMT_CLI summary --json "$1" >s.json 2>/dev/null || rc=$?
	expect_eq "$1: summary --json exit" $rc 4
	expect_eq "$1: json complete" "$(json s.json 'd["complete"]')" False
	json s.json 'd["damaged"]' | grep -q "$2" || fail "$1: json damaged: $(json s.json 'd.get("damaged")')"
	rc=0
	$GMT_CLI growth --json "$1" >g.json 2>/dev/null || rc=$?
	expect_eq "$1: growth exit" $rc 4
	expect_eq "$1: growth json complete" "$(json g.json 'd["traces"][0]["complete"]')" False
	rc=0
	$GMT_CLI check --max-peak 100MiB "$1" >c.txt 2>err.txt || rc=$?
	expect_eq "$1: check exit" $rc 2
	grep -q "^gpumemtrace check: $1: damaged trace" err.txt || fail "$1: check: $(cat err.txt)"
	! grep -q PASS c.txt || fail "$1: check passed: $(cat c.txt)"
}

# The issue's case: chunk 8 of this trace holds 590 of its 1,571 events
# (peak 470 MiB). Cut, the rest read "complete" and check passed at 0 B.
cp "$V/nccl.969.gmt" nccl.gmt
rc=0
$GMT_CLI check --max-peak 100MiB nccl.gmt >/dev/null 2>&1 || rc=$?
expect_eq "undamaged check exit" $rc 1
$GMT_CLI summary --json nccl.gmt >s.json 2>err.txt
expect_eq "undamaged complete" "$(json s.json 'd["complete"]')" True
expect_eq "undamaged damaged key" "$(json s.json '"damaged" in d')" False
[ ! -s err.txt ] || fail "undamaged: $(cat err.txt)"

chunkedit nccl.gmt cut.gmt cut 8
damaged cut.gmt "1 chunk sequence gap.*981 events read, the trailer counts 1571"
chunkedit nccl.gmt dup.gmt dup 8
damaged dup.gmt "1 chunk repeated.*2161 events read, the trailer counts 1571"
chunkedit nccl.gmt meta.gmt cut 1 # no events in it: only its seq tells
damaged meta.gmt "1 chunk sequence gap"
chunkedit nccl.gmt first.gmt cut 0 # the first chunk is seq 0
damaged first.gmt "1 chunk sequence gap"
rc=0
$GMT_CLI dump dup.gmt >d.txt 2>/dev/null || rc=$?
expect_eq "dump exit" $rc 4
tail -1 d.txt | grep -q "INCOMPLETE (damaged).*1 chunks repeated" || fail "dump: $(tail -1 d.txt)"

# A golden trace, both ways.
cp "$G/train.gmt" train.gmt
chunkedit train.gmt tcut.gmt cut 1
damaged tcut.gmt "sequence gap"
chunkedit train.gmt tdup.gmt dup 1
damaged tdup.gmt "repeated"
$GMT_CLI summary train.gmt >s.txt 2>err.txt
head -1 s.txt | grep -q "(format [0-9]*, complete)" || fail "train.gmt: $(head -1 s.txt)"
[ ! -s err.txt ] || fail "train.gmt: $(cat err.txt)"
echo ok
