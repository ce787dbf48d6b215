# CUDA unloaded and loaded again (tests/progs/reload-main.c): a plugin linked
# against the runtime, and the driver opened by dlopen and dlsym, are each
# opened, used, closed (unloading them) and opened again, their old code
# range now mapped by the program. The tracer must call the new load, never
# a pointer it cached into the unloaded one (nor a stale driver handle), and
# record the allocations of both loads.
. "$TESTS_DIR/integration/lib.sh"
for how in runtime driver; do
	args=("$how")
	[ $how = runtime ] && args+=("$PROG_DIR/libreload-plugin.so")
	rc=0
	untraced "$PROG_DIR/reload-main" "${args[@]}" >plain.txt 2>plain.err || rc=$?
	[ $rc -eq 3 ] && skip "cannot map an unloaded object's range (MAP_FIXED_NOREPLACE): $(cat plain.err)"
	[ $rc -eq 0 ] || fail "$how: untraced run failed ($rc): $(cat plain.txt plain.err)"
	rm -f gpumemtrace.*.gmt
	rc=0
	traced "$PROG_DIR/reload-main" "${args[@]}" >traced.txt 2>traced.err || rc=$?
	[ $rc -eq 0 ] || fail "$how: traced run failed ($rc, untraced 0): $(cat traced.txt traced.err)"
	cmp plain.txt traced.txt || fail "$how: output changed: $(cat traced.txt)"
	"$GMT_CLI" summary --json "$(the_trace)" >s.json
	alloc=cudaMalloc free=cudaFree
	[ $how = driver ] && alloc=cuMemAlloc_v2 free=cuMemFree_v2
	expect_eq "$how: $alloc calls" "$(json s.json "d['calls']['$alloc']['count']")" 6
	expect_eq "$how: failed $alloc calls" "$(json s.json "d['calls']['$alloc']['failed']")" 0
	# 3 x 1 MiB through the first load, 3 x 2 MiB through the second.
	expect_eq "$how: bytes allocated" "$(json s.json "d['calls']['$alloc']['bytes']")" 9437184
	expect_eq "$how: $free calls" "$(json s.json "d['calls']['$free']['count']")" 6
done
echo ok
