# A thread with a cancellation pending makes a CUDA call (the process's
# first, then one after its own first): the cancellation acts at the
# thread's next cancellation point, as untraced, never inside the tracer
# (it acted in open() as the first event made the file, or in libunwind's
# read of a pipe, leaving our setup lock and the runtime's held: the next
# CUDA call hung). Same output and exit code as untraced, trace complete.
. "$TESTS_DIR/integration/lib.sh"
# ASan reports a stack-buffer-underflow as a cancelled thread ends, untraced
# too: the unwinding leaves its frames poisoned (an ASan limitation).
[[ ${SANITIZE:-} != *address* ]] || skip "ASan misreads a cancelled thread's end, untraced too"

for mode in cancel-first cancel-later; do
	rm -f gpumemtrace.*
	set +e
	untraced timeout 20 "$PROG_DIR/ends" "$mode" >untraced.out
	rc_u=$?
	traced timeout 20 "$PROG_DIR/ends" "$mode" >traced.out
	rc=$?
	set -e
	expect_eq "$mode untraced exit code" "$rc_u" 0
	expect_eq "$mode traced exit code (124: hung)" "$rc" "$rc_u"
	diff -u untraced.out traced.out || fail "$mode: output differs"
	t=$(the_trace)
	"$GMT_CLI" summary --json "$t" >s.json
	expect_eq "$mode complete" "$(json s.json 'd["complete"]')" True
	want=2 # both cudaMallocs
	[ "$mode" = cancel-later ] && want=4 # and the thread's first pair
	expect_eq "$mode cudaMalloc+cudaFree" \
		"$(json s.json 'sum(d["calls"].get(n, {}).get("count", 0) for n in ("cudaMalloc", "cudaFree"))')" $want
done
echo ok
