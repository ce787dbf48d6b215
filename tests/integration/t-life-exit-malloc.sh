#!/usr/bin/env bash
# exit() from a SIGTERM handler that interrupted malloc (issue 29: "exit
# writes records and the trailer only: no malloc"). exitmalloc holds the
# allocator from inside its own malloc, as glibc's arena lock is held by a
# thread a signal interrupted there, and its handler calls exit(3): any
# other thread's allocator call then waits for good. The final flush must
# need none. Before: the sampler's join at exit waited for ever (the
# thread's end frees its buffers), and the flush thread freed a dead
# thread's ring, interned stacks with calloc and grew zstd's buffers with
# realloc (hung: killed at 60 s). Nothing timed: the timeout bounds a hang.
source "$(dirname "$0")/lib.sh"
[[ ${SANITIZE:-} == *address* ]] && skip "exitmalloc replaces the allocator: not under ASan"
P=$PROG_DIR/exitmalloc
run() { # name env... : one run, its trace checked
	local name=$1 rc=0
	shift
	mkdir "$name"
	(cd "$name" && timeout 60 env "$@" LD_PRELOAD="$preload" LD_LIBRARY_PATH="$SIM_DIR:$PROG_DIR" \
		"$P" 100 >out.txt 2>err.txt) || rc=$?
	expect_eq "$name: exit status (untraced 3; 124: hung)" $rc 3
	expect_eq "$name: output" "$(cat "$name/out.txt")" "pairs=110"
	local t=("$name"/gpumemtrace.*.gmt)
	[ ${#t[@]} -eq 1 ] && [ -f "${t[0]}" ] || fail "$name: expected one trace, found: ${t[*]}"
	"$GMT_CLI" summary --json "${t[0]}" >"$name/s.json" 2>"$name/s.err" || fail "$name: summary: $(cat "$name/s.err")"
	expect_eq "$name: complete" "$(json "$name/s.json" 'd["complete"]')" True
	expect_eq "$name: cudaMalloc calls" "$(json "$name/s.json" 'd["calls"]["cudaMalloc"]["count"]')" 110
	expect_eq "$name: lost" "$(json "$name/s.json" 'd["lost_events"]')" 0
}
# Everything at the final flush: the dead thread's ring, the stacks, the
# first compressed chunk (FLUSH_MS at its most: no cycle before the exit).
run final GPUMEMTRACE_FLUSH_MS=60000
run default
run nostacks GPUMEMTRACE_FLUSH_MS=60000 GPUMEMTRACE_STACK_DEPTH=0
run uncompressed GPUMEMTRACE_FLUSH_MS=60000 GPUMEMTRACE_COMPRESS=0
echo ok
