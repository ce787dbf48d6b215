# A MODULE path that names a FIFO (or a device, or a folder) is never
# opened: every report that names frames, and symbolize, end at once with
# the frames as module+offset (the reader's open of a FIFO blocked for good:
# summary, top, leaks and flamegraph hung), and symbolize says why.
. "$TESTS_DIR/integration/lib.sh"
mkfifo fifo
mkdir folder
for path in "$PWD/fifo" /dev/zero "$PWD/folder"; do
	cat >t.txt <<EOT
process pid=1 ppid=0 exe=/bin/x
module id=1 bias=0x400000 start=0x400000 end=0x500000 path=$path buildid=0102030405
stack parent=0 ip=0x401000 parent=1 ip=0x402000
events tid=1 base=1000
ev api=cudaMalloc t=1000 ptr=0x7000000000 size=4096 dev=0 stack=2
trailer t=2000
EOT
	"$BUILD/tests/unit-tools/mktrace" t.gmt <t.txt
	for cmd in summary top leaks growth oom explain "flamegraph --folded" "export --format csv" \
		"export --format pprof -o p.pb" symbolize; do
		rc=0
		# shellcheck disable=SC2086
		timeout 60 "$GMT_CLI" $cmd t.gmt >out.txt 2>err.txt || rc=$?
		[ $rc -ne 124 ] || fail "$cmd hangs on a module path that is $path"
		[ $rc -eq 0 ] || fail "$cmd, module path $path: exit $rc: $(cat err.txt)"
	done
	grep -q "2 frames left unnamed in $path: its path is not a regular file" out.txt ||
		fail "symbolize does not say why ($path): $(cat out.txt)"
	"$GMT_CLI" top t.gmt | grep -q "$(basename "$path")+0x2000 <- " || fail "not module+offset ($path)"
done
echo ok
