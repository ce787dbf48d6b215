# Small thread stacks. The process's first event used about 22 KB of the
# calling thread's stack (the sim's runtime alone: 4 KB), later ones 7 KB,
# and a 20 KiB thread making the process's first CUDA call 10 frames deep
# died (SIGSEGV). The trace is now created on a short-lived thread of ours.
# Required: that 20 KiB thread works; a 16 KiB thread 20 frames deep after
# main created the trace works. Then the figures: a thread's stack painted,
# the bytes its CUDA pair used, traced and untraced (docs/design.md).
. "$TESTS_DIR/integration/lib.sh"
[[ ${SANITIZE:-} != *address* ]] || skip "ASan's redzones and fake stacks change every frame's size"

expect_ok() { # what args...
	local what=$1 rc=0
	shift
	rm -f gpumemtrace.*
	traced "$PROG_DIR/harsh" "$@" >out.txt 2>err.txt || rc=$?
	[ $rc -eq 0 ] && grep -qx ok out.txt || fail "$what: exit $rc, $(cat out.txt err.txt)"
	"$GMT_CLI" summary --json "$(the_trace)" >s.json
	expect_eq "$what: complete" "$(json s.json 'd["complete"]')" True
}
expect_ok "20 KiB thread, 10 frames deep, the process's first CUDA call" stack 20 10
expect_ok "16 KiB thread, 20 frames deep, after main's" stack 16 20 late

untraced "$PROG_DIR/harsh" paint 256 >u-first
untraced "$PROG_DIR/harsh" paint 256 late >u-late
rm -f gpumemtrace.*
traced "$PROG_DIR/harsh" paint 256 >t-first
rm -f gpumemtrace.*
traced "$PROG_DIR/harsh" paint 256 late >t-late
echo "stack used by a cudaMalloc/cudaFree pair, bytes: first call untraced $(cat u-first)," \
	"traced $(cat t-first); later untraced $(cat u-late), traced $(cat t-late)"
# Bounds with some room over today's figures (10.2 KB and 7.2 KB): before
# the first was 22 KB.
[ "$(cat t-first)" -le 14336 ] || fail "the first event uses $(cat t-first) bytes of stack"
[ "$(cat t-late)" -le 9216 ] || fail "a later event uses $(cat t-late) bytes of stack"
echo ok
