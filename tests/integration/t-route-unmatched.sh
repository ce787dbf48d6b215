# When a lookup hands out a function that is none of the exported variants
# the tracer wraps, calls through it cannot be traced: the trace says so in
# a NOTE instead of losing them silently. Legacy ABIs are not reported.
. "$TESTS_DIR/integration/lib.sh"
SIMCUDA_HIDDEN_ENTRY=cuMemFree traced "$PROG_DIR/life" exit 4
t=$(the_trace)
"$GMT_CLI" dump "$t" >dump.txt
grep -q 'NOTE warning "a lookup of cuMemFree returned 0x[0-9a-f]*, none of the variants gpumemtrace wraps' dump.txt ||
	fail "no NOTE about the unwrappable cuMemFree: $(grep NOTE dump.txt)"
rm -f gpumemtrace.*
# The legacy 32-bit cuMemAlloc (asked for below 3020) is deliberately unwrapped: no note
# (but the clock's, which a run slowed down by a loaded machine may have).
traced "$PROG_DIR/procaddr-route" >/dev/null
for f in gpumemtrace.*.gmt; do
	notes=$("$GMT_CLI" dump "$f" | grep NOTE | grep -v 'NOTE info "clock: ' || true)
	[ -z "$notes" ] || fail "unexpected NOTE: $notes"
done
echo ok
