# More events than the reader's reorder window holds (512Ki): one thread
# (its sorted run wraps around, then grows to the window), then two
# threads whose batches interleave (the heap takes the stragglers). Every
# event comes out exactly once.
. "$TESTS_DIR/integration/lib.sh"
for run in "1 300000" "2 200000"; do
	set -- $run
	rm -f gpumemtrace.*.gmt
	traced "$PROG_DIR/threads" "$1" "$2" >/dev/null
	"$GMT_CLI" summary --json "$(the_trace)" >s.json || fail "summary of $1 thread(s) failed ($?)"
	calls=$(($1 * $2))
	expect_eq "cudaMalloc calls, $1 thread(s)" "$(json s.json 'd["calls"]["cudaMalloc"]["count"]')" $calls
	expect_eq "cudaFree calls, $1 thread(s)" "$(json s.json 'd["calls"]["cudaFree"]["count"]')" $calls
done
echo ok
