# A library opened with RTLD_DEEPBIND or into a new dlmopen namespace binds
# its dlsym to libc's, so its CUDA calls bypass the tracer. We do not cover
# it (its allocation is not in the trace); we detect it: a NOTE naming the
# library, shown by summary and summary --json. Results and dlerror unchanged.
. "$TESTS_DIR/integration/lib.sh"
hows="plain deepbind dlmopen"
# ASan refuses RTLD_DEEPBIND (google/sanitizers#611) and a second copy of
# itself in a new dlmopen namespace: under ASan only the plain case runs.
[[ ${SANITIZE:-} == *address* ]] && hows=plain && echo "ASan: DEEPBIND and dlmopen not tested"
for how in $hows; do
	rm -f gpumemtrace.*
	untraced "$PROG_DIR/bypass-main" $how >want.txt || fail "$how: untraced run failed"
	traced "$PROG_DIR/bypass-main" $how >got.txt 2>err.txt || fail "$how: traced run failed"
	cmp -s want.txt got.txt || fail "$how: output changed: $(cat got.txt)"
	[ ! -s err.txt ] || fail "$how: stderr: $(cat err.txt)"
	t=$(the_trace)
	"$GMT_CLI" summary --json "$t" >s.json
	"$GMT_CLI" summary "$t" >s.txt
	allocs=$(json s.json 'd["calls"]["cudaMalloc"]["count"]')
	if [ $how = plain ]; then
		expect_eq "plain: allocations traced" "$allocs" 2
		grep -q "notes from the tracer" s.txt && fail "plain: unexpected notes"
		continue
	fi
	expect_eq "$how: allocations traced" "$allocs" 1
	expect_eq "$how: notes" "$(json s.json 'len([n for n in d["notes"] if "libbypass.so" in n])')" 1
	grep -A1 "notes from the tracer" s.txt | grep -q "libbypass.so opened with" ||
		fail "$how: summary does not show the note: $(cat s.txt)"
done
echo ok
