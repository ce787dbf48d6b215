#!/bin/bash
# The cost of the framework history on the emulator (issue 26): emu-torch
# SCENARIO under `gpumemtrace run`, with EMU_HISTORY=1 (the caching
# allocator model's history entries, with the emulated script's Python
# lines, and its snapshots written through the library's
# gpumemtrace_fw_*_v1 entry points, as the helper does) and without,
# alternating, ROUNDS each. Figures: CPU seconds (user + sys of the run and
# the emulator, which sleeps between steps: wall time says nothing), the
# trace's bytes, and both per history entry. PyTorch's own recording cost
# (~2 us per entry, its documentation) needs a GPU and is not in it.
# Knobs: SCENARIO (leak-mid), ROUNDS (9), BUILD (build; after make all emu-progs).
set -u
BUILD=$(cd "${BUILD:-build}" && pwd)
SCENARIO=${SCENARIO:-leak-mid} ROUNDS=${ROUNDS:-9}
TMP=$(mktemp -d /tmp/gmt-history-emu.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
echo "load: $(cat /proc/loadavg)"
one() { # history round -> "cpu_seconds bytes" (getrusage of the children: microseconds)
	rm -f "$TMP/$1-$2.gmt"
	env LD_LIBRARY_PATH="$BUILD/sim" SIMCUDA_CAPACITY=8G GPUMEMTRACE_SAMPLE_MS=20 \
		EMU_HISTORY="$1" python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.6f" % (r.ru_utime + r.ru_stime))' "$BUILD/gpumemtrace" run -q --no-follow \
		-o "$TMP/$1-$2.gmt" -- "$BUILD/tests/emu/emu-torch" "$SCENARIO" >"$TMP/cpu"
	echo "$(cat "$TMP/cpu") $(stat -c %s "$TMP/$1-$2.gmt")"
}
for r in $(seq "$ROUNDS"); do
	for h in 0 1; do
		read -r cpu bytes < <(one "$h" "$r")
		echo "round $r history $h: cpu ${cpu}s, trace $bytes bytes"
		echo "$h $cpu $bytes" >>"$TMP/all"
	done
done
entries=$("$BUILD/gpumemtrace" dump "$TMP/1-1.gmt" | grep -cE '^ +#[0-9]+ ')
blocks=$("$BUILD/gpumemtrace" dump "$TMP/1-1.gmt" | grep -cE '^ +block ')
sort -n -k2 "$TMP/all" | awk -v e="$entries" -v b="$blocks" '
	{ cpu[$1] = cpu[$1] " " $2; by[$1] += $3; n[$1]++ }
	END {
		for (h = 0; h <= 1; h++) { split(substr(cpu[h], 2), v, " "); med[h] = v[int((n[h] + 1) / 2)] }
		printf "median cpu: %.4fs without, %.4fs with the history (%+.1f%%); entries %d, blocks %d\n",
			med[0], med[1], 100 * (med[1] - med[0]) / med[0], e, b
		printf "per entry: %.1f us of cpu, %.1f trace bytes (all history records over the entries)\n",
			1e6 * (med[1] - med[0]) / e, (by[1] - by[0]) / n[1] / e
	}'
