# Faults while writing: a file size limit, a full filesystem, a folder that
# cannot be written, the file deleted or truncated under us. Each: exactly
# one warning, stdout and exit code those of an untraced run, and what was
# written reads up to its last good chunk, reported incomplete.
. "$TESTS_DIR/integration/lib.sh"
# The size limits below must be well under the trace: 10 rounds (2000
# events) make ~7 KiB even with compressed chunks (3 rounds made 4.1 KiB,
# which a 4 KiB tmpfs sometimes held whole).
untraced "$PROG_DIR/stress" sabotage none 10 >plain.out 2>plain.err || fail "untraced run failed"

same_as_untraced() { # what: compares t.out / t.err / rc with the untraced run
	[ "$rc" -eq 0 ] || fail "$1: exit code $rc"
	cmp -s plain.out t.out || fail "$1: stdout changed: $(cat t.out)"
	expect_eq "$1: warning lines" "$(grep -c '^gpumemtrace: ' t.err)" 1
	expect_eq "$1: other stderr" "$(grep -vc '^gpumemtrace: ' t.err)" 0
}

readable_incomplete() { # what trace
	"$GMT_CLI" summary --json "$2" >s.json 2>s.err || fail "$1: summary exit $?: $(cat s.err)"
	expect_eq "$1: complete" "$(json s.json 'd["complete"]')" False
	grep -q "incomplete trace" s.err || fail "$1: no incomplete warning: $(cat s.err)"
}

# RLIMIT_FSIZE of 4 KiB: the write fails with EFBIG (and SIGXFSZ must not kill us).
rc=0
(ulimit -f 4 && traced "$PROG_DIR/stress" sabotage none 10 >t.out 2>t.err) || rc=$?
same_as_untraced "ulimit -f"
grep -q "File too large" t.err || fail "ulimit -f: $(cat t.err)"
readable_incomplete "ulimit -f" "$(the_trace)"
[ "$(json s.json 'd["events"]')" -gt 0 ] || fail "ulimit -f: no event readable"
rm -f gpumemtrace.*

# A full filesystem: a 4 KiB tmpfs, where mounting is allowed.
mkdir -p small
if mount -t tmpfs -o size=4k tmpfs small 2>/dev/null; then
	rc=0
	GPUMEMTRACE_OUTPUT=small/t.gmt traced "$PROG_DIR/stress" sabotage none 10 >t.out 2>t.err || rc=$?
	cp small/t.gmt full.gmt
	umount small
	same_as_untraced "full disk"
	grep -q "No space left" t.err || fail "full disk: $(cat t.err)"
	readable_incomplete "full disk" full.gmt
else
	echo "full disk: cannot mount a tmpfs here; covered by ulimit -f only"
fi

# A folder that cannot be written (even by root: /proc).
rc=0
GPUMEMTRACE_OUTPUT=/proc/self/x.gmt traced "$PROG_DIR/stress" sabotage none 10 >t.out 2>t.err || rc=$?
same_as_untraced "unwritable folder"
grep -q "tracing is off" t.err || fail "unwritable: $(cat t.err)"

# Deleted, then truncated, between two flushes.
untraced "$PROG_DIR/stress" sabotage delete >plain.out 2>plain.err
rc=0
traced "$PROG_DIR/stress" sabotage delete >t.out 2>t.err || rc=$?
same_as_untraced "deleted"
grep -q "was deleted under us" t.err || fail "deleted: $(cat t.err)"
[ -z "$(ls gpumemtrace.* 2>/dev/null)" ] || fail "deleted: a trace came back"

untraced "$PROG_DIR/stress" sabotage truncate >plain.out 2>plain.err
rc=0
traced "$PROG_DIR/stress" sabotage truncate >t.out 2>t.err || rc=$?
same_as_untraced "truncated"
grep -q "was truncated under us" t.err || fail "truncated: $(cat t.err)"
t=$(the_trace)
expect_eq "truncated: size" "$(stat -c %s "$t")" 100
readable_incomplete "truncated" "$t"
echo ok
