#!/bin/bash
# The benchmarks behind docs/performance.md. `make bench` runs them all;
# `make bench BENCH="hook size"` runs some. Parts:
#   hook        added ns per alloc+free pair at call depth 8/32/64, built
#               with and without frame pointers: untraced, stacks off,
#               default depth; anchors in the same rounds: heaptrack on
#               malloc+free at the same depth, and a bare unw_backtrace loop
#   throughput  events/s and events lost, 1/2/8/16 threads
#   size        bytes per event on disk, realistic workload, vs heaptrack
#   reader      `gpumemtrace summary` events/s and peak RSS vs heaptrack_print
#   rss         peak RSS of every command and export format at RSS_EVENTS
#               (1M and 20M events): flat when memory follows live
#               allocations and stacks, not events
#   exports     each export format: CPU per event (to /dev/null and to a
#               file) and bytes per event, with summary's CPU in the same
#               round as the anchor, at EXPORT_EVENTS (1M)
# Knobs (environment): ROUNDS (5), PAIRS (300000), READER_EVENTS (20000000),
# READER_ROUNDS (3), RSS_EVENTS ("1000000 20000000"), EXPORT_EVENTS (1000000).
# Results: printed, and written to bench/results/PART.txt.
set -u
BUILD=${BUILD:-$(pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RESULTS=$ROOT/bench/results
ROUNDS=${ROUNDS:-5}
PAIRS=${PAIRS:-300000}
READER_EVENTS=${READER_EVENTS:-20000000}
READER_ROUNDS=${READER_ROUNDS:-3}
LIB=$BUILD/libgpumemtrace.so
CLI=$BUILD/gpumemtrace
B=$BUILD/bench
export LD_LIBRARY_PATH=$BUILD/sim
TMP=$(mktemp -d /tmp/gmt-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$RESULTS"

HEAPTRACK=$(command -v heaptrack || true)
HEAPTRACK_PRINT=$(command -v heaptrack_print || true)
[ -n "$HEAPTRACK" ] || echo "bench: heaptrack not installed (apt-get install heaptrack): its anchors are skipped"

machine() {
	echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')," \
		"$(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+dirty')"
}

# median, min, max of the numbers on stdin
stats() { sort -g | awk -v f="${1:-%.0f}" '{v[NR]=$1} END {if (!NR) {print "- - -"; exit}
	m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf f " " f " " f "\n", m, v[1], v[NR]}'; }

ns() { sed -n 's/^ns_per_pair=\([0-9.]*\).*/\1/p'; }
# "WALL CPU": the loop's wall ns and the calling thread's CPU ns per pair.
ns_cpu() { sed -n 's/^ns_per_pair=\([0-9.]*\) cpu_ns_per_pair=\([0-9.]*\).*/\1 \2/p'; }

traced() { # traced OUTFILE ENV... -- PROG ARGS
	local out=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	rm -f "$out"
	env "${envs[@]}" GPUMEMTRACE_OUTPUT="$out" LD_PRELOAD="$LIB" "$@"
}

part_hook() {
	local f=$TMP/hook
	: >"$f"
	for round in $(seq "$ROUNDS"); do
		for variant in fp nofp; do
			local prog=$B/hookcost-$variant
			for d in 8 32 64; do
				# One round runs every configuration once: the noise of a
				# shared machine lands on all of them alike.
				read -r u uc < <("$prog" cuda "$d" "$PAIRS" | ns_cpu)
				read -r s0 s0c < <(traced "$TMP/t.gmt" GPUMEMTRACE_STACK_DEPTH=0 -- "$prog" cuda "$d" "$PAIRS" | ns_cpu)
				read -r sd sdc < <(traced "$TMP/t.gmt" -- "$prog" cuda "$d" "$PAIRS" | ns_cpu)
				fl=$("$prog" unw "$d" "$PAIRS" | ns)
				echo "$variant $d off $(echo "$s0 - $u" | bc -l)" >>"$f"
				echo "$variant $d on $(echo "$sd - $u" | bc -l)" >>"$f"
				echo "$variant $d offcpu $(echo "$s0c - $uc" | bc -l)" >>"$f"
				echo "$variant $d oncpu $(echo "$sdc - $uc" | bc -l)" >>"$f"
				echo "$variant $d floor $fl" >>"$f"
				echo "$variant $d untraced $u" >>"$f"
				echo "$variant $d untracedcpu $uc" >>"$f"
				echo "$variant $d xoffcpu $(echo "$s0c / $uc" | bc -l)" >>"$f"
				echo "$variant $d xoncpu $(echo "$sdc / $uc" | bc -l)" >>"$f"
				if [ -n "$HEAPTRACK" ]; then
					read -r mu muc < <("$prog" malloc "$d" "$PAIRS" | ns_cpu)
					read -r ht htc < <("$HEAPTRACK" -o "$TMP/ht" "$prog" malloc "$d" "$PAIRS" 2>/dev/null | ns_cpu)
					rm -f "$TMP"/ht*
					echo "$variant $d heaptrack $(echo "$ht - $mu" | bc -l)" >>"$f"
					echo "$variant $d heaptrackcpu $(echo "$htc - $muc" | bc -l)" >>"$f"
					echo "$variant $d vshtcpu $(echo "($sdc - $uc) / ($htc - $muc)" | bc -l)" >>"$f"
				fi
			done
		done
		echo "hook: round $round of $ROUNDS done" >&2
	done
	{
		machine
		echo "hook cost: ns per alloc+free pair (cuMemAlloc_v2+cuMemFree_v2 on the simulated driver;"
		echo "heaptrack: malloc+free), median [min..max] of $ROUNDS interleaved rounds of $PAIRS pairs;"
		echo "'added' = traced minus untraced of the same round; floor = 2 unw_backtrace per pair"
		printf "%-6s %5s | %-16s | %-18s | %-18s | %-18s | %-16s | %7s %7s\n" build depth untraced \
			"added, stacks off" "added, stacks on" "heaptrack added" "unw floor" ours/ht ours/flr
		for variant in fp nofp; do
			for d in 8 32 64; do
				row=()
				for k in untraced off on heaptrack floor; do
					read -r m lo hi < <(awk -v v="$variant" -v d="$d" -v k="$k" \
						'$1==v && $2==d && $3==k {print $4}' "$f" | stats)
					row+=("$m [$lo..$hi]")
					eval "med_$k=$m"
				done
				r1=$( [ "$med_heaptrack" != - ] && echo "scale=2; $med_on / $med_heaptrack" | bc -l || echo -)
				r2=$(echo "scale=2; $med_on / $med_floor" | bc -l)
				printf "%-6s %5s | %-16s | %-18s | %-18s | %-18s | %-16s | %7s %7s\n" "$variant" "$d" \
					"${row[0]}" "${row[1]}" "${row[2]}" "${row[3]}" "${row[4]}" "$r1" "$r2"
			done
		done
		echo
		echo "the same rounds, CPU time of the calling thread (not counting time spent waiting"
		echo "for a CPU that other jobs hold, nor the flush thread's or heaptrack_interpret's):"
		echo "ns per pair; x = traced / untraced and ours / heaptrack, each the median of the"
		echo "rounds' own ratios (a ratio within one round: the load moves both sides alike)"
		printf "%-6s %5s | %-16s | %-18s | %-18s | %-18s | %-16s | %-16s | %-16s\n" build depth \
			"untraced cpu" "added cpu, off" "added cpu, on" "heaptrack added" "x untr., off" \
			"x untr., on" "ours/heaptrack"
		for variant in fp nofp; do
			for d in 8 32 64; do
				row=()
				for k in untracedcpu offcpu oncpu heaptrackcpu xoffcpu xoncpu vshtcpu; do
					fmt=%.0f
					case $k in x* | vs*) fmt=%.2f ;; esac
					read -r m lo hi < <(awk -v v="$variant" -v d="$d" -v k="$k" \
						'$1==v && $2==d && $3==k {print $4}' "$f" | stats $fmt)
					row+=("$m [$lo..$hi]")
				done
				printf "%-6s %5s | %-16s | %-18s | %-18s | %-18s | %-16s | %-16s | %-16s\n" "$variant" "$d" \
					"${row[0]}" "${row[1]}" "${row[2]}" "${row[3]}" "${row[4]}" "${row[5]}" "${row[6]}"
			done
		done
	} | tee "$RESULTS/hook.txt"
}

# One throughput row: LABEL THREADS [PREFIX...]: the untraced and the traced
# run of threads THREADS M (4M events in all), each under PREFIX (taskset).
throughput_row() {
	local label=$1 t=$2
	shift 2
	local m=$((4000000 / 2 / t)) t0 t1 t2 urun run line ev lost
	t0=$(date +%s.%N)
	urun=$(THREADS_RUN_TIME=1 "$@" "$BUILD/tests/progs/threads" "$t" "$m" | sed -n 's/.*run_s=\([0-9.]*\).*/\1/p')
	t1=$(date +%s.%N)
	run=$(traced "$TMP/t.gmt" THREADS_RUN_TIME=1 -- "$@" "$BUILD/tests/progs/threads" "$t" "$m" |
		sed -n 's/.*run_s=\([0-9.]*\).*/\1/p')
	t2=$(date +%s.%N)
	line=$("$CLI" summary "$TMP/t.gmt" | grep -m1 ' events, ') ||
		{ echo "bench: summary of the $label-thread trace failed" >&2; return; }
	ev=$(echo "$line" | sed 's/.* \([0-9]*\) events, .*/\1/')
	lost=$(echo "$line" | sed 's/.* events, \([0-9]*\) lost.*/\1/')
	printf "%16s %10d %12.3f %10.3f %14.0f %8.3f %8.3f %14.0f %6s\n" "$label" "$ev" \
		"$(echo "$t2 - $t1" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" \
		"$(echo "$ev / ($t2 - $t1)" | bc -l)" "$run" "$urun" \
		"$(echo "$((2 * t * m)) / $run" | bc -l)" "$lost"
}

part_throughput() {
	{
		machine
		echo "throughput: tests/progs/threads T M (cudaMalloc+cudaFree of 4 KiB, simulated runtime),"
		echo "default settings (stacks on, depth 64); events/s = 2*T*M / wall time of the traced process;"
		echo "sustained = 2*T*M / the calls' own wall time (run_s: first thread started to last joined,"
		echo "without the process's start-up and exit, where the trace is symbolized and closed)"
		echo "no books = the simulated driver with SIMCUDA_BOOKS=0 (no lock, no tables: the tracer's"
		echo "capacity); books = the full simulated driver, whose one lock the threads pass between CPUs"
		printf "%16s %10s %12s %10s %14s %8s %8s %14s %6s\n" threads events wall_s untraced_s events/s \
			run_s u_run_s sustained lost
		for t in 1 2 8 16; do
			throughput_row "$t, no books" "$t" env SIMCUDA_BOOKS=0
		done
		for t in 1 2 8 16; do
			throughput_row "$t, books" "$t"
		done
		# The driver's one mutex moves between CPUs on each call: on two CPUs
		# the untraced program itself runs ~3x slower than on one. This row
		# runs everything, flush thread included, on one CPU.
		if command -v taskset >/dev/null; then
			throughput_row "8, books, 1 CPU" 8 taskset -c 0
		fi
	} | tee "$RESULTS/throughput.txt"
}

part_size() {
	local n=2000000
	{
		machine
		echo "trace size: bench/workload (256 stacks, 16 B..16 MiB, mixed lifetimes), $n calls"
		traced "$TMP/w.gmt" -- "$B/workload" cuda "$n" >/dev/null
		ev=$("$CLI" summary "$TMP/w.gmt" | grep -m1 ' events, ' | sed 's/.* \([0-9]*\) events, .*/\1/')
		sz=$(stat -c %s "$TMP/w.gmt")
		printf "gpumemtrace: %d events, %d bytes, %.2f bytes/event\n" "$ev" "$sz" "$(echo "$sz / $ev" | bc -l)"
		if [ -n "$HEAPTRACK" ]; then
			"$HEAPTRACK" -o "$TMP/hw" "$B/workload" malloc "$n" >/dev/null 2>&1
			sz=$(stat -c %s "$TMP"/hw.*)
			printf "heaptrack:   %d calls, %d bytes (%s), %.2f bytes/call\n" "$n" "$sz" \
				"$(basename "$TMP"/hw.* | sed 's/^hw//')" "$(echo "$sz / $n" | bc -l)"
		fi
	} | tee "$RESULTS/size.txt"
}

# peak RSS (KiB) and wall seconds of a command, from GNU time
measure() {
	/usr/bin/time -f "%e %M" -o "$TMP/time" "$@" >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; return 1; }
	cat "$TMP/time"
}

part_reader() {
	local n=$READER_EVENTS
	{
		machine
		echo "reader: a trace of bench/workload with $n calls, read by 'gpumemtrace summary';"
		echo "heaptrack_print on heaptrack's trace of the same workload (malloc); /usr/bin/time;"
		echo "READER_ROUNDS=$READER_ROUNDS rounds, each reading both traces, one after the other"
		traced "$TMP/r.gmt" -- "$B/workload" cuda "$n" >/dev/null
		local have_ht=0 ratios=() r s kb hs hkb
		if [ -n "$HEAPTRACK" ] && [ -n "$HEAPTRACK_PRINT" ]; then
			"$HEAPTRACK" -o "$TMP/hr" "$B/workload" malloc "$n" >/dev/null 2>&1 && have_ht=1
		fi
		for ((r = 1; r <= READER_ROUNDS; r++)); do
			read -r s kb < <(measure "$CLI" summary "$TMP/r.gmt")
			printf "round %d: gpumemtrace summary: %d events in %.2f s = %.2fM events/s, peak RSS %d MiB (trace %d MiB)\n" \
				"$r" "$n" "$s" "$(echo "$n / $s / 1000000" | bc -l)" $((kb / 1024)) \
				$(($(stat -c %s "$TMP/r.gmt") >> 20))
			[ $have_ht = 1 ] || continue
			read -r hs hkb < <(measure "$HEAPTRACK_PRINT" "$TMP"/hr.*)
			printf "round %d: heaptrack_print:     %d calls in %.2f s = %.2fM calls/s, peak RSS %d MiB; ratio %.2fx\n" \
				"$r" "$n" "$hs" "$(echo "$n / $hs / 1000000" | bc -l)" $((hkb / 1024)) \
				"$(echo "$hs / $s" | bc -l)"
			ratios+=("$(echo "$hs / $s" | bc -l)")
		done
		if [ ${#ratios[@]} -gt 0 ]; then
			printf "ratio (summary events/s over heaptrack_print calls/s), median of %d rounds: %.2fx\n" \
				${#ratios[@]} "$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')"
		fi
		rm -f "$TMP/r.gmt" "$TMP"/hr.*
	} | tee "$RESULTS/reader.txt"
}

part_rss() {
	local sizes=${RSS_EVENTS:-1000000 20000000} n c
	local cmds=(dump summary "summary --json" explain top growth fragmentation oom leaks
		"check --max-peak 1TiB" accounting "plot -o $TMP/o.svg" "flamegraph -o $TMP/o.svg"
		"flamegraph --folded" "export --format perfetto -o $TMP/o.pftrace" "export --format chrome-json -o $TMP/o.json"
		"export --format csv -o $TMP/o.csv" "export --format pprof -o $TMP/o.pb.gz")
	{
		machine
		echo "rss: peak RSS (MiB, GNU time) of each command on a trace of bench/workload with N"
		echo "calls (a live set of at most 4096 allocations, 256 stacks); diff reads the trace twice"
		printf "%-36s" command
		for n in $sizes; do printf " %12s" "$n"; done
		echo
		for n in $sizes; do
			traced "$TMP/rss.$n.gmt" -- "$B/workload" cuda "$n" >/dev/null
		done
		for c in "${cmds[@]}" diff; do
			printf "%-36s" "${c%% -o *}"
			for n in $sizes; do
				local args=("$TMP/rss.$n.gmt")
				[ "$c" = diff ] && args+=("$TMP/rss.$n.gmt")
				read -r s kb < <(measure "$CLI" $c "${args[@]}") || kb=0
				printf " %12s" "$((kb / 1024)) MiB"
			done
			echo
		done
		rm -f "$TMP"/rss.*.gmt "$TMP"/o.*
	} | tee "$RESULTS/rss.txt"
}

cpu_of() { # cpu_of CMD...: user+system seconds
	/usr/bin/time -f "%U %S" -o "$TMP/time" "$@" >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; return 1; }
	awk '{print $1 + $2}' "$TMP/time"
}

part_exports() {
	local n=${EXPORT_EVENTS:-1000000} f r c s
	local formats=(perfetto chrome-json csv pprof)
	{
		machine
		echo "exports: a trace of bench/workload with $n calls (a live set of at most 4096"
		echo "allocations, 256 stacks); CPU (user+system, GNU time) per event, to /dev/null and"
		echo "to a file in $TMP; bytes of the output per event; median of ROUNDS=$ROUNDS;"
		echo "summary's CPU on the same trace in the same rounds is the anchor"
		traced "$TMP/x.gmt" -- "$B/workload" cuda "$n" >/dev/null
		local ev
		ev=$("$CLI" summary "$TMP/x.gmt" | sed -n 's/.* \([0-9]*\) events, .*/\1/p')
		printf "trace: %d events, %.1f bytes per event\n" "$ev" "$(echo "$(stat -c %s "$TMP/x.gmt") / $ev" | bc -l)"
		med() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
		local sums=()
		for ((r = 1; r <= ROUNDS; r++)); do sums+=("$(cpu_of "$CLI" summary "$TMP/x.gmt")"); done
		s=$(printf '%s\n' "${sums[@]}" | med)
		printf "%-12s %10s %10s %10s %12s\n" format "us/event" "to a file" "x summary" "bytes/event"
		printf "%-12s %10.3f %10s %10s %12s\n" summary "$(echo "$s * 1000000 / $ev" | bc -l)" - 1.00 -
		for f in "${formats[@]}"; do
			local nul=() fil=()
			for ((r = 1; r <= ROUNDS; r++)); do
				nul+=("$(cpu_of "$CLI" export --format "$f" "$TMP/x.gmt" -o /dev/null)")
				fil+=("$(cpu_of "$CLI" export --format "$f" "$TMP/x.gmt" -o "$TMP/o.$f")")
			done
			c=$(printf '%s\n' "${nul[@]}" | med)
			local cf
			cf=$(printf '%s\n' "${fil[@]}" | med)
			printf "%-12s %10.3f %10.3f %10.2f %12.1f\n" "$f" "$(echo "$c * 1000000 / $ev" | bc -l)" \
				"$(echo "$cf * 1000000 / $ev" | bc -l)" "$(echo "$c / $s" | bc -l)" \
				"$(echo "$(stat -c %s "$TMP/o.$f") / $ev" | bc -l)"
			rm -f "$TMP/o.$f"
		done
		rm -f "$TMP/x.gmt"
	} | tee "$RESULTS/exports.txt"
}

command -v bc >/dev/null || { echo "bench: needs bc"; exit 2; }
parts=${*:-hook throughput size reader rss exports}
for p in $parts; do
	case $p in
	hook | throughput | size | reader | rss | exports) "part_$p" ;;
	*) echo "bench: unknown part '$p' (hook throughput size reader rss exports)"; exit 2 ;;
	esac
done
