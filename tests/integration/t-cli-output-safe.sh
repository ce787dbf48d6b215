#!/usr/bin/env bash
# Every file a command writes (-o, --junit): never over a trace it reads,
# never half-written. Before: `export -o T T` cut the trace to 71 bytes,
# `plot -o T T` and `flamegraph -o T T` replaced it with an SVG (exit 0),
# and an output cut short (a full disk, a file size limit) stayed cut.
# Now: a path that is the trace (same name, a symlink, a hard link), or a
# standard output that is, exits 2 with one line and leaves it untouched;
# an output is written to a temporary file beside it and renamed over it,
# so a failed write leaves the old file whole and nothing behind.
. "$TESTS_DIR/integration/lib.sh"
cp "$TESTS_DIR/golden/train.gmt" T.gmt
ln -s T.gmt L.gmt
ln T.gmt H.gmt
sum=$(md5sum <T.gmt)
writers=("export --format csv -o" "export --format perfetto -o" "export --format chrome-json -o" "export --format pprof -o"
	"plot -o" "flamegraph -o" "flamegraph --folded -o" "check --max-peak 1GiB --junit")
for w in "${writers[@]}"; do
	for out in T.gmt L.gmt H.gmt; do
		rc=0
		$GMT_CLI $w $out T.gmt >/dev/null 2>err || rc=$?
		expect_eq "$w $out: exit" $rc 2
		expect_eq "$w $out: stderr lines" "$(wc -l <err)" 1
		grep -qE "^gpumemtrace ${w%% *}: $out is (the trace being read|the same file as the trace T.gmt): choose another output file$" err ||
			fail "$w $out: $(cat err)"
		expect_eq "$w $out: the trace" "$(md5sum <T.gmt)" "$sum"
	done
done
# the baseline of check is a trace read too
rc=0
$GMT_CLI check --max-increase 5 --baseline H.gmt --junit T.gmt "$TESTS_DIR/golden/leak.gmt" \
	>/dev/null 2>err || rc=$?
expect_eq "junit over the baseline: exit" $rc 2
expect_eq "junit over the baseline" "$(md5sum <T.gmt)" "$sum"
# standard output appended to the trace
rc=0
$GMT_CLI export --format csv T.gmt >>T.gmt 2>err || rc=$?
expect_eq "stdout is the trace: exit" $rc 2
grep -q "standard output is the trace T.gmt: give -o FILE" err || fail "stdout: $(cat err)"
expect_eq "stdout is the trace" "$(md5sum <T.gmt)" "$sum"

# A new output gets a new file's mode; an existing one keeps its own; a
# symlink stays a symlink to the new content; /dev/null is written as is.
(umask 027 && $GMT_CLI plot -o new.svg T.gmt)
expect_eq "new file's mode" "$(stat -c %a new.svg)" 640
echo old >kept.svg
chmod 604 kept.svg
$GMT_CLI plot -o kept.svg T.gmt
expect_eq "existing file's mode" "$(stat -c %a kept.svg)" 604
grep -q '^<svg' kept.svg || fail "kept.svg not replaced"
ln -s kept.svg link.svg
$GMT_CLI flamegraph -o link.svg T.gmt
[ -L link.svg ] || fail "the symlink was replaced"
grep -q 'fg-svg' kept.svg || fail "the symlink's target not written"
$GMT_CLI export --format perfetto -o /dev/null T.gmt || fail "/dev/null"
[ -c /dev/null ] || fail "/dev/null replaced"

# A write that fails (a 1 KiB file size limit, SIGXFSZ ignored: EFBIG)
# leaves the old file whole and no temporary file.
printf 'time_s,old\n' >old.csv
rc=0
(ulimit -f 1 && trap '' XFSZ && $GMT_CLI export --format csv -o old.csv T.gmt) 2>err || rc=$?
expect_eq "write error: exit" $rc 3
grep -q "^gpumemtrace export: cannot write old.csv: File too large" err || fail "$(cat err)"
expect_eq "write error: the old file" "$(cat old.csv)" "time_s,old"
left=$(ls -A | grep -v -E '^(T|L|H)\.gmt$|^(new|kept|link)\.svg$|^(old\.csv|err)$' || true)
[ -z "$left" ] || fail "left behind: $left"
echo ok
