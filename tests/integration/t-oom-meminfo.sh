# A failed allocation is followed by what cuMemGetInfo said on the failing
# thread (MEMINFO), so `oom` can tell fragmentation from exhaustion.
. "$TESTS_DIR/integration/lib.sh"
SIMCUDA_CAPACITY=$((64 << 20)) traced "$PROG_DIR/oom" >/dev/null
t=$(the_trace)
"$GMT_CLI" dump "$t" >dump.txt
# The failing thread's next record is its MEMINFO; a chunk boundary, an NVML
# sample or a stack node may stand between them in the file (the flush thread
# cuts chunks by time, so where depends on the load).
meminfo=$(awk '/FAILED 2 / { for (i = 1; i <= NF; i++) if ($i == "tid") t = $(i + 1); want = 1; next }
	want && $0 ~ (" tid " t " ") { print; exit }' dump.txt)
case "$meminfo" in
*"MEMINFO "*" dev 0 free 0 (0 B) total 67108864 (64.0 MiB) after cudaMalloc") ;;
*) fail "no MEMINFO after the failed cudaMalloc: the failing thread's next record is '$meminfo'" ;;
esac
expect_eq "one snapshot per OOM" "$(grep -c '^@[0-9]* *MEMINFO' dump.txt)" "$(grep -c 'FAILED 2 ' dump.txt)"
# Failures that are not out-of-memory take no snapshot.
traced "$PROG_DIR/early-calls" >/dev/null 2>&1 || true
for f in gpumemtrace.*.gmt; do
	[ "$f" = "$t" ] && continue
	if "$GMT_CLI" dump "$f" | grep -q MEMINFO; then fail "MEMINFO without an OOM in $f"; fi
done
echo ok
